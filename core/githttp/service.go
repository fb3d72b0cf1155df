package githttp

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/grasp-dev/grasp/core/git"
)

var errBodyTooLarge = errors.New("request body too large")

// killGrace is how long git may keep running after its input was cut at
// MaxDuration before it is terminated.
const killGrace = 30 * time.Second

// limitReader fails with errBodyTooLarge once more than max bytes were
// read, instead of io.LimitReader's silent EOF that git would take for a
// truncated request. why names the bound for the client.
type limitReader struct {
	r    io.Reader
	max  int64
	read int64
	why  string
	// charge, when set, is told of every byte read; its error ends the
	// body (a quota: the text is for the client).
	charge func(n int64) error
}

// quotaError is a body cut by limitReader.charge.
type quotaError struct{ msg string }

func (q *quotaError) Error() string { return q.msg }

// unbounded is a limitReader's max when nothing bounds a body.
const unbounded = math.MaxInt64

func (l *limitReader) Read(p []byte) (int, error) {
	if l.read >= l.max {
		// Probe one byte: a body of exactly the limit is fine.
		var one [1]byte
		n, err := l.r.Read(one[:])
		if n > 0 {
			return 0, fmt.Errorf("%w: %s", errBodyTooLarge, l.why)
		}
		return 0, err
	}
	if int64(len(p)) > l.max-l.read {
		p = p[:l.max-l.read]
	}
	n, err := l.r.Read(p)
	l.read += int64(n)
	if n > 0 && l.charge != nil {
		if cerr := l.charge(int64(n)); cerr != nil {
			return 0, &quotaError{msg: cerr.Error()}
		}
	}
	return n, err
}

// tighten lowers the bound to max bytes of body in all, for why.
func (l *limitReader) tighten(max int64, why string) {
	if max < l.max {
		l.max, l.why = max, why
	}
}

// countReader counts bytes read (request bytes for metrics).
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// requestBody returns the request body bounded by max bytes (0 =
// unbounded), gzip-decoded when the client compressed it (git gzips large
// want lists; the decoded body is bounded by MaxGzipBytes too), and cut
// when it arrives slower than MinBodyBytes per BodyRateWindow. The bound
// is returned so the caller can tighten it once it knows more.
func (h *handler) requestBody(w http.ResponseWriter, r *http.Request, max int64, why string) (io.Reader, *countReader, *limitReader, func(), error) {
	rc := http.NewResponseController(w)
	// A read deadline in the past interrupts a Read blocked on a client
	// that sends nothing (wall time: it is the socket's deadline).
	abort := func() { _ = rc.SetReadDeadline(time.Now()) }
	wire := &countReader{r: newRateReader(r.Body, h.clk, h.opts.MinBodyBytes, h.opts.BodyRateWindow, abort)}
	lim := &limitReader{r: wire, max: unbounded}
	if max > 0 {
		lim.max, lim.why = max, why
	}
	closer := func() {}
	switch enc := r.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(wire)
		if err != nil {
			return nil, nil, nil, nil, fmt.Errorf("invalid: gzip request body: %w", err)
		}
		closer = func() { _ = zr.Close() }
		lim.r = zr
		lim.tighten(h.opts.MaxGzipBytes, "a decompressed request body may hold "+sizeText(h.opts.MaxGzipBytes))
	default:
		return nil, nil, nil, nil, fmt.Errorf("invalid: unsupported Content-Encoding %q", enc)
	}
	return lim, wire, lim, closer, nil
}

type runSpec struct {
	kind        string
	svc         string
	dir         string
	advertise   bool
	env         []string
	body        io.Reader // nil for advertisements
	preamble    []byte    // written before git's output (the "# service=" lines)
	contentType string
	maxDuration time.Duration
	// gate, for a push, answers its hooks (pushgate.go).
	gate *pushGate
	// refuse answers a request refused before git wrote anything, in a way
	// the git client shows (nil: a plain-text HTTP error with status).
	refuse func(w http.ResponseWriter, status int, msg string)
}

type runResult struct {
	in, out  int64
	started  bool // the response status was written
	rejected bool // refused by push authorisation
	err      error
	stderr   string
}

