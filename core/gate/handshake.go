package gate

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/fasthttp/websocket"
)

// serveWebsocket connects to the backend first, so that a backend refusal
// (khatru's RejectConnection answers 429) reaches the client as a plain HTTP
// answer, and only then upgrades the client.
func (g *Gate) serveWebsocket(w http.ResponseWriter, r *http.Request) {
	id := g.newConnID()
	bc, refusal, err := g.dialBackend(r, id)
	if err != nil {
		g.log.Warn("backend websocket handshake failed", "remote", r.RemoteAddr, "error", err)
		http.Error(w, "error: relay backend unavailable", http.StatusBadGateway)
		return
	}
	if refusal != nil {
		refusal.replay(w)
		return
	}
	cc, err := g.upgrader.Upgrade(w, r, nil)
	if err != nil {
		// The upgrader has already answered the client with the reason.
		bc.Close()
		return
	}
	newConn(g, id, r, cc, bc).start()
}

// dialBackend opens the in-memory websocket into the backend. A websocket
// client dials one end of a net.Pipe; the gate reads that client's handshake
// request from the other end only to learn its Sec-WebSocket-Key, then hands
// the backend a copy of the client's original request (same RemoteAddr and
// headers, plus ConnHeader) whose Hijack returns that other end. The backend
// thus sees the real client while answering our dialer's handshake.
func (g *Gate) dialBackend(r *http.Request, id string) (*websocket.Conn, *recorded, error) {
	near, far := net.Pipe()
	type result struct {
		conn *websocket.Conn
		err  error
	}
	done := make(chan result, 1)
	d := g.dialer
	d.NetDialContext = func(context.Context, string, string) (net.Conn, error) { return far, nil }
	go func() {
		c, _, err := d.Dial("ws://gate.internal/", nil)
		done <- result{c, err}
	}()
	fail := func(err error) (*websocket.Conn, *recorded, error) {
		near.Close()
		far.Close()
		<-done
		return nil, nil, err
	}

	br := bufio.NewReader(near)
	if err := near.SetReadDeadline(time.Now().Add(g.opts.WriteTimeout)); err != nil {
		return fail(fmt.Errorf("arm handshake deadline: %w", err))
	}
	dreq, err := http.ReadRequest(br)
	if err != nil {
		return fail(fmt.Errorf("read internal handshake: %w", err))
	}
	if err := near.SetReadDeadline(time.Time{}); err != nil {
		return fail(fmt.Errorf("clear handshake deadline: %w", err))
	}

	req := r.Clone(context.WithoutCancel(r.Context()))
	req.Header.Set("Sec-Websocket-Key", dreq.Header.Get("Sec-Websocket-Key"))
	req.Header.Set("Sec-Websocket-Version", "13")
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	// The dialer negotiates neither compression nor subprotocols.
	req.Header.Del("Sec-Websocket-Extensions")
	req.Header.Del("Sec-Websocket-Protocol")
	req.Header.Set(ConnHeader, id)

	rw := &backendWriter{conn: near, br: br, header: http.Header{}}
	g.backend.ServeHTTP(rw, req)
	if !rw.hijacked {
		near.Close()
		far.Close()
		<-done
		return nil, &rw.rec, nil
	}
	res := <-done
	if res.err != nil {
		near.Close()
		return nil, nil, fmt.Errorf("internal websocket dial: %w", res.err)
	}
	return res.conn, nil, nil
}

// backendWriter is the ResponseWriter the backend upgrades through. If the
// backend answers without hijacking, the answer is recorded for the client.
type backendWriter struct {
	conn     net.Conn
	br       *bufio.Reader
	header   http.Header
	hijacked bool
	rec      recorded
}

type recorded struct {
	status int
	header http.Header
	body   []byte
}

// maxRecordedBody bounds what a refusing backend may make us buffer.
const maxRecordedBody = 64 << 10

func (b *backendWriter) Header() http.Header { return b.header }

func (b *backendWriter) WriteHeader(status int) {
	if b.rec.status == 0 {
		b.rec.status = status
		b.rec.header = b.header.Clone()
	}
}

func (b *backendWriter) Write(p []byte) (int, error) {
	b.WriteHeader(http.StatusOK)
	if room := maxRecordedBody - len(b.rec.body); room > 0 {
		b.rec.body = append(b.rec.body, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (b *backendWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if b.hijacked {
		return nil, nil, errors.New("gate: connection already hijacked")
	}
	b.hijacked = true
	return b.conn, bufio.NewReadWriter(b.br, bufio.NewWriter(b.conn)), nil
}

func (r *recorded) replay(w http.ResponseWriter) {
	status := r.status
	if status == 0 {
		status = http.StatusOK
	}
	for k, vs := range r.header {
		w.Header()[k] = vs
	}
	w.WriteHeader(status)
	w.Write(r.body) //nolint:errcheck // the client is gone if this fails
}
