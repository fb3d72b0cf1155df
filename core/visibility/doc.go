// Package visibility owns GRASP-08's one question: who may see an event or
// a repository here, and who may write one; and it decides, once, when an
// event is accepted, what that answer rests on (issue 23).
//
// A repository is private when the service is (grasp.private), or when it
// was ever private here: its owner's or a confirmed maintainer's
// announcement carried ["private","true"] (v3 roster, core/roster), it is
// a hosted repository with no announcement when the record was first
// built, or it is a GRASP-06 /prs/ repository holding a private
// repository's PR. That is written down in the durable record beside the
// events (core/store's Privacy, on both backends) and never undone by the
// absence of anything; only the owner's newer announcement with
// ["private","false"] makes a repository public again (repos.go). Its
// readers are the configured members (grasp.private_members, the relay's
// key), its owner and its confirmed maintainers.
//
// An event belongs to the repositories it is (announcement, state), names
// (a/A/q) and reaches through the events it references (e/E/q); the last
// are resolved when the event is accepted and recorded with it (Record,
// record.go), so a deleted ancestor never makes it public. Kind 10318 (a
// user's private server list) is read by its author alone.
//
// The gate (REQ, COUNT, NEG-OPEN, live delivery, EVENT), the git handler
// (NIP-98 on every smart-HTTP request, /prs/ included), the pages (public
// events and repositories only), sync and the hunter ask it; they enforce,
// it decides (readers.go). When readers leave a repository (a roster or
// grasp.private_members changes, here or on another instance through the
// record) the keys are told (OnRevoke), and the gate ends what they have
// open. It never touches git and never decides acceptance beyond refusing
// a new private repository where privacy is not offered.
package visibility
