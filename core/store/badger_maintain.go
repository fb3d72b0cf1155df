package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/dgraph-io/badger/v4"
)

const (
	// expiryChunk bounds the keys one maintenance transaction deletes, well
	// below badger's transaction size limit.
	expiryChunk = 1000
	// maxVlogRewrites bounds value-log GC work per Maintain call.
	maxVlogRewrites = 8
	// vlogDiscardRatio: rewrite a value-log file once half of it is garbage.
	vlogDiscardRatio = 0.5
)

// maintain sweeps orphaned content records, garbage-collects the value log
// and refreshes the size gauges (after Maintain removed expired side
// entries).
func (s *badgerStore) maintain(ctx context.Context) error {
	if s.hasLarge.Load() {
		sweep := &op{kind: opSweep}
		if err := s.w.submit(ctx, sweep); err != nil {
			return fmt.Errorf("store maintenance: sweep large contents: %w", err)
		}
		if sweep.swept > 0 {
			s.log.Debug("removed orphaned large contents", "count", sweep.swept)
		}
	}

	if err := s.collectValueLog(ctx); err != nil {
		return err
	}

	sizes, err := s.diskSizes()
	if err != nil {
		return fmt.Errorf("store maintenance: %w", err)
	}
	for part, n := range sizes {
		s.m.sizeBytes.WithLabelValues(part).Set(float64(n))
	}
	var keys uint64
	for _, t := range s.db.Tables() {
		keys += uint64(t.KeyCount)
	}
	s.m.keys.Set(float64(keys))
	return nil
}

// collectValueLog runs badger's value-log GC, under gcMu (see
// dropResident).
func (s *badgerStore) collectValueLog(ctx context.Context) error {
	s.gcMu.Lock()
	defer s.gcMu.Unlock()
	for i := 0; i < maxVlogRewrites; i++ {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("store maintenance: value-log GC: %w", err)
		}
		err := s.db.RunValueLogGC(vlogDiscardRatio)
		if errors.Is(err, badger.ErrNoRewrite) || errors.Is(err, badger.ErrRejected) {
			break
		}
		if err != nil {
			return fmt.Errorf("store maintenance: value-log GC: %w", err)
		}
		s.m.vlogRewrites.Inc()
	}
	return nil
}

// removeExpired deletes side entries whose expiry has passed, a chunk at a
// time. It returns the live entries it saw and how many it removed.
func (s *badgerStore) removeExpired(ctx context.Context) (live, removed int, err error) {
	prefix := []byte{sidePrefix}
	cursor := prefix
	now := s.env.Clock.Now()
	for {
		if err := ctx.Err(); err != nil {
			return live, removed, err
		}
		var (
			expiredKeys [][]byte
			next        []byte
		)
		err := s.db.View(func(txn *badger.Txn) error {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
			defer it.Close()
			for it.Seek(cursor); it.ValidForPrefix(prefix); it.Next() {
				item := it.Item()
				if len(expiredKeys) == expiryChunk {
					next = item.KeyCopy(nil)
					return nil
				}
				err := item.Value(func(raw []byte) error {
					_, expires, err := decodeSideValue(raw)
					if err != nil {
						return fmt.Errorf("side entry %q: %w", item.Key(), err)
					}
					if expired(expires, now) {
						expiredKeys = append(expiredKeys, item.KeyCopy(nil))
					} else {
						live++
					}
					return nil
				})
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return live, removed, fmt.Errorf("scan side entries: %w", err)
		}
		n, err := s.deleteIfExpired(expiredKeys, now)
		removed += n
		if err != nil {
			return live, removed, err
		}
		if next == nil {
			return live, removed, nil
		}
		cursor = next
	}
}

// deleteIfExpired re-reads each key in the deleting transaction, under the
// side-table lock, so an entry renewed since the scan survives.
func (s *badgerStore) deleteIfExpired(keys [][]byte, now time.Time) (int, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	s.sideMu.Lock()
	defer s.sideMu.Unlock()
	n := 0
	err := s.db.Update(func(txn *badger.Txn) error {
		n = 0
		for _, k := range keys {
			item, err := txn.Get(k)
			if errors.Is(err, badger.ErrKeyNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			raw, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			_, expires, err := decodeSideValue(raw)
			if err != nil {
				return err
			}
			if !expired(expires, now) {
				continue
			}
			if err := txn.Delete(k); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("delete expired side entries: %w", err)
	}
	return n, nil
}

// diskSizes sums the database files by part. badger's own Size() is refreshed
// only once a minute, so it reads as zero on a young store.
func (s *badgerStore) diskSizes() (map[string]int64, error) {
	entries, err := os.ReadDir(s.dbDir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", s.dbDir, err)
	}
	sizes := map[string]int64{"lsm": 0, "vlog": 0, "wal": 0, "other": 0}
	for _, e := range entries {
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // compacted or flushed away meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("stat %s: %w", e.Name(), err)
		}
		part := "other"
		switch filepath.Ext(e.Name()) {
		case ".sst":
			part = "lsm"
		case ".vlog":
			part = "vlog"
		case ".mem":
			part = "wal"
		}
		sizes[part] += info.Size()
	}
	return sizes, nil
}
