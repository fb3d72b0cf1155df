package catchup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// session is one connection used by one CatchUp call. Only the calling
// goroutine writes and handles frames; a reader goroutine reads the socket
// into a queue so every wait can also watch a timer and ctx.
//
// The reader never waits for the caller: coder/websocket answers a peer's
// ping only while a read is in progress, and khatru drops a client that
// leaves pings unanswered for 60 s. A 64-frame channel stopped the reader
// whenever the pipeline took long over a page, and the peer dropped us. The
// queue is bounded in bytes instead (Options.ReadBuffer, far above what the
// requests in flight ask for); only a peer sending more than that ahead of
// us stops the reading.
type session struct {
	c      *Client
	url    string
	opts   Options
	ctx    context.Context
	cancel context.CancelFunc
	conn   Conn
	q      *frameQueue
	read   chan struct{} // closed when the reader has returned
	sent   int64
	recv   int64 // written by the reader only; read after it returned
	seq    int
	closed bool
	// frame is the negentropy frame size limit of this connection's
	// sessions; sentLarge says a NEG-MSG above opts.FrameLimit was sent.
	frame     int
	sentLarge bool
}

var errTimeout = errors.New("no answer from the peer in time")

func (c *Client) open(ctx context.Context, url string, opts Options) (*session, error) {
	sctx, cancel := context.WithCancel(ctx)
	// The dial is bounded by the round timeout on the injected clock, since a
	// peer that accepts TCP and never finishes the handshake would hang it.
	t := c.clk.AfterFunc(opts.RoundTimeout, cancel)
	conn, err := c.dial(sctx, url)
	t.Stop()
	if err != nil {
		cancel()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("dial: %w", ctx.Err())
		}
		return nil, fmt.Errorf("dial: %w: %w", errConn, err)
	}
	s := &session{c: c, url: url, opts: opts, ctx: sctx, cancel: cancel, conn: conn,
		q: newFrameQueue(opts.ReadBuffer), read: make(chan struct{})}
	go s.reader()
	return s, nil
}

func (s *session) reader() {
	defer close(s.read)
	for {
		var buf bytes.Buffer
		if err := s.conn.ReadMessage(s.ctx, &buf); err != nil {
			s.q.close(err)
			return
		}
		s.recv += int64(buf.Len())
		if err := s.q.push(s.ctx, buf.Bytes()); err != nil {
			s.q.close(err)
			return
		}
	}
}

// close drops the connection, waits for the reader to finish and adds the
// session's byte counts to res. It is idempotent.
func (s *session) close(res *Result) {
	if s.closed {
		return
	}
	s.closed = true
	s.cancel()
	_ = s.conn.Close()
	<-s.read
	res.BytesSent += s.sent
	res.BytesReceived += s.recv
}

func (s *session) send(msg []byte) error {
	s.sent += int64(len(msg))
	if err := s.conn.WriteMessage(s.ctx, msg); err != nil {
		if s.ctx.Err() != nil {
			return fmt.Errorf("write: %w", context.Cause(s.ctx))
		}
		return fmt.Errorf("write: %w: %w", errConn, err)
	}
	return nil
}

// frame is one message from the peer. EVENT frames come parsed and with id
// and signature already checked, in parallel across a batch: signature
// checks dominate a bulk catch-up's CPU time.
type frame struct {
	raw   []byte
	label string
	sub   string       // EVENT only
	evt   *nostr.Event // EVENT only; nil if it did not parse
	why   string       // why evt failed verification, "" if it passed or was not checked
}

// maxBatch bounds how many queued frames are taken (and verified) at once.
const maxBatch = 128

// nextFrames waits (one round timeout at most) for the next frame, then takes
// whatever else is already queued, and verifies the batch's events except
// those wanted reports it will ignore (known, duplicate, not asked for).
func (s *session) nextFrames(wanted func(sub, id string) bool) ([]frame, error) {
	batch, err := s.takeFrames()
	if err != nil {
		return nil, err
	}
	verifyWanted(batch, wanted)
	return batch, nil
}

