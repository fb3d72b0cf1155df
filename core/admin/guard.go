package admin

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// The admin paths hand out everything the server holds (a backup has every
// event and repository, private ones included) and a repair writes, so a
// loopback peer is not enough (audit 2026-11b, F24): a DNS-rebinding page
// in a browser on the server's host, a reverse proxy on the host forwarding
// to the metrics port, or any local user is one. Guard lets a request
// through only when
//
//   - its peer is on loopback (an operator may open metrics.listen to a
//     Prometheus host, which must not get the admin commands with it);
//   - it carries no Origin header: browsers send one on every cross-origin
//     request and on every POST, and the grasp CLI never does;
//   - its Host names this listener by an address (loopback, the listener's
//     own IP, or localhost) and its port: a rebound name does not;
//   - it carries the admin token, which only the service user (and root)
//     can read from the token file.
//
// Every refusal and every failed admin command is logged at warn.

// TokenHeader carries the admin token: "Authorization: Bearer <token>".
const TokenHeader = "Authorization"

// Guard protects the admin paths of the metrics listener.
type Guard struct {
	// Token is the admin token (EnsureToken).
	Token string
	// Addr is the listener's bound address: its port is the one a Host
	// must name.
	Addr net.Addr
	// TokenFile is named in the refusal, so the operator knows where the
	// CLI reads the token.
	TokenFile string
	Log       hclog.Logger
}

// Wrap serves h to requests that pass every check above.
func (g Guard) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, why := g.refuse(r)
		if code != 0 {
			g.log().Warn("admin request refused", "path", r.URL.Path, "peer", r.RemoteAddr, "host", r.Host,
				"origin", r.Header.Get("Origin"), "reason", why)
			http.Error(w, why, code)
			return
		}
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		switch {
		case sw.err != nil:
			g.log().Warn("admin command failed", "path", r.URL.Path, "method", r.Method, "error", sw.err)
		case sw.code >= 400:
			g.log().Warn("admin command failed", "path", r.URL.Path, "method", r.Method, "status", sw.code,
				"error", strings.TrimSpace(sw.body.String()))
		}
	})
}

func (g Guard) log() hclog.Logger {
	if g.Log == nil {
		return hclog.NewNullLogger()
	}
	return g.Log
}

// refuse says why r may not run an admin command (0 when it may).
func (g Guard) refuse(r *http.Request) (int, string) {
	if !g.local(r.RemoteAddr) {
		return http.StatusForbidden, "admin commands are served to loopback clients only"
	}
	if r.Header.Get("Origin") != "" {
		return http.StatusForbidden, "admin commands are not served to web pages (the request has an Origin)"
	}
	if !g.ownHost(r.Host) {
		return http.StatusForbidden, fmt.Sprintf("admin commands are served to requests naming this listener by its address, not %q", r.Host)
	}
	got, ok := strings.CutPrefix(r.Header.Get(TokenHeader), "Bearer ")
	if !ok || g.Token == "" || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(g.Token)) != 1 {
		return http.StatusUnauthorized, fmt.Sprintf("admin commands need the admin token (%s, readable by the service user; grasp admin sends it)", g.TokenFile)
	}
	return 0, ""
}

// local reports whether the peer is this machine: a loopback address, or
// the listener's own address when it listens on one interface (the CLI
// then dials that address and comes from it).
func (g Guard) local(peer string) bool {
	ap, err := netip.ParseAddrPort(peer)
	if err != nil {
		return false
	}
	a := ap.Addr().Unmap()
	if a.IsLoopback() {
		return true
	}
	bound, err := netip.ParseAddrPort(g.addr())
	return err == nil && !bound.Addr().IsUnspecified() && bound.Addr().Unmap() == a
}

func (g Guard) addr() string {
	if g.Addr == nil {
		return ""
	}
	return g.Addr.String()
}

// ownHost reports whether the Host header names this listener: its port,
// and localhost, a loopback address or the listener's own IP.
func (g Guard) ownHost(hostport string) bool {
	h, p, err := net.SplitHostPort(hostport)
	if err != nil || g.Addr == nil {
		return false
	}
	_, own, err := net.SplitHostPort(g.Addr.String())
	if err != nil || p != own {
		return false
	}
	if strings.EqualFold(h, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(h)
	if err != nil {
		return false
	}
	if a.Unmap().IsLoopback() {
		return true
	}
	bound, err := netip.ParseAddrPort(g.Addr.String())
	return err == nil && bound.Addr().Unmap() == a.Unmap()
}

// statusWriter keeps the status and the start of an error body for the
// failure log; noteFailure records a failure after the status was sent.
type statusWriter struct {
	http.ResponseWriter
	code int
	body strings.Builder
	err  error
}

func (s *statusWriter) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	if s.code >= 400 && s.body.Len() < 512 {
		s.body.Write(b[:min(len(b), 512-s.body.Len())])
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// noteFailure records err for the failure log of Guard.Wrap, for a handler
// whose status went out before it failed (a backup stream).
func noteFailure(w http.ResponseWriter, err error) {
	for {
		if s, ok := w.(*statusWriter); ok {
			s.err = err
			return
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return
		}
		w = u.Unwrap()
	}
}

// EnsureToken returns the admin token in path, creating the file (mode
// 0600, 256 random bits) when it is missing. A file that others than its
// owner may read is refused: its token may be known.
func EnsureToken(path string) (string, error) {
	tok, err := ReadToken(path)
	if err == nil {
		return tok, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	tok = hex.EncodeToString(b)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	// Written whole under another name and linked into place, so a crash
	// leaves no empty token file and two starts agree on one token.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".admin-token-*")
	if err != nil {
		return "", fmt.Errorf("create the admin token: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(tok + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o600)
	}
	if err == nil {
		err = os.Link(tmp.Name(), path)
	}
	if errors.Is(err, fs.ErrExist) {
		return ReadToken(path)
	}
	if err != nil {
		return "", fmt.Errorf("create the admin token %s: %w", path, err)
	}
	return tok, nil
}

// ReadToken reads the admin token from path, refusing a file that its
// owner's group or others may read.
func ReadToken(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return "", fmt.Errorf("cannot read the admin token %s: run grasp admin as the service user (sudo -u grasp grasp admin ...) or as root", path)
		}
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("the admin token %s may be read by others (mode %04o): chmod 600 it, or delete it and restart grasp for a new one", path, st.Mode().Perm())
	}
	b := make([]byte, 256)
	n, _ := f.Read(b)
	tok := strings.TrimSpace(string(b[:n]))
	if len(tok) < 32 {
		return "", fmt.Errorf("the admin token %s is shorter than 32 characters: delete it and restart grasp for a new one", path)
	}
	return tok, nil
}

// Dial is the address the CLI reaches the listener on: listen itself, or
// loopback when listen names every interface (":7335", "0.0.0.0:7335").
func Dial(listen string) string {
	h, p, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if a, err := netip.ParseAddr(h); h == "" || err == nil && a.IsUnspecified() {
		if err == nil && a.Is6() {
			return net.JoinHostPort("::1", p)
		}
		return net.JoinHostPort("127.0.0.1", p)
	}
	return listen
}
