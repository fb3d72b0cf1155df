// Package git is the bare-repository store: the repositories rooted at
// <data>/git (one per owner npub and NIP-34 identifier, `Repos`; GRASP-06
// /prs/ ones under <data>/git/prs/), and every git process grasp runs:
// creation, deletion, refs and HEAD (alignment with a state, propagation to
// other maintainers' repositories through alternates or copies), the
// per-repository write lock (in this process and across instances,
// `Locker`), the hunter's fetch, prune, maintenance, backup copies under
// the locks, fsck and the integrity check's reads, the pages' bounded reads
// and archives, and the smart-HTTP service processes with the push gate's
// hooks (`StartService`, hooks.go) that core/githttp streams requests
// through. It also owns the rules of ref names (`CheckRefName`), of a
// state's refs (`StateRefs`, `HeadRef`) and of repository paths
// (`Path`, `RepoURLPath`, `ParseRepoPath`).
//
// It must never speak HTTP or decide whether a push, a read or a client
// is allowed (that is core/githttp, which imports it; never the reverse),
// never move a ref outside a repository's lock, and never depend on how
// events are stored. Its refusals (a malformed ref name, object id, path
// or identifier) are typed `outcome` errors, whose text the caller's
// client sees. It imports nothing of grasp except core/clock, core/env,
// core/nip34 and core/outcome.
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
