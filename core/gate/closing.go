package gate

// Closing live connections on an operator's order (NIP-86, issue 25 part
// 3): a ban of a pubkey ends what the connections authenticated as it have
// open, a blocked address loses its connections. Each subscription gets
// CLOSED and each negentropy session NEG-ERR with the reason, then the
// connection is closed, at once, on this instance; the server calls it on
// every instance (the operator's lists are shared and followed).

// CloseKeys ends the connections authenticated (NIP-42) as one of keys.
// It returns how many it closed.
func (g *Gate) CloseKeys(keys []string, reason string) int {
	if len(keys) == 0 {
		return 0
	}
	set := make(map[string]bool, len(keys))
	for _, k := range keys {
		set[k] = true
	}
	return g.closeWhere(func(c *conn) bool { return set[c.authedPubkey()] }, reason)
}

// CloseRemotes ends the connections whose client address (as ClientIP
// names it) match says yes to. It returns how many it closed.
func (g *Gate) CloseRemotes(match func(remote string) bool, reason string) int {
	return g.closeWhere(func(c *conn) bool { return match(c.remote) }, reason)
}

func (g *Gate) closeWhere(pick func(*conn) bool, reason string) int {
	n := 0
	for _, c := range g.snapshot() {
		if !pick(c) {
			continue
		}
		n++
		c.endAll(reason)
	}
	return n
}

// endAll tells every open subscription and negentropy session why it ends,
// then closes the connection.
func (c *conn) endAll(reason string) {
	c.subsMu.Lock()
	subs := make([]string, 0, len(c.subs))
	for id := range c.subs {
		subs = append(subs, id)
	}
	c.subsMu.Unlock()
	for _, id := range subs {
		c.unsubscribe(id)
		c.closed(id, reason)
	}
	c.negMu.Lock()
	negs := make([]string, 0, len(c.neg))
	for id := range c.neg {
		negs = append(negs, id)
	}
	c.negMu.Unlock()
	for _, id := range negs {
		c.dropNegSession(id)
		c.negErr(id, reason)
	}
	c.ending.Store(true)
	c.notice(reason)
}
