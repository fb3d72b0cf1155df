// Package admin owns the operator's view of a running server: the status
// report behind `grasp admin status` and the endpoint of `grasp admin
// integrity-check` (whose findings and repairs are core/hosting's). It is served on the loopback metrics
// listener, not by opening the data dir from a second process, because the
// embedded store is single-writer: badger takes an exclusive lock on its
// directory (a read-only open fails while the server holds it), and a copy
// of the files is not a consistent view. The report reads only the parts'
// own snapshots (git.Repos.List, purgatory entries, the sync manager's
// snapshot and the health tracker, the hunter's stats).
//
// It writes nothing of the data dir itself: a repair is hosting's alignment
// to the signed state, asked for with POST. A backup (backup.go) is read by
// the server and streamed to `grasp admin backup`, which writes the
// destination: the repositories under their locks (git.Repos.EachLocked),
// then the store's online dump (store.Store.Backup, one snapshot; a held
// event being released is in purgatory, the store or both, never neither),
// then the refs as copied and the hash manifest of every file, then the
// manifest that marks the backup complete. Restore writes only into an
// empty directory. Verify (verify.go) checks a backup by those hashes and
// by restoring it into a scratch directory: events, refs, git fsck.
//
// Who may ask is Guard's (guard.go): a local peer naming the listener by
// address, with no Origin and with the admin token (audit 2026-11b, F24).
// It never serves an admin path without it.
package admin
