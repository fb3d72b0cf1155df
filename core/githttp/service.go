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
	"github.com/grasp-dev/grasp/core/outcome"
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
			return nil, nil, nil, nil, outcome.Errorf(outcome.Invalid, "gzip request body: %w", err)
		}
		closer = func() { _ = zr.Close() }
		lim.r = zr
		lim.tighten(h.opts.MaxGzipBytes, "a decompressed request body may hold "+sizeText(h.opts.MaxGzipBytes))
	default:
		return nil, nil, nil, nil, outcome.Errorf(outcome.Invalid, "unsupported Content-Encoding %q", enc)
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
// gzip of the (already compressed) pack, and no tiny flushes (see stream).
// The status is written only once git has produced output, so failures
// before that still get a proper status.
func (h *handler) runService(w http.ResponseWriter, r *http.Request, spec runSpec) runResult {
	var res runResult
	proc, err := h.startService(spec)
	if err != nil {
		res.err = err
		http.Error(w, "error: could not start git", http.StatusInternalServerError)
		return res
	}
	// The deadlines are armed before any byte moves, so a client that
	// sends or reads nothing at all is bounded too.
	defer h.boundDuration(proc, spec)()
	copied := feedBody(proc, spec.body)
	buf := make([]byte, 64<<10)
	n, in, rerr := firstOutput(proc, copied, buf)
	if n > 0 {
		h.streamAnswer(w, spec, proc.Stdout, buf, n, &res)
	} else if rerr != nil && rerr != io.EOF {
		res.err = fmt.Errorf("%s: read output: %w", spec.svc, rerr)
	}
	// git and its hooks are gone once Wait returns: the gate has read to
	// the end of what they said.
	waitErr := proc.Wait()
	res.stderr = proc.Stderr()
	if in == nil {
		// The copy result is there whenever git stopped because of its
		// input; if git exited first, the copy may still be blocked on the
		// client.
		in = &copyResult{}
		select {
		case *in = <-copied:
		default:
		}
	}
	res.in = in.n
	if waitErr != nil && res.err == nil {
		res.err = fmt.Errorf("%s exited: %w: %s", spec.svc, waitErr, git.Clip(res.stderr, 300))
	}
	if !res.started {
		h.answerUnstarted(w, spec, in.err, waitErr, &res)
	}
	return res
}

// startService starts the git process of spec (core/git runs it).
func (h *handler) startService(spec runSpec) (*git.Process, error) {
	var gate git.Gate
	if spec.gate != nil { // a nil *pushGate must not become a non-nil Gate
		gate = spec.gate
	}
	return h.repos.StartService(git.ServiceSpec{
		Service: spec.svc, Dir: spec.dir, Advertise: spec.advertise, Env: spec.env, Body: spec.body != nil,
		PackWindowMemory: h.opts.PackWindowMemory, PackThreads: h.opts.PackThreads,
		Gate: gate, Clock: h.clk,
	})
}

// boundDuration arms the request's deadlines and returns what disarms
// them. A request that outlives its maximum duration first loses its
// input: git then fails on a truncated request exactly as when a client
// disconnects, and its quarantine removes the partial objects. Signalling
// receive-pack instead leaks the quarantine, because its index-pack child
// keeps writing into it. Only if git still runs after a grace period
// (stuck writing to a client that does not read) is its whole process
// group sent SIGTERM, never SIGKILL.
func (h *handler) boundDuration(proc *git.Process, spec runSpec) (disarm func()) {
	maxDuration := spec.maxDuration
	if maxDuration <= 0 {
		maxDuration = h.opts.MaxDuration
	}
	stopInput := h.clk.AfterFunc(maxDuration, func() {
		if proc.Stdin != nil {
			_ = proc.Stdin.Close()
		}
	})
	terminate := h.clk.AfterFunc(maxDuration+killGrace, proc.Terminate)
	return func() {
		terminate.Stop()
		stopInput.Stop()
	}
}

// feedBody copies the request body into git's stdin, when it takes one.
// The result is sent before stdin is closed (firstOutput relies on it). A
// failed read (client gone, body too large) closes stdin too, so git sees
// a truncated request and fails on its own, cleaning up.
func feedBody(proc *git.Process, body io.Reader) <-chan copyResult {
	copied := make(chan copyResult, 1)
	if proc.Stdin != nil {
		go func() {
			n, err := io.Copy(proc.Stdin, body)
			copied <- copyResult{n: n, err: err}
			_ = proc.Stdin.Close()
		}()
	}
	return copied
}

// firstOutput waits for git's first output into buf, n bytes of it. A
// request body we cut (size, quota, rate) is known by then, because the
// copy reports before it closes git's input: git's answer to the
// truncated body is then dropped (n is 0), so the client hears our reason,
// not git's "early EOF". in is the copy's result when it is known already.
func firstOutput(proc *git.Process, copied <-chan copyResult, buf []byte) (n int, in *copyResult, rerr error) {
	n, rerr = io.ReadAtLeast(proc.Stdout, buf, 1)
	if n == 0 || proc.Stdin == nil {
		return n, nil, rerr
	}
	select {
	case c := <-copied:
		in = &c
	default:
		return n, nil, rerr
	}
	if cutByUs(in.err) {
		_, _ = io.Copy(io.Discard, proc.Stdout)
		n = 0
	}
	return n, in, rerr
}

// streamAnswer writes the status, the preamble, the n bytes of git's
// output already in buf and the rest as git writes it.
func (h *handler) streamAnswer(w http.ResponseWriter, spec runSpec, stdout io.ReadCloser, buf []byte, n int, res *runResult) {
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
}

// answerUnstarted answers a request git wrote nothing for, with a status
// that says why: a body we cut (inErr), a corrupt one, git's failure
// (waitErr), or nothing to say.
func (h *handler) answerUnstarted(w http.ResponseWriter, spec runSpec, inErr, waitErr error, res *runResult) {
	switch {
	case errors.Is(inErr, errBodyTooLarge):
		res.err = fmt.Errorf("%s: %w", spec.svc, inErr)
		h.refuse(w, spec, http.StatusRequestEntityTooLarge, "error: request body exceeds the server's size limit ("+strings.TrimPrefix(inErr.Error(), errBodyTooLarge.Error()+": ")+")")
	case errors.As(inErr, new(*quotaError)):
		res.err = fmt.Errorf("%s: %w", spec.svc, inErr)
		h.m.refused.WithLabelValues("quota").Inc()
		h.refuse(w, spec, http.StatusRequestEntityTooLarge, inErr.Error())
	case errors.Is(inErr, errSlowBody):
		res.err = fmt.Errorf("%s: %w", spec.svc, inErr)
		h.refuse(w, spec, http.StatusRequestTimeout, slowBodyMsg(inErr))
	case inErr != nil && isGzipErr(inErr):
		res.err = fmt.Errorf("%s: %w", spec.svc, inErr)
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
		errPkt(contentType)(w, refused.status, refused.Error())
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
