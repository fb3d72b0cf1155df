// Package visibility owns GRASP-08's one question: who may see an event or
// a repository here, and who may write one. A repository is private when
// the service is (grasp.private), or when any confirmed maintainer's
// announcement (v3 roster, core/roster) carries ["private","true"]; its
// readers are the configured members, the relay's own key and that roster
// (with the announcing key itself). An event is private when it is a
// private repository's announcement or state, names one by `a`/`A`, or
// names by `e`/`E`/`q` an event that does; in service-wide private mode
// every event is, and its readers are the members of the service (the
// configured keys, the relay's key, and the confirmed maintainers of the
// repositories hosted here). Kind 10318 (a user's private server list) is
// read by its author alone.
//
// The gate (REQ, COUNT, NEG-OPEN, live delivery, EVENT), the git handler
// (NIP-98 on every smart-HTTP request) and the pages ask it; they enforce,
// it decides. It reads announcements only through core/roster and events
// only by id, and keeps a bounded memory of which identifiers carry a
// private flag (so a server with no private repository pays one atomic load
// per event) and of the repositories and referenced events it resolved.
// It never writes, never decides acceptance, and never touches git.
package visibility
