package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"

	"github.com/grasp-dev/grasp/core/negindex"
)

// The negentropy index (core/negindex) of the badger backend. It is loaded
// from disk in the background when the store opens: a snapshot transaction
// is taken before the writer starts, every write the writer applies after
// that is logged, and once the snapshot is read the log is replayed on top.
// Until then a NEG-OPEN waits for it (usableSoon); if loading takes longer
// than indexLoadWait, or for good if keeping it up to date ever fails,
// NEG-OPEN falls back to the store query. The writer is the only one that changes
// events, so it alone feeds the index (writer.apply), after each write is
// applied and before its batch is synced, as the store's own queries see it.
type negIndex struct {
	ix *negindex.Index

	mu       sync.Mutex
	ready    bool
	broken   bool
	building bool
	log      []negindex.Op

	stop chan struct{}
	done chan struct{}
}

// ErrTooManyEvents is NegentropyStorage's answer to a filter matching more
// events than a session may reconcile.
var ErrTooManyEvents = negindex.ErrTooMany

// startNegIndex takes the snapshot and starts loading it; call before the
// writer runs.
func (s *Store) startNegIndex() {
	n := &negIndex{ix: negindex.New(nil), building: true, stop: make(chan struct{}), done: make(chan struct{})}
	s.neg = n
	txn := s.db.NewTransaction(false)
	go func() {
		defer close(n.done)
		defer txn.Discard()
		events, err := loadIndexEvents(txn, n.stop)
		n.mu.Lock()
		defer n.mu.Unlock()
		n.building = false
		if err != nil {
			if !errors.Is(err, errClosed) {
				s.log.Error("negentropy index not loaded; NIP-77 sessions query the store", "error", err)
			}
			n.broken, n.log = true, nil
			return
		}
		n.ix.Load(events)
		n.ix.Replay(n.log)
		n.log = nil
		n.ready = !n.broken
		s.log.Info("negentropy index loaded", "events", n.ix.Len(), "bytes", n.ix.MemoryBytes())
	}()
}

func (n *negIndex) close() {
	close(n.stop)
	<-n.done
}

// record applies (or, while loading, logs) one write.
func (n *negIndex) record(add bool, evt *nostr.Event) {
	e, ok := negindex.FromNostr(evt)
	if !ok {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.broken:
	case n.building:
		n.log = append(n.log, negindex.Op{Add: add, Event: e})
	case add:
		n.ix.Add(e)
	default:
		n.ix.Remove(e)
	}
}

// indexed feeds one applied write to the negentropy index, if any.
func (s *Store) indexed(add bool, evt *nostr.Event) {
	if s.neg != nil {
		s.neg.record(add, evt)
	}
}

// fail stops using the index: an update could not be worked out.
func (n *negIndex) fail() {
	n.mu.Lock()
	n.broken, n.ready, n.log = true, false, nil
	n.mu.Unlock()
}

func (n *negIndex) usable() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ready
}

// indexLoadWait is how long a NEG-OPEN arriving while the index loads
// waits for it. Answering it from the store query instead decodes every
// matching event per session, which is what a burst of sessions right
// after a restart would cost (audit F07); loading takes well under a
// second per 20,000 events.
const indexLoadWait = time.Minute

// usableSoon is usable, waiting up to indexLoadWait while the index loads.
func (n *negIndex) usableSoon() bool {
	if n.usable() {
		return true
	}
	t := time.NewTimer(indexLoadWait)
	defer t.Stop()
	select {
	case <-n.done: // loaded, failed or closed
	case <-t.C:
	}
	return n.usable()
}

// NegentropyStorage answers a NEG-OPEN filter from the index: the sealed
// (created_at, id) pairs of the matching events. ok is false when the index
// cannot answer (PostgreSQL backend, index not loaded within indexLoadWait
// or broken, a filter it does not cover); the caller then queries. err is ErrTooManyEvents past max.
func (e *events) NegentropyStorage(f nostr.Filter, max int) (st negentropy.Storage, ok bool, err error) {
	if e.direct || e.s.neg == nil || !e.s.neg.usableSoon() {
		return nil, false, nil
	}
	snap, ok, err := e.s.neg.ix.Select(f, max)
	if !ok || err != nil {
		return nil, ok, err
	}
	e.s.m.queries.WithLabelValues("negentropy_index").Inc()
	return snap, true, nil
}

