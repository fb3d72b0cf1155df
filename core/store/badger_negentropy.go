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

// startNegIndex takes the snapshot and starts loading it; call before the
// writer runs.
func (s *badgerStore) startNegIndex() {
	n := &negIndex{ix: negindex.New(nil), building: true, stop: make(chan struct{}), done: make(chan struct{})}
	n.ix.SetClock(s.env.Clock) // the whole-store set's hold
	s.neg = n
	txn := s.db.NewTransaction(false)
	go func() {
		defer close(n.done)
		defer txn.Discard()
		loader := n.ix.NewLoader()
		err := loadIndexEvents(txn, n.stop, n.ix, loader.Add)
		if err == nil {
			loader.Finish()
		}
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
func (s *badgerStore) indexed(add bool, evt *nostr.Event) {
	if s.neg != nil {
		s.neg.record(add, evt)
	}
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

// negentropyStorage answers from the index once it is loaded (waiting up
// to indexLoadWait for it); not while it is broken, nor for a filter it
// does not cover.
func (s *badgerStore) negentropyStorage(_ context.Context, f nostr.Filter, max int) (st negentropy.Storage, ok bool, err error) {
	if s.neg == nil || !s.neg.usableSoon() {
		return nil, false, nil
	}
	snap, ok, err := s.neg.ix.Select(f, max)
	if !ok || err != nil {
		return nil, ok, err
	}
	s.m.queries.WithLabelValues("negentropy_index").Inc()
	return snap, true, nil
}

// loadIndexEvents reads every raw event record of the snapshot, decoding
// only what the index keeps, and hands each to add (which must not keep
// it): the records are never all in memory at once.
func loadIndexEvents(txn *badger.Txn, stop <-chan struct{}, ix *negindex.Index, add func(*negindex.Event)) error {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{keyRaw}, PrefetchValues: true, PrefetchSize: 64})
	defer it.Close()
	var e negindex.Event
	n := 0
	for it.Rewind(); it.Valid(); it.Next() {
		if n++; n%4096 == 0 {
			select {
			case <-stop:
				return errClosed
			default:
			}
		}
		item := it.Item()
		if len(item.Key()) != 5 {
			continue
		}
		err := item.Value(func(raw []byte) error { return decodeIndexEvent(raw, ix, &e) })
		if err != nil {
			return fmt.Errorf("record %x: %w", item.Key(), err)
		}
		add(&e)
	}
	return nil
}

var errShortRecord = errors.New("truncated event record")

// decodeIndexEvent reads what the index keeps of a record (badger_codec.go)
// into e, reusing its tag list: the tags of letters the index holds, their
// first two items only (all a filter looks at).
func decodeIndexEvent(raw []byte, ix *negindex.Index, e *negindex.Event) error {
	if len(raw) < recMin {
		return errShortRecord
	}
	copy(e.ID[:], raw[recID:recPubkey])
	copy(e.PubKey[:], raw[recPubkey:recSig])
	e.CreatedAt = binary.BigEndian.Uint32(raw[recCreatedAt:])
	e.Kind = binary.BigEndian.Uint16(raw[recKind:])
	e.Tags = e.Tags[:0]
	p := recContent + 2 + int(binary.BigEndian.Uint16(raw[recContent:]))
	if p+2 > len(raw) {
		return errShortRecord
	}
	nTags := int(binary.BigEndian.Uint16(raw[p:]))
	p += 2
	for t := 0; t < nTags; t++ {
		if p >= len(raw) {
			return errShortRecord
		}
		nItems := int(raw[p])
		p++
		var name []byte
		for i := 0; i < nItems; i++ {
			if p+2 > len(raw) {
				return errShortRecord
			}
			size := int(binary.BigEndian.Uint16(raw[p:]))
			p += 2
			if p+size+1 > len(raw) {
				return errShortRecord
			}
			switch {
			case i == 0:
				name = raw[p : p+size]
			case i == 1 && len(name) == 1 && ix.Indexes(string(name)):
				e.Tags = append(e.Tags, [2]string{string(name), string(raw[p : p+size])})
			}
			p += size + 1 // each item is followed by a zero byte
		}
	}
	return nil
}
