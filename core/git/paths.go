package git

import (
	"net/url"
	"strings"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/outcome"
)

// ValidateIdentifier checks a NIP-34 `d` identifier before it is used as a
// directory name; the rule is nip34's, the one every package uses. The
// identifier is kept verbatim on disk (spaces and emoji included, G01-G1b).
func ValidateIdentifier(id string) error {
	if err := nip34.ValidateIdentifier(id); err != nil {
		return outcome.Errorf(outcome.Invalid, "%w", err)
	}
	return nil
}

// DecodeNpub validates a bech32 npub and returns the public key as 64
// lowercase hex characters. The owner segment of every path goes through it,
// so a directory name can only ever be a well-formed npub.
func DecodeNpub(npub string) (string, error) {
	if npub != strings.ToLower(npub) {
		// bech32 allows all-caps, but a directory name must have one
		// spelling per key
		return "", outcome.Errorf(outcome.Invalid, "owner %q must be a lowercase npub", Clip(npub, 80))
	}
	hex, err := nip34.DecodeNpub(npub)
	if err != nil {
		return "", outcome.Errorf(outcome.Invalid, "owner %q is not an npub: %w", Clip(npub, 80), err)
	}
	return hex, nil
}

// EncodeNpub is the inverse of DecodeNpub.
func EncodeNpub(pubkeyHex string) (string, error) {
	n := nip34.Npub(pubkeyHex)
	if n == "" {
		return "", outcome.Errorf(outcome.Invalid, "public key %q is not 64 lowercase hex characters", Clip(pubkeyHex, 80))
	}
	return n, nil
}

// refOf names the repository of a URL path's owner segment (an npub) and
// identifier.
func refOf(owner, id string) (nip34.RepoRef, error) {
	hex, err := DecodeNpub(owner)
	if err != nil {
		return nip34.RepoRef{}, err
	}
	return nip34.RepoRef{Pubkey: hex, Identifier: id}, nil
}

// RepoURLPath is the URL path of a repository: /<npub>/<percent-encoded id>.git.
func RepoURLPath(npub, id string) string {
	return "/" + npub + "/" + url.PathEscape(id) + ".git"
}

// SplitRepoPath splits /<owner>/<pct-id>.git[/<sub>] without validating the
// owner or identifier. sub is "" for the repository page.
func SplitRepoPath(escapedPath string) (owner, id, sub string, ok bool) {
	p := strings.TrimPrefix(escapedPath, "/")
	owner, rest, found := strings.Cut(p, "/")
	if !found || !strings.HasPrefix(owner, "npub1") {
		return "", "", "", false
	}
	seg, sub, _ := strings.Cut(rest, "/")
	if !strings.HasSuffix(seg, ".git") {
		return "", "", "", false
	}
	raw, err := url.PathUnescape(strings.TrimSuffix(seg, ".git"))
	if err != nil {
		return "", "", "", false
	}
	return owner, raw, sub, true
}

// Clip cuts s to n bytes, marked with an ellipsis: how a stranger's text (a
// ref name, an object id, git's stderr) is quoted in a message or a log.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// ParseRepoPath reads an escaped URL path /<npub>/<pct-id>.git[/<sub>]
// (base path stripped) into the repository it names, validated like every
// repository path, and the escaped rest after ".git/" ("" for the
// repository itself).
func ParseRepoPath(escapedPath string) (repo nip34.RepoRef, sub string, err error) {
	owner, id, sub, ok := SplitRepoPath(escapedPath)
	if !ok {
		return nip34.RepoRef{}, "", outcome.Errorf(outcome.Invalid, "%q is not a repository path", Clip(escapedPath, 120))
	}
	repo, err = refOf(owner, id)
	if err == nil {
		err = ValidateIdentifier(id)
	}
	return repo, sub, err
}
