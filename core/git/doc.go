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
package git
