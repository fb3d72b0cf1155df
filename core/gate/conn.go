package gate

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"
)

// conn is one client websocket. Two goroutines serve it while it idles: the
// reader (which also runs the negentropy server, so a NEG reply is queued
// before the next client message is read) and the writer (which also
// pings). EVENTs, REQ queries and COUNTs run on goroutines of their own, at
// most max_unanswered at once. Whichever ends first shuts all down. It keeps
// no reference to the upgrade request, so the HTTP server's buffers of that
// request are freed once the handler returns (measured: 8 KB per idle
// connection).
type conn struct {
	g        *Gate
	ws       *websocket.Conn
	out      *outQueue
	wbuf     []byte      // writeFrames' buffer, kept between batches; writer goroutine only
	remote   string      // the client's IP, for the pipeline
	peer     string      // the socket's peer address, for logs
	relayURL string      // what NIP-42 AUTH events must name
	ending   atomic.Bool // closing.go: close once the queue is sent

	ctx    context.Context
	cancel context.CancelFunc
	once   sync.Once
	slots  chan struct{} // in-flight EVENT/REQ/COUNT work
	// storedTurn is held by the one REQ of this connection whose stored
	// events are being queried and queued (serveStored).
	storedTurn chan struct{}

	lastSeen atomic.Int64 // clock time of the last client frame, UnixNano
	// held is set while the server holds the reader (serverHolds): it
	// reads nothing from the client meanwhile, so that silence is not
	// the client's.
	held atomic.Bool

	subsMu sync.Mutex
	subs   map[string]*subscription

	negMu sync.Mutex
	neg   map[string]*negSession

	authMu    sync.Mutex
	challenge string // NIP-42, sent once an answer asks for authentication
	authed    string // the authenticated pubkey, "" before AUTH
}

var readBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func newConn(g *Gate, remote string, r *http.Request, ws *websocket.Conn) *conn {
	c := &conn{
		g:          g,
		ws:         ws,
		out:        newOutQueue(g.lim.MaxPendingOutboundBytes, g.outBytes),
		remote:     remote,
		peer:       r.RemoteAddr,
		relayURL:   g.relayURL(r),
		slots:      make(chan struct{}, g.lim.MaxUnanswered),
		storedTurn: make(chan struct{}, 1),
		subs:       make(map[string]*subscription),
		neg:        make(map[string]*negSession),
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c
}

func (c *conn) start() {
	c.g.metrics.connections.Inc()
	c.g.metrics.connectionsTotal.Inc()
	c.touch()
	c.ws.SetReadLimit(int64(c.g.lim.MaxMessageBytes))
	c.ws.SetPongHandler(func(string) error { c.touch(); return nil })
	c.ws.SetPingHandler(func(data string) error {
		c.touch()
		err := c.ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(writeTimeout))
		if err != nil && !errors.Is(err, websocket.ErrCloseSent) {
			return err
		}
		return nil
	})
	c.challengeOnConnect()
	go c.write()
	go c.read()
}

func (c *conn) touch() { c.lastSeen.Store(c.g.clk.Now().UnixNano()) }

// serverHolds marks the reader as held by the server until the returned
// func is called: building a NEG-OPEN's set, waiting for a slot of
// max_unanswered or for max_inflight_event_bytes. The reader then reads
// no frame, not even the pong to the writer's ping, so the writer must not
// take that silence for a dead client (issue 27: a whole-store NEG-OPEN on
// PostgreSQL outlasted client_timeout and the connection was reset without
// a word). The client's silence counts again from the end of the hold.
func (c *conn) serverHolds() (release func()) {
	c.held.Store(true)
	return func() {
		c.touch() // before the flag drops, so the writer never sees the old time unheld
		c.held.Store(false)
	}
}