// runService runs one git service process with the request streamed into
// stdin and stdout streamed to the response: no buffering of either, no
// gzip of the (already compressed) pack, and no tiny flushes (see stream). The status is written only once git has
// produced output, so failures before that still get a proper status.
func (h *handler) runService(w http.ResponseWriter, r *http.Request, spec runSpec) runResult {
	var res runResult
	var gate git.Gate
	if spec.gate != nil {
		gate = spec.gate
	}
	proc, err := h.repos.StartService(git.ServiceSpec{
		Service: spec.svc, Dir: spec.dir, Advertise: spec.advertise, Env: spec.env, Body: spec.body != nil,
		PackWindowMemory: h.opts.PackWindowMemory, PackThreads: h.opts.PackThreads,
		Gate: gate, Clock: h.clk,
	})
	if err != nil {
		res.err = err
		http.Error(w, "error: could not start git", http.StatusInternalServerError)
		return res
	}
	stdin, stdout := proc.Stdin, proc.Stdout
	// A request that outlives MaxDuration first loses its input: git then
	// fails on a truncated request exactly as when a client disconnects, and
	// its quarantine removes the partial objects. Signalling receive-pack
	// instead leaks the quarantine, because its index-pack child keeps
	// writing into it. Only if git still runs after a grace period (stuck
	// writing to a client that does not read) is its whole process group
	// sent SIGTERM, never SIGKILL.
	maxDuration := spec.maxDuration
	if maxDuration <= 0 {
		maxDuration = h.opts.MaxDuration
	}
	stopInput := h.clk.AfterFunc(maxDuration, func() {
		if stdin != nil {
			_ = stdin.Close()
		}
	})
	defer stopInput.Stop()
	terminate := h.clk.AfterFunc(maxDuration+killGrace, proc.Terminate)
	defer terminate.Stop()

	copied := make(chan copyResult, 1)
	if stdin != nil {
		go func() {
			n, err := io.Copy(stdin, spec.body)
			copied <- copyResult{n: n, err: err}
			// A failed read (client gone, body too large) closes stdin, so git
			// sees a truncated request and fails on its own, cleaning up.
			_ = stdin.Close()
		}()
	}

	buf := make([]byte, 64<<10)
	n, rerr := io.ReadAtLeast(stdout, buf, 1)
	var in copyResult
	gotIn := false
	if n > 0 && stdin != nil {
		// The copy reports before it closes git's input, so a request we
		// cut (size, quota, rate) is known before git answers the truncated
		// body: the client hears our reason, not git's "early EOF".
		select {
		case in = <-copied:
			gotIn = true
		default:
		}
		if gotIn && cutByUs(in.err) {
			_, _ = io.Copy(io.Discard, stdout)
			n = 0
		}
	}
	if n > 0 {
		noCache(w)
		w.Header().Set("Content-Type", spec.contentType)
		w.WriteHeader(http.StatusOK)
		res.started = true
		cw := &countWriter{w: w}
		_, werr := cw.Write(spec.preamble)
		if werr == nil {
			_, werr = cw.Write(buf[:n])
		}
		if werr == nil {
			werr = h.stream(cw, w, stdout, buf)
		}
		res.out = cw.n
		if werr != nil {
			// The client went away: stop git (SIGPIPE on its next write).
			_ = stdout.Close()
			res.err = fmt.Errorf("%s: stream response: %w", spec.svc, werr)
		}
	} else if rerr != nil && rerr != io.EOF {
		res.err = fmt.Errorf("%s: read output: %w", spec.svc, rerr)
	}
	// git and its hooks are gone once Wait returns: the gate has read to
	// the end of what they said.
	waitErr := proc.Wait()
	res.stderr = proc.Stderr()
	// The copy result is there whenever git stopped because of its input;
	// if git exited first, the copy may still be blocked on the client.
	if !gotIn {
		select {
		case in = <-copied:
		default:
		}
	}
	res.in = in.n
	if waitErr != nil && res.err == nil {
		res.err = fmt.Errorf("%s exited: %w: %s", spec.svc, waitErr, git.Clip(res.stderr, 300))
	}
	if res.started {
		return res
	}
	// Nothing was written yet: answer with a status that says why.
	switch {
	case errors.Is(in.err, errBodyTooLarge):
		res.err = fmt.Errorf("%s: %w", spec.svc, in.err)
		h.refuse(w, spec, http.StatusRequestEntityTooLarge, "error: request body exceeds the server's size limit ("+strings.TrimPrefix(in.err.Error(), errBodyTooLarge.Error()+": ")+")")
	case errors.As(in.err, new(*quotaError)):
		res.err = fmt.Errorf("%s: %w", spec.svc, in.err)
		h.m.refused.WithLabelValues("quota").Inc()
		h.refuse(w, spec, http.StatusRequestEntityTooLarge, in.err.Error())
	case errors.Is(in.err, errSlowBody):
		res.err = fmt.Errorf("%s: %w", spec.svc, in.err)
		h.refuse(w, spec, http.StatusRequestTimeout, slowBodyMsg(in.err))
	case in.err != nil && isGzipErr(in.err):
		res.err = fmt.Errorf("%s: %w", spec.svc, in.err)
		http.Error(w, "invalid: corrupt gzip request body", http.StatusBadRequest)
	case waitErr != nil:
		// Protocol-level failure: a 200 with an ERR pkt-line is what git
		// clients print readably (ngit-grasp does the same).
		noCache(w)
		w.Header().Set("Content-Type", spec.contentType)
		w.WriteHeader(http.StatusOK)
		msg := firstLine(res.stderr)
		if msg == "" {
			msg = "git " + spec.svc[len("git-"):] + " failed"
		}
		_, _ = w.Write(pktLine("ERR error: " + msg + "\n"))
	default:
		// git succeeded with no output (e.g. a v0 fetch with no wants).
		noCache(w)
		w.Header().Set("Content-Type", spec.contentType)
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(spec.preamble)
	}
	return res
}

