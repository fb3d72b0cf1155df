package nocontent

import (
	"context"
	"reflect"
	"sync"

	"github.com/nbd-wtf/go-nostr"
)

// Querier is the store's read (eventstore.Store satisfies it).
type Querier interface {
	QueryEvents(ctx context.Context, f nostr.Filter) (chan *nostr.Event, error)
}

// One acceptance's lookups by id (issue 27 part 5). Policy's reference
// rule (G01-R4) and GRASP-08's record (visibility.Record) both read the
// stored events an event names by e/E/q, each with a query of its own for
// the same ids (~10 µs an event). The relay marks an event's acceptance
// with Shared; ByID then answers the ids already asked during it from the
// first answer and queries the store for the rest only. Both readers see
// the same stored events, so the two decisions rest on one reading.

type memoKey struct{}

type memo struct {
	mu    sync.Mutex
	src   Querier
	asked map[string]*nostr.Event // nil: asked, not stored
}

// Shared marks ctx as one event's acceptance: ByID calls under it share
// their answers. Call it once per event; answers are never kept longer.
func Shared(ctx context.Context) context.Context {
	return context.WithValue(ctx, memoKey{}, &memo{})
}

// ByID returns the stored events among ids, without their contents (With),
// each once, in the order of ids, at most limit (0: no limit). Under
// Shared, ids already asked of the same q are answered from the earlier
// answer (found or not) and only the others are queried.
func ByID(ctx context.Context, q Querier, ids []string, limit int) ([]*nostr.Event, error) {
	m, _ := ctx.Value(memoKey{}).(*memo)
	if m == nil || !m.serves(q) {
		return query(ctx, q, ids, limit)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var missing []string
	for _, id := range ids {
		if _, ok := m.asked[id]; !ok && !containsID(missing, id) {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		got, err := query(ctx, q, missing, 0)
		if err != nil {
			return nil, err
		}
		if m.asked == nil {
			m.asked = make(map[string]*nostr.Event, len(missing))
		}
		for _, id := range missing {
			m.asked[id] = nil
		}
		for _, e := range got {
			m.asked[e.ID] = e
		}
	}
	var out []*nostr.Event
	for _, id := range ids {
		if e := m.asked[id]; e != nil && !containsEvent(out, e) && (limit == 0 || len(out) < limit) {
			out = append(out, e)
		}
	}
	return out, nil
}

// serves reports whether m answers for q: the first store asked is the
// one whose answers are kept; another one is queried apart.
func (m *memo) serves(q Querier) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.src == nil {
		m.src = q
		return true
	}
	t := reflect.TypeOf(q)
	return t == reflect.TypeOf(m.src) && t.Comparable() && any(q) == any(m.src)
}

// query reads the events of ids from q, each once, in the order of ids.
func query(ctx context.Context, q Querier, ids []string, limit int) ([]*nostr.Event, error) {
	ch, err := q.QueryEvents(With(ctx), nostr.Filter{IDs: ids, Limit: len(ids)})
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*nostr.Event, len(ids))
	// Drained to the end: the store's producer is finished when we return.
	for e := range ch {
		byID[e.ID] = e
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []*nostr.Event
	for _, id := range ids {
		if e := byID[id]; e != nil && !containsEvent(out, e) && (limit == 0 || len(out) < limit) {
			out = append(out, e)
		}
	}
	return out, nil
}

func containsID(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func containsEvent(evs []*nostr.Event, e *nostr.Event) bool {
	for _, x := range evs {
		if x == e {
			return true
		}
	}
	return false
}
