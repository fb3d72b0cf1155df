package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/diskspace"
	"github.com/grasp-dev/grasp/core/outcome"
	"github.com/grasp-dev/grasp/core/store"
)

// A full disk is survivable (issue 24 part 7, audit 2026-11 F12 follow-up).
// A server started with its data directory below server.min_free_mb, or on
// a disk with no room to open the store for writing at all, opens the
// store read-only (core/store/badger_readonly.go): it serves reads, refuses every
// write with "error:", and says what the operator must free. Getting out
// of it takes a restart once there is room.

// roomToOpen is what the operator is told to free when no watermark is
// set (server.min_free_mb = 0): room for badger's memtables and a value-log
// file, written as soon as the store is opened for writing.
const roomToOpen = 64 << 20

// readOnlyOnFullDisk sets opts to open the badger store read-only when the
// data directory is below its watermark at start: no write would be taken
// anyway, and a store opened for writing on a full disk cannot even write
// its lock file. A data dir without a store yet is created as usual.
func readOnlyOnFullDisk(cfg config.Config, opts *store.Options) {
	min := uint64(max(cfg.Server.MinFreeMB, 0)) << 20
	if cfg.Store.Backend == store.BackendPostgres || min == 0 {
		return
	}
	if _, err := os.Stat(filepath.Join(cfg.Server.DataDir, "store", "MANIFEST")); err != nil {
		return
	}
	free, err := diskspace.Free(cfg.Server.DataDir)
	if err != nil || free >= min {
		return
	}
	opts.ReadOnly = true
	opts.ReadOnlyReason = fmt.Sprintf("it started with %d MiB free on the disk of %s, below server.min_free_mb = %d",
		free>>20, cfg.Server.DataDir, cfg.Server.MinFreeMB)
}

// writable is nil when a write may go ahead: the disk is above its
// watermark and the store takes writes. Its error is the client's answer.
func (s *Server) writable() error {
	if err := s.space.Check(); err != nil {
		return err
	}
	if r := s.store.ReadOnly(); r != "" {
		return outcome.Errorf(outcome.Error, "this server is read-only: it started on a full disk and refuses writes until its operator frees space and restarts it")
	}
	return nil
}

// reportReadOnly tells the operator, at start and then every few minutes
// while it lasts, that the store is read-only and what to free; once there
// is room again, that a restart takes writes again.
func (s *Server) reportReadOnly(free func(string) (uint64, error)) {
	why := s.store.ReadOnly()
	if why == "" {
		return
	}
	if free == nil {
		free = diskspace.Free
	}
	dir := s.cfg.Server.DataDir
	min := uint64(max(s.cfg.Server.MinFreeMB, 0)) << 20
	if min == 0 {
		min = roomToOpen
	}
	say := func(log func(string, ...any)) {
		n, err := free(dir)
		if err != nil {
			log("the store is read-only: writes are refused until space is freed and grasp restarted",
				"reason", why, "data_dir", dir, "statfs_error", err)
			return
		}
		if n >= min {
			log("there is room on the disk again: restart grasp to take writes again",
				"data_dir", dir, "free_mib", n>>20, "min_free_mb", min>>20)
			return
		}
		need := min - n
		log(fmt.Sprintf("the store is read-only: free at least %d MiB on the disk of %s, then restart grasp; until then it serves reads and refuses writes", (need+1<<20-1)>>20, dir),
			"reason", why, "free_mib", n>>20, "min_free_mb", min>>20)
	}
	say(s.log.Error)
	s.sched.Every("read-only-report", 10*time.Minute, func(context.Context) error {
		say(s.log.Warn)
		return nil
	})
}
