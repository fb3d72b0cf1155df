// Package pages owns the server's HTML: the landing page (hosted
// repositories, searchable and paginated, the server's version, NIP-11 and
// relay links), the generated icon and favicon, the 404 page, and the
// read-only repository pages at /<npub>/<d>.git — summary (announcement,
// owner and maintainers, the clone box with the https URL, ngit's nostr://
// URL and the naddr, clone URLs and relays, branches and tags with HEAD,
// README, recent commits), tree (paginated), file (numbered, anchored lines
// coloured by chroma, raw and download links: code.go; its blame, each line
// with the commit that last changed it: blame.go), commit with its
// file list, diffstat and diff, history of a revision, a file or a
// directory, refs, tar.gz/zip snapshots (streamed by githttp.Snapshots in the
// git process slots: snapshots.go), Atom feeds of commits, issues and PRs
// (feed.go, each repository page naming them in its head), and the repository's issues, PRs and patches with their NIP-34 status, open
// counts on the tabs, and a page for each (issue.go, pr.go, patch.go,
// thread.go): the body, threaded comments, status history, labels and
// cover note, and for a PR its commits, file list, diffstat, diff and
// reviews, for a patch series its patches as one diff.
//
// The "On this server" page (status.go) and the summary show what only
// this server knows: the signed state against the served refs, purgatory,
// the hunter, the other servers of the announcement with their sync
// health, the maintainer graph, the refused pushes. They read the parts'
// own snapshots through Options.Facts and keep nothing themselves. A
// refusal is shown to everyone by its kind and time only: a page has no
// signed-in owner, pushes are anonymous, and the kind reveals nothing a
// stranger could not learn by pushing, while the pusher's refs and
// commits (which anyone could fill with text) are never shown.
//
// A discussion page shows only events anyone may read (Options.Readers,
// GRASP-08's reader check: a browser brings no key), and bounds what a
// stranger can make large: comments are read up to a limit and paginated,
// thread depth is capped, statuses, labels and cover notes are read only
// from the keys whose word counts (nip34.Roster.Speaks, the one rule), and
// diffs are cut at MaxDiffBytes.
//
// Pages are rendered on the server and readable without JavaScript; they
// are one style (layout.go). Git is read through git.Repos.Read (read-only
// commands, bounded output and time); what is read from git is cached by
// the repository's ref tips, so a repeated view costs one for-each-ref.
// Announcements and maintainers come from core/roster (the v3 rule is
// applied there, never here), statuses from nip34.CurrentStatus. README
// Markdown is content from anyone: it is rendered by goldmark and then
// sanitised by bluemonday's UGC policy before it reaches a page. Its CPU
// is a visitor's choice, so every render is bounded (bounds.go): a shape
// check before parsing (shape.go), a pool of workers with a per-client
// share, a time budget per view, and a cache by blob; past any bound the
// file is shown as plain text. Listings are paginated, and concurrent
// views of one thing read it from git once (cache.load).
//
// Whether a repository is listed and shown at all is decided by one
// function, Pages.Shown; everything here asks it. This package never
// writes: not to git, not to the store, and it never decides acceptance.
// Routing of the base path and CORS are core/relay's; paths reaching
// ServeHTTP have the base path stripped, and links written here carry it.
package pages
