package conn

import (
	"sync"

	"github.com/nbd-wtf/go-nostr"
)

// inboundOverhead is what a queued event costs beyond its content and tags
// (struct, strings, slices), so many small events are bounded too.
const inboundOverhead = 256

// liveQueue holds the live events read from a peer and not yet ingested,
// bounded in bytes. The reader never waits on it: coder/websocket answers
// a peer's pings only while a read is in progress, and a peer (khatru)
// drops a client whose pongs are late, so a reader blocked on a full queue
// lost the connection anyway, after a minute, with nothing said. When a push
// would pass the bound the connection is ended instead, at once and with
// the reason; the reconnect's catch-up (the 15-minute rule) fetches what
// was not ingested.
type liveQueue struct {
	mu     sync.Mutex
	items  []inbound
	bytes  int
	max    int
	notify chan struct{}
}

func newLiveQueue(max int) *liveQueue {
	return &liveQueue{max: max, notify: make(chan struct{}, 1)}
}

func eventCost(e *nostr.Event) int {
	n := inboundOverhead + len(e.Content) + len(e.ID) + len(e.PubKey) + len(e.Sig)
	for _, t := range e.Tags {
		n += 24
		for _, v := range t {
			n += 16 + len(v)
		}
	}
	return n
}

// push queues in unless that would pass the bound (an event that alone
// passes it still goes into an empty queue); false means full.
func (q *liveQueue) push(in inbound) bool {
	cost := eventCost(in.evt)
	q.mu.Lock()
	if len(q.items) > 0 && q.bytes+cost > q.max {
		q.mu.Unlock()
		return false
	}
	q.items = append(q.items, in)
	q.bytes += cost
	q.mu.Unlock()
	select {
	case q.notify <- struct{}{}:
	default:
	}
	return true
}

// pop takes the oldest event, if any.
func (q *liveQueue) pop() (inbound, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		return inbound{}, false
	}
	in := q.items[0]
	q.items[0] = inbound{}
	q.items = q.items[1:]
	q.bytes -= eventCost(in.evt)
	if len(q.items) == 0 {
		q.items = nil
	}
	return in, true
}

// waiting is the number of bytes queued.
func (q *liveQueue) waiting() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.bytes
}
