package gate

import "github.com/nbd-wtf/go-nostr"

// Broadcast sends evt to every open subscription with a matching filter and
// returns how many received it. The relay calls it once an event is stored.
// It never blocks on a client: one whose queue is full is dropped as a slow
// reader. The event is encoded once.
func (g *Gate) Broadcast(evt *nostr.Event) int {
	var j []byte
	n := 0
	who := g.readers(evt)
	for _, c := range g.snapshot() {
		if who != nil && !who(c.authedPubkey()) {
			continue
		}
		for _, subid := range c.matching(evt) {
			if j == nil {
				j, _ = evt.MarshalJSON()
			}
			b := appendEnvelope(make([]byte, 0, len(j)+len(subid)+16), "EVENT", subid)
			b = append(b[:len(b)-1], ',')
			b = append(b, j...)
			b = append(b, ']')
			if !c.send(b) {
				break
			}
			n++
		}
	}
	return n
}

// matching returns the ids of the subscriptions evt matches.
func (c *conn) matching(evt *nostr.Event) []string {
	c.subsMu.Lock()
	defer c.subsMu.Unlock()
	var ids []string
	for id, s := range c.subs {
		for i := range s.filters {
			if s.filters[i].Matches(evt) {
				ids = append(ids, id)
				break
			}
		}
	}
	return ids
}
