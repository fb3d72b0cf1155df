package gate

import (
	"bytes"
	"strconv"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/outcome"
	"github.com/grasp-dev/grasp/core/policy"
)

// handle checks one client frame and answers, dispatches or refuses it. It
// reports false once the connection is gone.
func (c *conn) handle(typ int, b []byte) bool {
	if typ != websocket.TextMessage {
		c.g.metrics.limit("binary")
		return c.notice("invalid: binary frames are not accepted; send JSON text")
	}
	if len(bytes.TrimSpace(b)) == 0 {
		c.g.metrics.limit("malformed")
		return c.notice("invalid: empty message")
	}
	f, err := scanFrame(b, maxFrameDepth)
	if err != nil {
		c.g.metrics.limit("malformed")
		return c.notice("invalid: could not parse message: " + err.Error())
	}
	switch string(f.label) {
	case "EVENT":
		return c.handleEvent(&f, b)
	case "REQ":
		return c.handleReq(&f, b)
	case "CLOSE":
		subid, ok := f.stringAt(b, 1)
		if f.n != 2 || !ok {
			c.g.metrics.limit("malformed")
			return c.notice(`invalid: CLOSE takes exactly one subscription id string`)
		}
		c.unsubscribe(subid)
		return true
	case "COUNT":
		return c.handleCount(&f, b)
	case "AUTH":
		return c.handleAuth(&f, b)
	case "NEG-OPEN", "NEG-MSG", "NEG-CLOSE":
		return c.handleNeg(&f, b)
	default:
		c.g.metrics.limit("unknown_verb")
		label := string(f.label)
		if len(label) > 32 {
			label = label[:32]
		}
		return c.notice("invalid: unknown message type " + strconv.Quote(label))
	}
}

// handleEvent decodes an EVENT and hands it to the backend on a goroutine
// of its own, so that a client's pipelined EVENTs share a group commit. The
// OK is the backend's answer, as it gave it.
func (c *conn) handleEvent(f *frame, b []byte) bool {
	if f.n != 2 || f.kindOf(b, 1) != '{' {
		c.g.metrics.limit("malformed")
		return c.notice(`invalid: EVENT takes exactly one event object`)
	}
	evt := new(nostr.Event)
	if err := evt.UnmarshalJSON(b[f.elems[1].start:f.elems[1].end]); err != nil {
		c.g.metrics.limit("malformed")
		return c.notice("invalid: could not parse event: " + err.Error())
	}
	meta := policy.Meta{Source: policy.SourceClient, Remote: c.remote, Authed: c.authedPubkey(), ReceivedAt: c.g.clk.Now()}
	// The frame's bytes count against max_inflight_event_bytes until it is
	// answered; waiting here stops reading this socket (F05).
	n := int64(len(b))
	release := c.serverHolds()
	acquired := c.g.eventBytes.acquire(c.ctx, n)
	release()
	if !acquired {
		return false
	}
	started := c.goWork("EVENT", func() {
		defer c.g.eventBytes.release(n)
		if r := c.privateWrite(evt); r != "" {
			c.sendWait(c.ctx, appendOK(evt.ID, false, r))
			return
		}
		res := c.g.backend.Accept(c.ctx, evt, meta)
		if !c.sendWait(c.ctx, appendOK(evt.ID, res.OK(), res.Text())) {
			return
		}
		if res.Kind == outcome.AuthRequired {
			c.requestAuth()
		}
	}, func(reason string) { c.sendWait(c.ctx, appendOK(evt.ID, false, reason)) })
	if !started {
		c.g.eventBytes.release(n)
	}
	return started
}

func appendOK(id string, ok bool, msg string) []byte {
	b := make([]byte, 0, 24+len(id)+len(msg))
	b = append(b, `["OK",`...)
	b = appendJSONString(b, id)
	if ok {
		b = append(b, `,true,`...)
	} else {
		b = append(b, `,false,`...)
	}
	b = appendJSONString(b, msg)
	return append(b, ']')
}
