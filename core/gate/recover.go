package gate

import (
	"runtime/debug"
)

// A panic while serving one client message (a bug in the gate, the relay's
// hooks, the store or a plugin's glue) must not take the process down with
// every other client, nor leave this client waiting for an answer: it is
// logged with its stack, counted, and answered with "error:", and the
// connection goes on (audit F18c). Nothing is half-written by it: the write
// path answers OK true only after the store's commit.

const msgInternal = "error: internal error while handling this message; it was logged, try again later"

// recovered is deferred by everything that serves a message; answer (nil:
// a NOTICE) tells the client what became of it.
func (c *conn) recovered(what string, answer func(reason string)) {
	p := recover()
	if p == nil {
		return
	}
	c.g.log.Error("panic while handling a client message; the connection stays open",
		"message", what, "remote", c.peer, "panic", p, "stack", string(debug.Stack()))
	c.g.metrics.panics.Inc()
	if answer == nil {
		c.notice(msgInternal)
		return
	}
	answer(msgInternal)
}
