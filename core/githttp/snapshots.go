package githttp

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/grasp-dev/grasp/core/nip34"
)

// Snapshots streams what the repository pages offer for download: an
// archive of a commit (tar.gz or zip, issue 26 part 4) and a file's raw
// bytes. Each is a git process in the handler's process slots, the same
// ones as clones (MaxProcesses, MaxProcessesPerIP, QueueWait), so a
// visitor downloading snapshots costs what one cloning does and is refused
// the same way; an archive is also bounded before git runs
// (MaxArchiveFiles, MaxArchiveBytes) and in time (MaxFetchDuration). The
// handler NewHandler returns implements it. Callers pass object ids they
// resolved themselves, never a visitor's revision.
type Snapshots interface {
	// ServeArchive streams the tree of commit (a commit or tag id) as
	// format ("tar.gz" or "zip"), every path under name/, as name.<format>.
	ServeArchive(w http.ResponseWriter, r *http.Request, repo nip34.RepoRef, commit, format, name string)
	// ServeBlob streams the blob blob, named name: as text/plain when it
	// is UTF-8 text, as the image it is for PNG, JPEG, GIF and WebP, else
	// as application/octet-stream; never as anything a browser runs. With
	// download it is an attachment.
	ServeBlob(w http.ResponseWriter, r *http.Request, repo nip34.RepoRef, blob, name string, download bool)
}

// ArchiveFormats are the formats ServeArchive makes.
var ArchiveFormats = []string{"tar.gz", "zip"}

// ServeArchive implements Snapshots.
func (h *handler) ServeArchive(w http.ResponseWriter, r *http.Request, repo nip34.RepoRef, commit, format, name string) {
	start := h.clk.Now()
	const kind = "snapshot"
	if !nip34.IsObjectID(commit) || (format != "tar.gz" && format != "zip") {
		http.Error(w, "invalid: a snapshot is of a commit, as tar.gz or zip", http.StatusNotFound)
		return
	}
	release, ok := h.streamSlot(w, r, kind, start)
	if !ok {
		return
	}
	defer release()
	// what git would write, before it writes it: a tree may name one blob
	// under any number of paths (a 121 KB push listed 45,000 of them)
	files, size, err := h.repos.TreeSize(r.Context(), repo, commit, h.opts.MaxArchiveFiles, h.opts.MaxFetchDuration)
	if err != nil {
		h.log.Warn("sizing a snapshot failed", "repo", repo.URLPath(), "error", err)
		http.Error(w, "error: the snapshot could not be made", http.StatusInternalServerError)
		h.finish(kind, start, runResult{err: err})
		return
	}
	if files > h.opts.MaxArchiveFiles || size > h.opts.MaxArchiveBytes {
		h.m.refused.WithLabelValues("too_large").Inc()
		held := fmt.Sprintf("%d files and %s", files, byteText(size))
		if files > h.opts.MaxArchiveFiles {
			held = fmt.Sprintf("more than %d files", h.opts.MaxArchiveFiles)
		}
		http.Error(w, fmt.Sprintf("invalid: a snapshot of this commit would hold %s; snapshots here hold at most %d files and %s: clone the repository instead",
			held, h.opts.MaxArchiveFiles, byteText(h.opts.MaxArchiveBytes)), http.StatusRequestEntityTooLarge)
		h.finish(kind, start, runResult{rejected: true})
		return
	}
	gitFormat := "zip"
	if format == "tar.gz" {
		gitFormat = "tar"
	}
	w.Header().Set("Content-Type", map[string]string{"tar.gz": "application/gzip", "zip": "application/zip"}[format])
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name + "." + format}))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r.Method == http.MethodHead {
		h.finish(kind, start, runResult{})
		return
	}
	out := &countWriter{w: w}
	var dst io.Writer = out
	var gz *gzip.Writer
	if format == "tar.gz" {
		gz = gzip.NewWriter(out)
		dst = gz
	}
	err = h.repos.Archive(r.Context(), repo, dst, gitFormat, name+"/", commit, h.opts.MaxFetchDuration)
	if err == nil && gz != nil {
		err = gz.Close()
	}
	h.finish(kind, start, runResult{out: out.n, err: clientGone(r, err)})
}

