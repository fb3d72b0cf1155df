package store

import (
	"context"
	"fmt"
)

// Maintain is the periodic housekeeping the scheduler runs: it removes
// expired side entries, then runs the backend's own (badger: orphaned
// content records, value-log GC, the size gauges). It stops early, returning ctx's error, when ctx is
// done.
func (s *Store) Maintain(ctx context.Context) error {
	if s.closed.Load() {
		return errClosed
	}
	if s.readOnly != "" {
		return nil // nothing may be written, not even garbage collected
	}
	live, removed, err := s.be.removeExpired(ctx)
	if removed > 0 {
		s.m.sideExpired.Add(float64(removed))
		s.log.Debug("removed expired side entries", "count", removed)
	}
	if err != nil {
		return fmt.Errorf("store maintenance: %w", err)
	}
	s.m.sideEntries.Set(float64(live))
	return s.be.maintain(ctx)
}