// shutdown ends the connection, once.
func (c *conn) shutdown(reason string) {
	c.once.Do(func() {
		c.g.log.Debug("connection closed", "remote", c.peer, "reason", reason)
		c.cancel()
		c.out.close()
		c.ws.Close()
		c.g.remove(c)
		c.closeSubscriptions()
		c.closeNegSessions()
		c.g.metrics.connections.Dec()
	})
}

// read serves the client's frames.
func (c *conn) read() {
	for {
		typ, rd, err := c.ws.NextReader()
		if err != nil {
			c.shutdown("client read: " + err.Error())
			return
		}
		c.touch()
		buf := readBuffers.Get().(*bytes.Buffer)
		buf.Reset()
		_, err = buf.ReadFrom(rd)
		if err != nil {
			if errors.Is(err, websocket.ErrReadLimit) {
				// The websocket library has already sent close 1009.
				c.g.metrics.limit("message_size")
			}
			c.shutdown("client read: " + err.Error())
			return
		}
		c.g.metrics.messagesIn.Inc()
		// handle decodes what it keeps, so the buffer is free afterwards;
		// one large message's buffer is not kept for idle connections.
		alive := c.handleSafely(typ, buf.Bytes())
		if buf.Cap() <= 64<<10 {
			readBuffers.Put(buf)
		}
		if !alive {
			return
		}
	}
}

// write sends queued frames and pings the client, dropping it once nothing
// has arrived from it for ClientTimeout (which also catches half-open TCP).
func (c *conn) write() {
	t := c.g.clk.NewTicker(c.g.lim.PingInterval.D())
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C():
			idle := c.g.clk.Since(time.Unix(0, c.lastSeen.Load()))
			if idle > c.g.lim.ClientTimeout.D() && !c.held.Load() {
				c.g.metrics.limit("client_timeout")
				c.shutdown("client timeout")
				return
			}
			if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeTimeout)); err != nil {
				c.shutdown("ping: " + err.Error())
				return
			}
		case <-c.out.wake:
			if !c.flush() {
				return
			}
			if c.ending.Load() {
				// an operator's order (closing.go): what was queued is
				// sent, then the connection ends
				c.shutdown("closed by the operator")
				return
			}
		}
	}
}

func (c *conn) flush() bool {
	for {
		batch := c.out.take()
		if len(batch) == 0 {
			return true
		}
		n, err := c.writeFrames(batch)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				c.slowReader()
				return false
			}
			c.shutdown("client write: " + err.Error())
			return false
		}
		c.g.metrics.messagesOut.Add(float64(len(batch)))
		c.out.release(batch, n)
	}
}

// maxCoalesced bounds the bytes of frames joined into one write.
const maxCoalesced = 256 << 10

// writeFrames sends the queued messages as websocket text frames, joined
// into one write(2) of up to maxCoalesced bytes instead of one write per
// message: with many subscriptions a broadcast queues several copies on a
// connection at once, and the write syscalls were most of the fan-out's
// CPU (issue 15 part 2, docs/benchmarks.md). It returns the payload bytes
// written.
//
// The frames bypass the websocket library's writer, which writes one
// message per call. That is safe because this goroutine is the only one
// writing data messages, permessage-deflate is not negotiated, a server's
// frames are not masked, and the control frames other goroutines send
// (pong, close) are each one Write call on the same net.Conn: Go's net and
// tls connections never interleave the bytes of two Write calls, so a
// control frame lands between two data frames, where RFC 6455 allows it.
func (c *conn) writeFrames(batch [][]byte) (int, error) {
	nc := c.ws.NetConn()
	buf := c.wbuf[:0]
	n := 0
	write := func() error {
		if len(buf) == 0 {
			return nil
		}
		if err := nc.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil {
			return err
		}
		_, err := nc.Write(buf)
		buf = buf[:0]
		return err
	}
	for _, f := range batch {
		if len(buf) > 0 && len(buf)+len(f)+10 > maxCoalesced {
			if err := write(); err != nil {
				return n, err
			}
		}
		buf = appendTextFrameHeader(buf, len(f))
		buf = append(buf, f...)
		n += len(f)
	}
	err := write()
	if cap(buf) <= maxCoalesced+64<<10 {
		c.wbuf = buf[:0] // a single huge frame is not kept
	}
	return n, err
}

