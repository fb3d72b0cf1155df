// Package git owns everything grasp does with git data on disk and over
// HTTP: the bare-repository store rooted at <data>/git (one repository per
// owner npub and NIP-34 identifier), the smart-HTTP handler that streams
// `git upload-pack` and `git receive-pack --stateless-rpc`, the push
// authorisation decision (a pure function of the current refs, the pushed
// ref updates and the authorised state events), ref/HEAD alignment, and
// object sharing between maintainers' repositories through git alternates.
//
// It must never buffer a pack in memory, never run receive-pack before a
// push has been authorised, and never depend on how state events are stored
// or verified: callers hand it authorised states through the Authority
// interface. It imports nothing of grasp except core/clock, core/env and
// core/nip34.
//
// Sharing objects between repositories of one identifier (security audit
// F01). A target borrows the source's objects (alternates) only when its
// caller says the source's owner is one of the target's confirmed
// maintainers (Target.Borrow); otherwise the objects are copied with a
// local fetch. A repository whose objects are borrowed never prunes in gc
// (gc.pruneExpire=never), and Delete first makes its borrowers take copies.
// Both ways were measured (BenchmarkPropagateAlternatesVsCopy: a 3000-commit
// repository, 4.6 MB of objects, propagated to 3 maintainers' repos, on the
// shared 2-core VM): borrowing took 0.08 s and 405 bytes on disk for the
// three, copying 1.42 s and 13.6 MB. Copying everywhere would be simpler
// but costs 18x the time on the relay's write path and one full copy per
// maintainer, so borrowing stays the rule between trusted repositories and
// copying is kept for the untrusted case.
package git