// versions lists the stored events a replacement of evt competes with, as
// the badger backend's ReplaceEvent looks them up.
func (s *Store) versions(evt *nostr.Event) ([]*nostr.Event, error) {
	f := nostr.Filter{Kinds: []int{evt.Kind}, Authors: []string{evt.PubKey}, Limit: 10}
	if nostr.IsAddressableKind(evt.Kind) {
		f.Tags = nostr.TagMap{"d": []string{evt.Tags.GetD()}}
	}
	return s.collect(f)
}

func (s *Store) storedByID(id string) (*nostr.Event, error) {
	got, err := s.collect(nostr.Filter{IDs: []string{id}, Limit: 1})
	if err != nil || len(got) == 0 {
		return nil, err
	}
	return got[0], nil
}

func (s *Store) collect(f nostr.Filter) ([]*nostr.Event, error) {
	ch, err := s.backend.QueryEvents(context.Background(), f)
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", f, err)
	}
	var out []*nostr.Event
	for evt := range ch {
		out = append(out, evt)
	}
	return out, nil
}

// loadIndexEvents reads every raw event record of the snapshot, decoding
// only what the index keeps.
func loadIndexEvents(txn *badger.Txn, stop <-chan struct{}) ([]negindex.Event, error) {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{0}, PrefetchValues: true, PrefetchSize: 64})
	defer it.Close()
	var out []negindex.Event
	for it.Rewind(); it.Valid(); it.Next() {
		if len(out)%4096 == 0 {
			select {
			case <-stop:
				return nil, errClosed
			default:
			}
		}
		item := it.Item()
		if len(item.Key()) != 5 {
			continue
		}
		var e negindex.Event
		err := item.Value(func(raw []byte) error {
			var err error
			e, err = decodeIndexEvent(raw)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("record %x: %w", item.Key(), err)
		}
		out = append(out, e)
	}
	return out, nil
}

var errShortRecord = errors.New("truncated event record")

// decodeIndexEvent reads eventstore v0.17.14's binary event encoding
// (internal/binary): id 32, pubkey 32, sig 64, created_at u32, kind u16,
// content length u16 and content, tag count u16, then per tag an item
// count u8 and per item a u16 length, the bytes and a zero byte. Only the first two
// items of a tag matter to a filter.
func decodeIndexEvent(raw []byte) (negindex.Event, error) {
	var e negindex.Event
	if len(raw) < 138 {
		return e, errShortRecord
	}
	copy(e.ID[:], raw[0:32])
	copy(e.PubKey[:], raw[32:64])
	e.CreatedAt = binary.BigEndian.Uint32(raw[128:132])
	e.Kind = binary.BigEndian.Uint16(raw[132:134])
	p := 136 + int(binary.BigEndian.Uint16(raw[134:136]))
	if p+2 > len(raw) {
		return e, errShortRecord
	}
	nTags := int(binary.BigEndian.Uint16(raw[p:]))
	p += 2
	for t := 0; t < nTags; t++ {
		if p >= len(raw) {
			return e, errShortRecord
		}
		nItems := int(raw[p])
		p++
		var name, value string
		for i := 0; i < nItems; i++ {
			if p+2 > len(raw) {
				return e, errShortRecord
			}
			size := int(binary.BigEndian.Uint16(raw[p:]))
			p += 2
			if p+size+1 > len(raw) {
				return e, errShortRecord
			}
			switch i {
			case 0:
				name = string(raw[p : p+size])
			case 1:
				value = string(raw[p : p+size])
			}
			p += size + 1 // each item is followed by a zero byte
		}
		if nItems >= 2 && len(name) == 1 {
			e.Tags = append(e.Tags, [2]string{name, value})
		}
	}
	return e, nil
}
