package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"
)

// conn is one bridged client connection. Four goroutines serve it: the
// client reader (which also runs the negentropy server, so a NEG reply is
// queued before the next client message is read), the backend reader, the
// client writer and the keepalive loop. Whichever ends first shuts all down.
type conn struct {
	g   *Gate
	id  string
	req *http.Request
	cc  *websocket.Conn // client side, upgraded by the gate
	bc  *websocket.Conn // backend side, over a net.Pipe into khatru
	out *outQueue

	ctx    context.Context
	cancel context.CancelFunc
	once   sync.Once

	lastSeen atomic.Int64 // clock time of the last client frame, UnixNano

	subsMu sync.Mutex
	subs   map[string]struct{} // open REQ subscriptions

	negMu sync.Mutex
	neg   map[string]*negSession

	notesMu sync.Mutex
	notes   map[string]note
	nNotes  atomic.Int32
}

func newConn(g *Gate, id string, r *http.Request, cc, bc *websocket.Conn) *conn {
	c := &conn{
		g:     g,
		id:    id,
		req:   r,
		cc:    cc,
		bc:    bc,
		out:   newOutQueue(g.opts.MaxPendingOutboundBytes),
		subs:  make(map[string]struct{}),
		neg:   make(map[string]*negSession),
		notes: make(map[string]note),
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c
}

func (c *conn) start() {
	c.g.conns.Store(c.id, c)
	c.g.metrics.connections.Inc()
	c.g.metrics.connectionsTotal.Inc()
	c.touch()
	c.cc.SetReadLimit(c.g.opts.MaxMessageBytes)
	c.cc.SetPongHandler(func(string) error { c.touch(); return nil })
	c.cc.SetPingHandler(func(data string) error {
		c.touch()
		err := c.cc.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(c.g.opts.WriteTimeout))
		if err != nil && !errors.Is(err, websocket.ErrCloseSent) {
			return err
		}
		return nil
	})
	go c.readClient()
	go c.readBackend()
	go c.writeClient()
	go c.keepalive()
}

func (c *conn) touch() { c.lastSeen.Store(c.g.clk.Now().UnixNano()) }

// shutdown ends the connection on both sides, once.
func (c *conn) shutdown(reason string) {
	c.once.Do(func() {
		c.g.log.Debug("connection closed", "conn", c.id, "remote", c.req.RemoteAddr, "reason", reason)
		c.cancel()
		c.out.close()
		c.cc.Close()
		c.bc.Close()
		c.g.conns.Delete(c.id)
		c.closeNegSessions()
		c.g.metrics.connections.Dec()
	})
}

func (c *conn) readClient() {
	var buf bytes.Buffer
	for {
		typ, rd, err := c.cc.NextReader()
		if err != nil {
			c.shutdown("client read: " + err.Error())
			return
		}
		c.touch()
		buf.Reset()
		if _, err := buf.ReadFrom(rd); err != nil {
			if errors.Is(err, websocket.ErrReadLimit) {
				// The websocket library has already sent close 1009.
				c.g.metrics.limit("message_size")
			}
			c.shutdown("client read: " + err.Error())
			return
		}
		c.g.metrics.messagesIn.Inc()
		if !c.handleClient(typ, buf.Bytes()) {
			return
		}
		if buf.Cap() > 64<<10 {
			buf = bytes.Buffer{} // do not keep one large message's buffer per idle connection
		}
	}
}

func (c *conn) readBackend() {
	for {
		_, data, err := c.bc.ReadMessage()
		if err != nil {
			c.shutdown("backend read: " + err.Error())
			return
		}
		switch peekOut(data) {
		case outOK:
			data = c.rewriteOK(data)
		case outClosed:
			c.backendClosed(data)
		}
		if !c.send(data) {
			return
		}
	}
}

func (c *conn) writeClient() {
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.out.wake:
		}
		for {
			batch := c.out.take()
			if len(batch) == 0 {
				break
			}
			n := 0
			for _, f := range batch {
				if err := c.cc.SetWriteDeadline(time.Now().Add(c.g.opts.WriteTimeout)); err != nil {
					c.shutdown("client write: " + err.Error())
					return
				}
				if err := c.cc.WriteMessage(websocket.TextMessage, f); err != nil {
					c.shutdown("client write: " + err.Error())
					return
				}
				n += len(f)
				c.g.metrics.messagesOut.Inc()
			}
			c.out.release(batch, n)
		}
	}
}

// keepalive pings the client and drops it once nothing has arrived from it
// for ClientTimeout, which also catches half-open TCP connections.
func (c *conn) keepalive() {
	t := c.g.clk.NewTicker(c.g.opts.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C():
		}
		idle := c.g.clk.Since(time.Unix(0, c.lastSeen.Load()))
		if idle > c.g.opts.ClientTimeout {
			c.g.metrics.limit("client_timeout")
			c.shutdown("client timeout")
			return
		}
		if err := c.cc.WriteControl(websocket.PingMessage, nil, time.Now().Add(c.g.opts.WriteTimeout)); err != nil {
			c.shutdown("ping: " + err.Error())
			return
		}
	}
}

// send queues a frame for the client; a client whose queue is full is
// disconnected as a slow reader.
func (c *conn) send(b []byte) bool {
	if c.out.push(b) {
		return true
	}
	c.g.log.Info("disconnecting slow reader", "conn", c.id, "remote", c.req.RemoteAddr,
		"pending_limit", c.g.opts.MaxPendingOutboundBytes)
	c.shutdown("slow reader")
	c.g.metrics.slowReaders.Inc()
	return false
}

// forward passes a client frame to khatru. net.Pipe is synchronous, so this
// returns once khatru's read loop has taken the frame; khatru handles every
// message in its own goroutine and never blocks that loop for long.
func (c *conn) forward(b []byte) bool {
	if err := c.bc.WriteMessage(websocket.TextMessage, b); err != nil {
		c.shutdown("backend write: " + err.Error())
		return false
	}
	return true
}

func (c *conn) notice(msg string) bool {
	return c.send(appendEnvelope(nil, "NOTICE", msg))
}

func (c *conn) closed(subid, reason string) bool {
	return c.send(appendEnvelope(nil, "CLOSED", subid, reason))
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
