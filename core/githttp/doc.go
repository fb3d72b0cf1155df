// Package githttp is grasp's git smart-HTTP server: the handler mounted at
// /<npub>/<percent-encoded id>.git/{info/refs, git-upload-pack,
// git-receive-pack} and, with GRASP-06, under /prs/ (`NewHandler`,
// `Routed`). It owns what a request may cost and who may make it: the
// request body's bounds (size, gzip, rate: bodyrate.go), the git process
// slots in total and per client (slots.go), GRASP-08's NIP-98 token on
// private repositories (nip98.go, through `core/nip98`), the push
// decision (`Authorize`, `AuthorizePRs`: pure functions of the current
// refs, the pushed ref updates and the authorised states), the push gate
// that decides again under the repository's lock (pushgate.go), the
// placeholder and /prs/ quota hooks, the pkt-line reading of a push's
// commands and the git-protocol answers to a refused one, the refusals
// remembered for the repository pages (`Refusals`), the pages' snapshot
// and raw-file downloads in the same slots (`Snapshots`), and the
// grasp_git_* and grasp_prs_* metrics.
//
// Every git process and every file of a repository is core/git's: this
// package asks `git.Repos` for them and never runs git or touches the
// data directory itself. It must never buffer a pack in memory, never let
// receive-pack move a ref before the push is authorised (the pre-receive
// hook asks the push gate, which holds the lock until the refs moved), and
// never depend on how state events are stored or verified: callers hand it
// authorised states through the Authority interface.
package githttp