// cutByUs reports whether a request body ended because a limit of ours cut
// it.
func cutByUs(err error) bool {
	return errors.Is(err, errBodyTooLarge) || errors.Is(err, errSlowBody) || errors.As(err, new(*quotaError))
}

// refuse answers a request refused before git wrote anything.
func (h *handler) refuse(w http.ResponseWriter, spec runSpec, status int, msg string) {
	if spec.refuse != nil {
		spec.refuse(w, status, msg)
		return
	}
	http.Error(w, msg, status)
}

// sizeText spells a byte bound for a client: whole MiB when it is one,
// KiB otherwise.
func sizeText(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return strconv.FormatInt(n>>20, 10) + " MiB"
	}
	return strconv.FormatInt((n+1023)>>10, 10) + " KiB"
}

func slowBodyMsg(err error) string {
	return "error: " + err.Error() + "; the server cuts request bodies that stall"
}

// errPkt answers with a protocol-level error: a 200 with an ERR pkt-line is
// what git clients print readably ("remote error: ...").
func errPkt(contentType string) func(w http.ResponseWriter, status int, msg string) {
	return func(w http.ResponseWriter, _ int, msg string) {
		noCache(w)
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(pktLine("ERR " + git.OneLine(msg) + "\n"))
	}
}

type copyResult struct {
	n   int64
	err error
}

func isGzipErr(err error) bool {
	var corrupt flate.CorruptInputError
	return errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) || errors.As(err, &corrupt)
}

// flushEvery bounds how often a trickle of output is pushed to the client.
const flushEvery = time.Second

// stream copies git's output to the response in reads of up to 64 KiB,
// which net/http sends as they come (its own buffer is 4 KiB). It flushes
// only a short read (git is producing slowly: progress, keep-alives) and
// at most once per flushEvery, so a fast pack never meets a tiny flush
// while a long "counting objects" phase still reaches the client.
func (h *handler) stream(dst io.Writer, w http.ResponseWriter, src io.Reader, buf []byte) error {
	flusher, _ := w.(http.Flusher)
	last := h.clk.Now()
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			if _, err := dst.Write(buf[:n]); err != nil {
				return err
			}
			if flusher != nil && n < len(buf) && h.clk.Since(last) >= flushEvery {
				flusher.Flush()
				last = h.clk.Now()
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return fmt.Errorf("read git output: %w", rerr)
		}
	}
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func firstLine(s string) string {
	for _, l := range bytes.Split([]byte(s), []byte("\n")) {
		if t := bytes.TrimSpace(l); len(t) > 0 {
			return git.Clip(string(bytes.TrimPrefix(t, []byte("fatal: "))), 300)
		}
	}
	return ""
}

// serveUploadPack streams a fetch or clone.
func (h *handler) serveUploadPack(w http.ResponseWriter, r *http.Request, dir string) {
	start := h.clk.Now()
	const contentType = "application/x-git-upload-pack-result"
	// A want/have list is small next to the pack it asks for; bounded like
	// a decompressed one (audit F18e: a plain body was unbounded).
	body, wire, _, closeBody, err := h.requestBody(w, r, h.opts.MaxGzipBytes, "a fetch request may hold "+sizeText(h.opts.MaxGzipBytes))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		h.finish("fetch", start, runResult{err: err})
		return
	}
	defer closeBody()
	release, refused := h.slots.acquire(r.Context(), h.clientIP(r))
	if refused != nil {
		h.m.refused.WithLabelValues(refused.reason).Inc()
		errPkt(contentType)(w, refused.status, refused.msg)
		h.finish("fetch", start, runResult{rejected: true})
		return
	}
	defer release()
	env, _ := protocolEnv(r)
	sniff := &sniffer{max: 64 << 10}
	res := h.runService(w, r, runSpec{
		kind: "fetch", svc: svcUpload, dir: dir, env: env,
		body:        io.TeeReader(body, sniff),
		contentType: contentType,
		maxDuration: h.opts.MaxFetchDuration,
		refuse:      errPkt(contentType),
	})
	res.in = wire.n
	h.finish(sniff.kind(), start, res)
}

// sniffer keeps the start of an upload-pack request to tell an ls-refs, a
// clone (wants only) and a fetch (with haves) apart for metrics.
type sniffer struct {
	buf bytes.Buffer
	max int
}

func (s *sniffer) Write(p []byte) (int, error) {
	if room := s.max - s.buf.Len(); room > 0 {
		s.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (s *sniffer) kind() string {
	b := s.buf.Bytes()
	switch {
	case bytes.Contains(b, []byte("command=ls-refs")):
		return "ls"
	case bytes.Contains(b, []byte("have ")):
		return "fetch"
	default:
		return "clone"
	}
}
