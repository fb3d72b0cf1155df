package gate

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/fasthttp/websocket"
)

// handleClient checks one client frame and forwards, answers or refuses it.
// It reports false once the connection is gone.
func (c *conn) handleClient(typ int, b []byte) bool {
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
		if f.n != 2 || f.kindOf(b, 1) != '{' {
			c.g.metrics.limit("malformed")
			return c.notice(`invalid: EVENT takes exactly one event object`)
		}
		return c.forward(b)
	case "REQ":
		return c.handleReq(&f, b)
	case "CLOSE":
		subid, ok := f.stringAt(b, 1)
		if f.n != 2 || !ok {
			c.g.metrics.limit("malformed")
			return c.notice(`invalid: CLOSE takes exactly one subscription id string`)
		}
		c.subsMu.Lock()
		delete(c.subs, subid)
		c.subsMu.Unlock()
		return c.forward(b)
	case "COUNT":
		subid, ok := f.stringAt(b, 1)
		if !ok || subid == "" || f.n < 3 {
			c.g.metrics.limit("malformed")
			return c.notice(`invalid: COUNT takes a subscription id string and at least one filter`)
		}
		if reason := c.checkReqShape(&f, b, subid); reason != "" {
			return c.closed(subid, reason)
		}
		return c.forward(b)
	case "AUTH":
		if f.n != 2 || f.kindOf(b, 1) != '{' {
			c.g.metrics.limit("malformed")
			return c.notice(`invalid: AUTH takes exactly one event object`)
		}
		return c.forward(b)
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

// checkReqShape applies the subid and filter-count limits shared by REQ and
// COUNT; it returns a CLOSED reason, or "".
func (c *conn) checkReqShape(f *frame, b []byte, subid string) string {
	if len(subid) > c.g.opts.MaxSubIDLength {
		c.g.metrics.limit("subid_length")
		return fmt.Sprintf("invalid: subscription id longer than %d characters", c.g.opts.MaxSubIDLength)
	}
	if nf := f.n - 2; nf > c.g.opts.MaxFiltersPerReq {
		c.g.metrics.limit("filters")
		return fmt.Sprintf("blocked: %d filters in one request, the limit is %d", nf, c.g.opts.MaxFiltersPerReq)
	}
	for i := 2; i < f.n && i < maxSpans; i++ {
		if f.kindOf(b, i) != '{' {
			c.g.metrics.limit("malformed")
			return "invalid: filters must be JSON objects"
		}
	}
	return ""
}

func (c *conn) handleReq(f *frame, b []byte) bool {
	subid, ok := f.stringAt(b, 1)
	if !ok || subid == "" {
		c.g.metrics.limit("malformed")
		return c.notice("invalid: REQ needs a non-empty subscription id string")
	}
	if f.n < 3 {
		c.g.metrics.limit("malformed")
		return c.closed(subid, "invalid: REQ needs at least one filter")
	}
	if reason := c.checkReqShape(f, b, subid); reason != "" {
		return c.refuseReq(subid, reason)
	}
	c.subsMu.Lock()
	_, replacing := c.subs[subid]
	if !replacing && len(c.subs) >= c.g.opts.MaxSubscriptions {
		c.subsMu.Unlock()
		c.g.metrics.limit("subscriptions")
		return c.closed(subid, fmt.Sprintf("blocked: too many open subscriptions, the limit is %d; CLOSE some first", c.g.opts.MaxSubscriptions))
	}
	c.subs[subid] = struct{}{}
	c.subsMu.Unlock()
	return c.forward(b)
}

// refuseReq answers CLOSED for a refused REQ. If the id named an open
// subscription, that one is closed in khatru too: NIP-01 makes a REQ replace
// the subscription of the same id, and the client now believes it closed.
func (c *conn) refuseReq(subid, reason string) bool {
	c.subsMu.Lock()
	_, open := c.subs[subid]
	delete(c.subs, subid)
	c.subsMu.Unlock()
	if open && !c.forward(appendEnvelope(nil, "CLOSE", subid)) {
		return false
	}
	return c.closed(subid, reason)
}

// backendClosed forgets a subscription khatru ended.
func (c *conn) backendClosed(data []byte) {
	f, err := scanFrame(data, maxFrameDepth)
	if err != nil {
		return
	}
	if subid, ok := f.stringAt(data, 1); ok {
		c.subsMu.Lock()
		delete(c.subs, subid)
		c.subsMu.Unlock()
	}
}

// openSubscriptions reports how many REQ subscriptions the gate counts open.
func (c *conn) openSubscriptions() int {
	c.subsMu.Lock()
	defer c.subsMu.Unlock()
	return len(c.subs)
}
