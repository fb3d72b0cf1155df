// Package hunt owns the git-data hunter of purgatory: the queue of
// repositories whose held events wait for git objects, the per-domain
// throttle (concurrency, sliding-minute rate, round robin between
// repositories), the naughty list of unreachable hosts, and the real
// SyncContext (GitContext): which sources may be contacted, with what pinned
// address, and how a failed fetch is bisected and classified. It never runs
// git itself: fetches and object checks go through git.Repos, under the
// per-repository lock every write to a bare repository takes.
//
// One goroutine (Run) owns all of that state; everything else talks to it
// through a mailbox. Fetch tasks run in their own goroutines and ask the
// owner for a throttle slot before every request, so the throttle is never
// polled: a slot is handed out when one frees, when a repository is queued,
// or when the rate window of a waiting domain opens.
//
// The hunter never decides which events are released: after every fetch it
// calls SyncContext.Arrived and the caller releases whatever is now complete.
// It never fetches shallow, never follows non-HTTP(S) sources, and never
// fetches from this server's own URLs.
package hunt
