package gate

import "github.com/nbd-wtf/go-nostr"

// Broadcast sends evt to every open subscription with a matching filter and
// returns how many received it. The relay calls it once an event is stored.
// It never blocks on a client: one whose queue is full is dropped as a slow
// reader. The event is encoded once. The subscriptions are found through
// the gate's subIndex, which tests only the filters evt could match.
func (g *Gate) Broadcast(evt *nostr.Event) int {
	matches := g.subs.match(evt)
	if len(matches) == 0 {
		return 0
	}
	j, _ := evt.MarshalJSON()
	who := g.readers(evt)
	var allowed, dropped map[*conn]bool
	n := 0
	for _, d := range matches {
		if dropped[d.c] || d.c.ctx.Err() != nil {
			continue // dropped as a slow reader, or closing
		}
		if who != nil {
			ok, known := allowed[d.c]
			if !known {
				if allowed == nil {
					allowed = map[*conn]bool{}
				}
				ok = who(d.c.authedPubkey())
				allowed[d.c] = ok
			}
			if !ok {
				continue
			}
			d.sub.seen.add(evt.ID)
		}
		b := appendEnvelope(make([]byte, 0, len(j)+len(d.subid)+16), "EVENT", d.subid)
		b = append(b[:len(b)-1], ',')
		b = append(b, j...)
		b = append(b, ']')
		if !d.c.send(b) {
			// Dropped as a slow reader: no more copies to it.
			if dropped == nil {
				dropped = map[*conn]bool{}
			}
			dropped[d.c] = true
			continue
		}
		n++
	}
	return n
}
