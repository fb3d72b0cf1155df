package hunt

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/grasp-dev/grasp/core/nip34"
)

// Need asks the hunter for git objects of one repository.
type Need struct {
	Repo nip34.RepoRef
	// OIDs are the missing objects (40 or 64 hex digits).
	OIDs []string
	// EventID is the held event that needs them; empty for a re-check of a
	// hosted repository (Recheck), which no event expiry forgets.
	EventID string
	// Sources are candidate git URLs (announcement clone URLs of every
	// authorised owner, PR clone tags). Only http and https are used.
	Sources []string
	// FromSync is true for events received from a sync peer (short delay)
	// and false for client-submitted events (a push is expected).
	FromSync bool
}

// SyncContext is the seam between the hunter's decisions and git, the
// network and the event store. GitContext is the real one.
type SyncContext interface {
	// Fetch fetches oids from url into repo's bare repository with full
	// history. It returns the oids that are present afterwards, also when
	// it fails part-way (partial success), and an error describing what
	// is still missing; use a *FetchError so the hunter can tell a dead
	// host from a missing object.
	Fetch(ctx context.Context, repo nip34.RepoRef, url string, oids []string) (fetched []string, err error)
	// Has returns the oids already present in repo.
	Has(ctx context.Context, repo nip34.RepoRef, oids []string) ([]string, error)
	// Arrived is called after objects arrived in repo; the caller releases
	// every held event whose objects are now all present.
	Arrived(ctx context.Context, repo nip34.RepoRef)
	// Drifted lists hosted repositories whose refs differ from their latest
	// accepted state, with the objects missing and where to find them.
	Drifted(ctx context.Context) ([]Need, error)
}

// Kind classifies a fetch failure.
type Kind int

const (
	// KindOther is an unclassified failure; the URL is retried next round.
	KindOther Kind = iota
	// KindNetwork is a DNS, TLS or connection failure: the host is put on
	// the naughty list.
	KindNetwork
	// KindMissing means the remote answered but lacks some objects.
	KindMissing
	// KindProtocol is any other error the remote reported (HTTP 404/5xx,
	// repository not found, protocol error). Never naughty (grasp.md §9.1).
	KindProtocol
	// KindTimeout is a fetch that ran out of time.
	KindTimeout
	// KindLocal is a failure on this side (missing bare repo, git binary).
	KindLocal
	// KindRefused is a source this server will not contact: its host is
	// (or resolves to) a loopback, private, link-local or otherwise
	// internal address. Clone URLs come from anyone's announcements, so
	// fetching them must not reach the operator's internal network (SSRF).
	KindRefused
)

var kindNames = [...]string{"other", "network", "missing", "protocol", "timeout", "local", "refused"}

func (k Kind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return "other"
	}
	return kindNames[k]
}

// FetchError is the error of a failed or partial fetch.
type FetchError struct {
	Kind    Kind
	URL     string
	Missing []string // objects known not to be on the remote
	Detail  string   // git's message, trimmed
	Err     error
}

func (e *FetchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "fetch from %s: %s", e.URL, e.Kind)
	if len(e.Missing) > 0 {
		fmt.Fprintf(&b, " (%d objects missing)", len(e.Missing))
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	} else if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *FetchError) Unwrap() error { return e.Err }

// KindOf classifies err: the Kind of a wrapped *FetchError, KindTimeout
// for a deadline, KindOther otherwise.
func KindOf(err error) Kind {
	var fe *FetchError
	switch {
	case err == nil:
		return KindOther
	case errors.As(err, &fe):
		return fe.Kind
	case errors.Is(err, context.DeadlineExceeded):
		return KindTimeout
	}
	return KindOther
}
