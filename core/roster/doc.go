// Package roster owns who speaks for a repository here: it loads the latest
// accepted announcement of one author with one identifier (from the store
// and from purgatory, ordered by nip34.Later), resolves the v3 maintainer
// roster of a repository path with nip34.Resolve (maintainers-v3.md), and
// answers the questions built on it — which hosted repositories a state's
// author speaks for, whose announcements are trusted for clone and relay
// URLs, and which announcements invite an author.
//
// Policy (acceptance) and hosting (push authority, alignment, propagation,
// the hunter's sources) both read announcements through it, so the rule is
// applied in one place.
//
// It walks authors, starting from the owner: it never reads "every
// announcement with this identifier", because anyone can publish those, and
// a truncated scan let 600 throwaway keys push the owner's own announcement
// out (security audit F03). It never decides acceptance and never touches
// git.
package roster
