package store

import "github.com/grasp-dev/grasp/core/outcome"

// A store that cannot take writes says why (a backend opened read-only:
// badger on a full disk, badger_readonly.go) and the shared layer refuses
// every write with that reason, before any backend sees it.

// ReadOnly says why the store refuses writes ("" when it takes them).
func (s *Store) ReadOnly() string { return s.readOnly }

// errReadOnly is the error of a write to a read-only store.
func (s *Store) errReadOnly() error {
	return outcome.Errorf(outcome.Error, "this server started read-only and refuses writes until it is restarted with room on its disk (%s)", s.readOnly)
}