// takeFrames waits (one round timeout at most) for the next frame, takes
// whatever else is already queued, labels them and parses the EVENTs.
func (s *session) takeFrames() ([]frame, error) {
	f, err := s.next()
	if err != nil {
		return nil, err
	}
	batch := []frame{{raw: f}}
	for len(batch) < maxBatch {
		f, ok, _ := s.q.pop()
		if !ok {
			break // handle what arrived; the next read reports a close
		}
		batch = append(batch, frame{raw: f})
	}
	for i := range batch {
		fr := &batch[i]
		fr.label = label(fr.raw)
		if fr.label != "EVENT" {
			continue
		}
		var env nostr.EventEnvelope
		if env.FromJSON(string(fr.raw)) != nil || env.SubscriptionID == nil {
			continue
		}
		fr.sub, fr.evt = *env.SubscriptionID, &env.Event
	}
	return batch, nil
}

// verifyWanted checks, in parallel, the events of batch that wanted says
// will be used.
func verifyWanted(batch []frame, wanted func(sub, id string) bool) {
	verifyAll(batch, wantedEvents(batch, wanted))
}

func wantedEvents(batch []frame, wanted func(sub, id string) bool) []int {
	var events []int
	for i := range batch {
		if fr := &batch[i]; fr.evt != nil && wanted(fr.sub, fr.evt.ID) {
			events = append(events, i)
		}
	}
	return events
}

// verifyChunk is how many events per core are checked between two calls of
// verifyWantedBetween's between: about a millisecond each, the signatures
// of a core's share verified as one batch (sigcheck.Events; 4 a core gave
// batches too small to share much of their doublings).
const verifyChunk = 16

// verifyWantedBetween is verifyWanted in chunks, calling between after
// each one (from this goroutine, no check running): a negentropy session
// answers a round that arrived meanwhile instead of after the whole batch.
// Which events are checked is decided before the first chunk.
func verifyWantedBetween(batch []frame, wanted func(sub, id string) bool, between func()) {
	events := wantedEvents(batch, wanted)
	chunk := verifyChunk * runtime.GOMAXPROCS(0)
	for len(events) > 0 {
		n := min(chunk, len(events))
		verifyAll(batch, events[:n])
		events = events[n:]
		between()
	}
}

// next waits for the next frame for at most one round timeout.
func (s *session) next() ([]byte, error) {
	t := s.c.clk.NewTimer(s.opts.RoundTimeout)
	defer t.Stop()
	for {
		f, ok, readErr := s.q.pop()
		switch {
		case ok:
			return f, nil
		case readErr != nil:
			if s.ctx.Err() != nil {
				return nil, fmt.Errorf("read: %w", s.ctx.Err())
			}
			return nil, fmt.Errorf("read: %w: %w", errConn, readErr)
		}
		select {
		case <-s.q.ready:
		case <-t.C():
			return nil, errTimeout
		case <-s.ctx.Done():
			return nil, fmt.Errorf("read: %w", s.ctx.Err())
		}
	}
}

// pause waits d on the injected clock, or until ctx ends.
func (s *session) pause(d time.Duration) error {
	t := s.c.clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-s.ctx.Done():
		return s.ctx.Err()
	}
}

func (s *session) subID(prefix string) string {
	s.seq++
	return prefix + strconv.Itoa(s.seq)
}

func (s *session) sendReq(sub string, f nostr.Filter) error {
	b, err := nostr.ReqEnvelope{SubscriptionID: sub, Filters: nostr.Filters{f}}.MarshalJSON()
	if err != nil {
		return fmt.Errorf("encode REQ: %w", err)
	}
	return s.send(b)
}

func (s *session) sendClose(sub string) error {
	b, err := nostr.CloseEnvelope(sub).MarshalJSON()
	if err != nil {
		return fmt.Errorf("encode CLOSE: %w", err)
	}
	return s.send(b)
}

// label reads the verb of a relay frame (`["EVENT",...`) without parsing the
// rest, so frames we do not care about cost nothing.
func label(f []byte) string {
	i := 0
	skip := func() {
		for i < len(f) && (f[i] == ' ' || f[i] == '\n' || f[i] == '\r' || f[i] == '\t') {
			i++
		}
	}
	skip()
	if i >= len(f) || f[i] != '[' {
		return ""
	}
	i++
	skip()
	if i >= len(f) || f[i] != '"' {
		return ""
	}
	i++
	j := bytes.IndexByte(f[i:], '"')
	if j < 0 || j > 16 {
		return ""
	}
	return string(f[i : i+j])
}
