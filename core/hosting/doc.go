// Package hosting owns the GRASP-01 effects: what happens to bare
// repositories and to purgatory once the acceptance pipeline has decided
// about an event or a push has landed. It holds events in purgatory (and
// creates the announced bare repo at once), releases them when their git
// data is present, aligns repos to the latest authoritative state,
// propagates a state to the other maintainers' repos here, adopts the data
// a newly announced repo already has, retires repos no longer announced,
// binds or deletes refs/nostr/<id> placeholders, applies NIP-09 deletions to
// purgatory, expires what waited too long, and answers the questions push
// authorisation asks (githttp.Authority). It also gives the git-data hunter its
// sources and re-check list.
//
// Every operation (a stored or held event, a push, a hunt arrival, a sweep)
// reads each repository identifier once: view.go builds one view (the
// announcements, each owner's authorised maintainer set, the states) and the
// operation passes it down. That builder is the one place where
// announcements are loaded and the maintainer rule is applied.
//
// It never decides acceptance (core/policy does; releases are re-checked
// through it), never runs git itself (every read and write of a bare repo
// goes through git.Repos and its per-repository lock), and never touches
// GRASP-02 sync state (core/relaysync follows purgatory through its hooks).
package hosting