// ServeBlob implements Snapshots.
func (h *handler) ServeBlob(w http.ResponseWriter, r *http.Request, repo nip34.RepoRef, blob, name string, download bool) {
	start := h.clk.Now()
	const kind = "raw"
	if !nip34.IsObjectID(blob) {
		http.Error(w, "invalid: a raw file is named by its object id", http.StatusNotFound)
		return
	}
	release, ok := h.streamSlot(w, r, kind, start)
	if !ok {
		return
	}
	defer release()
	disposition := "inline"
	if download {
		disposition = "attachment"
	}
	out := &countWriter{w: w}
	// the type is chosen from the first bytes, once they are read
	typed := &typingWriter{w: out, header: func(head []byte) {
		w.Header().Set("Content-Type", rawType(head))
		w.Header().Set("Content-Disposition", mime.FormatMediaType(disposition, map[string]string{"filename": name}))
		w.Header().Set("X-Content-Type-Options", "nosniff")
		// a raw file is anyone's bytes: nothing in it may run or frame
		w.Header().Set("Content-Security-Policy", "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; sandbox")
	}}
	if r.Method == http.MethodHead {
		typed.header(nil)
		h.finish(kind, start, runResult{})
		return
	}
	err := h.repos.Blob(r.Context(), repo, typed, blob, h.opts.MaxFetchDuration)
	if err == nil {
		err = typed.Close()
	}
	h.finish(kind, start, runResult{out: out.n, err: clientGone(r, err)})
}

// streamSlot takes a process slot for a snapshot or raw file, answering
// the request itself (429 or 503) when there is none.
func (h *handler) streamSlot(w http.ResponseWriter, r *http.Request, kind string, start time.Time) (func(), bool) {
	release, refused := h.slots.acquire(r.Context(), h.clientIP(r))
	if refused != nil {
		h.m.refused.WithLabelValues(refused.reason).Inc()
		if refused.status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "60")
		}
		http.Error(w, refused.Error(), refused.status)
		h.finish(kind, start, runResult{rejected: true})
		return nil, false
	}
	return release, true
}

// clientGone turns the error of a client that left into none: nothing
// failed on the server.
func clientGone(r *http.Request, err error) error {
	if err != nil && r.Context().Err() != nil {
		return nil
	}
	return err
}

// byteText is n bytes for a person: in MiB from 1 MiB up.
func byteText(n int64) string {
	if n >= 1<<20 {
		return strconv.FormatInt(n>>20, 10) + " MiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// typingWriter holds the first bytes written until it has enough to tell
// their type, calls header with them, then passes everything on.
type typingWriter struct {
	w      io.Writer
	header func(head []byte)
	head   []byte
	done   bool
}

const sniffBytes = 512

func (t *typingWriter) Write(p []byte) (int, error) {
	if t.done {
		return t.w.Write(p)
	}
	t.head = append(t.head, p...)
	if len(t.head) < sniffBytes {
		return len(p), nil
	}
	return len(p), t.flush()
}

// Close passes on what is held (a file shorter than sniffBytes).
func (t *typingWriter) Close() error {
	if t.done {
		return nil
	}
	return t.flush()
}

func (t *typingWriter) flush() error {
	t.done = true
	t.header(t.head)
	_, err := t.w.Write(t.head)
	t.head = nil
	return err
}

// rawType is the Content-Type a raw file is served as: images a browser
// shows, UTF-8 text as plain text, anything else as bytes; never HTML,
// SVG or script, whatever the file holds.
func rawType(head []byte) string {
	switch t := http.DetectContentType(head); t {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return t
	}
	if bytes.IndexByte(head, 0) < 0 && validPrefix(head) {
		return "text/plain; charset=utf-8"
	}
	return "application/octet-stream"
}

// validPrefix is utf8.Valid, tolerating a character cut by the prefix.
func validPrefix(b []byte) bool {
	for i := 0; i < utf8.UTFMax && len(b) > 0; i++ {
		if utf8.Valid(b) {
			return true
		}
		b = b[:len(b)-1]
	}
	return utf8.Valid(b)
}