// appendTextFrameHeader appends the header of one unfragmented, unmasked
// websocket text frame (RFC 6455 section 5.2) of n payload bytes.
func appendTextFrameHeader(b []byte, n int) []byte {
	const finText = 0x81
	switch {
	case n < 126:
		return append(b, finText, byte(n))
	case n <= 0xffff:
		return append(b, finText, 126, byte(n>>8), byte(n))
	default:
		return append(b, finText, 127, byte(uint64(n)>>56), byte(uint64(n)>>48), byte(uint64(n)>>40),
			byte(uint64(n)>>32), byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
}

// send queues a frame that cannot wait (a live event, an answer to the
// reader); a client whose queue is full is disconnected as a slow reader.
func (c *conn) send(b []byte) bool {
	if c.out.push(b) {
		return true
	}
	c.slowReader()
	return false
}

// sendWait queues a frame of a stored result or an OK, waiting while the
// queue is full: those are paced by the client, who asked for them.
func (c *conn) sendWait(ctx context.Context, b []byte) bool {
	return c.out.pushWait(ctx, b)
}

func (c *conn) slowReader() {
	c.g.log.Info("disconnecting slow reader", "remote", c.peer,
		"pending_limit", c.g.lim.MaxPendingOutboundBytes)
	c.g.metrics.slowReaders.Inc()
	c.shutdown("slow reader")
}

// handleSafely is handle, answering "error:" if it panics (recover.go).
func (c *conn) handleSafely(typ int, b []byte) (alive bool) {
	alive = true
	defer c.recovered("frame", nil)
	return c.handle(typ, b)
}

// goWork runs fn on a worker of its own (workers.go) once one of the connection's
// in-flight slots is free; it reports false if the connection ended first.
// If fn panics, failed answers the client (recover.go).
func (c *conn) goWork(what string, fn func(), failed func(reason string)) bool {
	select {
	case c.slots <- struct{}{}:
	default: // every slot is taken: wait, held by the server
		release := c.serverHolds()
		select {
		case c.slots <- struct{}{}:
			release()
		case <-c.ctx.Done():
			release()
			return false
		}
	}
	c.g.workers.run(func() {
		defer func() { <-c.slots }()
		defer c.recovered(what, failed)
		fn()
	})
	return true
}

func (c *conn) notice(msg string) bool {
	return c.send(appendEnvelope(nil, "NOTICE", msg))
}

func (c *conn) closed(subid, reason string) bool {
	return c.send(appendEnvelope(nil, "CLOSED", subid, reason))
}

// authChallenge returns the connection's NIP-42 challenge and whether it
// was just made (and must be sent).
func (c *conn) authChallenge() (string, bool) {
	c.authMu.Lock()
	defer c.authMu.Unlock()
	if c.challenge != "" {
		return c.challenge, false
	}
	b := make([]byte, 16)
	rand.Read(b)
	c.challenge = hex.EncodeToString(b)
	return c.challenge, true
}

func (c *conn) authedPubkey() string {
	c.authMu.Lock()
	defer c.authMu.Unlock()
	return c.authed
}

// appendEnvelope encodes ["LABEL","s1",...] with JSON string escaping.
func appendEnvelope(dst []byte, label string, strs ...string) []byte {
	dst = append(dst, `["`...)
	dst = append(dst, label...)
	dst = append(dst, '"')
	for _, s := range strs {
		dst = append(dst, ',')
		dst = appendJSONString(dst, s)
	}
	return append(dst, ']')
}

func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			b, _ := json.Marshal(s) // rare: escapes or non-ASCII
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
