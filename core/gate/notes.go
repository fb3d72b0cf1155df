package gate

import (
	"context"
	"time"

	"github.com/fiatjaf/khatru"
)

// note is a message waiting for the OK of one event on one connection.
type note struct {
	msg     string
	expires time.Time
}

// NoteOK makes the next ["OK",eventID,true,""] that khatru sends on the
// connection behind ctx carry msg instead of an empty message (khatru v0.19.1
// always sends it empty). ctx must be a khatru handler ctx (RejectEvent,
// StoreEvent, OnEventSaved ...) for a connection that came through this
// gate. It reports whether the note was recorded; notes unused for NoteTTL
// are dropped, and each connection holds at most MaxNotesPerConn.
func (g *Gate) NoteOK(ctx context.Context, eventID, msg string) bool {
	ws := khatru.GetConnection(ctx)
	if ws == nil || ws.Request == nil {
		return false
	}
	id := ws.Request.Header.Get(ConnHeader)
	if id == "" {
		return false
	}
	v, ok := g.conns.Load(id)
	if !ok {
		return false
	}
	v.(*conn).addNote(eventID, msg)
	return true
}

func (c *conn) addNote(eventID, msg string) {
	now := c.g.clk.Now()
	c.notesMu.Lock()
	defer c.notesMu.Unlock()
	if _, exists := c.notes[eventID]; !exists && len(c.notes) >= c.g.opts.MaxNotesPerConn {
		c.pruneNotesLocked(now)
	}
	c.notes[eventID] = note{msg: msg, expires: now.Add(c.g.opts.NoteTTL)}
	c.nNotes.Store(int32(len(c.notes)))
}

// pruneNotesLocked drops expired notes, and if none had expired, the one
// closest to expiry, so the map never outgrows its bound.
func (c *conn) pruneNotesLocked(now time.Time) {
	var oldest string
	var oldestAt time.Time
	for id, n := range c.notes {
		if !now.Before(n.expires) {
			delete(c.notes, id)
			continue
		}
		if oldest == "" || n.expires.Before(oldestAt) {
			oldest, oldestAt = id, n.expires
		}
	}
	if len(c.notes) >= c.g.opts.MaxNotesPerConn && oldest != "" {
		delete(c.notes, oldest)
	}
}

// takeNote removes and returns the live note for eventID.
func (c *conn) takeNote(eventID string) (string, bool) {
	c.notesMu.Lock()
	defer c.notesMu.Unlock()
	n, ok := c.notes[eventID]
	if !ok {
		return "", false
	}
	delete(c.notes, eventID)
	c.nNotes.Store(int32(len(c.notes)))
	if !c.g.clk.Now().Before(n.expires) {
		return "", false
	}
	return n.msg, true
}

// rewriteOK puts a pending note into an OK true with an empty message.
// Frames without a note pass untouched, and the common case (no notes on
// this connection) costs one atomic load.
func (c *conn) rewriteOK(data []byte) []byte {
	if c.nNotes.Load() == 0 {
		return data
	}
	f, err := scanFrame(data, maxFrameDepth)
	if err != nil || f.n != 4 {
		return data
	}
	id, ok := f.stringAt(data, 1)
	if !ok {
		return data
	}
	// Any OK for the event uses its note up; only an accepting OK with an
	// empty message is rewritten.
	msg, ok := c.takeNote(id)
	if !ok || f.kindOf(data, 2) != 't' {
		return data
	}
	if reason, ok := f.stringAt(data, 3); !ok || reason != "" {
		return data
	}
	return appendEnvelopeOK(id, msg)
}

func appendEnvelopeOK(id, msg string) []byte {
	b := make([]byte, 0, 16+len(id)+len(msg))
	b = append(b, `["OK",`...)
	b = appendJSONString(b, id)
	b = append(b, `,true,`...)
	b = appendJSONString(b, msg)
	return append(b, ']')
}
