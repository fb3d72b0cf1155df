package policy

import (
	"context"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// Source says where an event entered the server.
type Source string

const (
	SourceClient    Source = "client"    // published by a websocket client
	SourceSync      Source = "sync"      // fetched from another relay (GRASP-02)
	SourcePurgatory Source = "purgatory" // re-evaluated on release from purgatory
	// SourceRecheck: a state refused shortly before, run again because an
	// announcement of its identifier changed (maintainers-v3.md §3 [R]).
	SourceRecheck Source = "recheck"
)

// Meta describes the circumstances of one acceptance decision.
type Meta struct {
	Source     Source
	Remote     string // client IP, or the relay URL for synced events
	Authed     string // NIP-42 authenticated pubkey (hex), "" if none
	ReceivedAt time.Time
	// Archived is set by the rules for the operator's plugin chain only:
	// the event is a repository announcement this server takes as a
	// GRASP-05 archive (it does not list the server, or the server is a
	// read-only archive). Callers leave it false.
	Archived bool
	// Usage is filled for the operator's plugin chain only (Options.Usage):
	// what the author and the client's address hold here now.
	Usage *Usage
}

// Usage is what one pubkey and one client address hold here as
// refs/nostr/<id> placeholders waiting for their PR event, and the limits
// they are held to: data anyone may push (GRASP-06 /prs/ among it). The
// accept plugins see it as ctx.usage, so an operator can add payment, PoW
// or allowlist rules (issue 12 part 4, docs/plugins.md). The quotas
// themselves are enforced by purgatory before a push writes anything.
type Usage struct {
	// Pubkey: placeholders under /prs/<author npub>/ (GRASP-06). IP:
	// placeholders pushed from Meta.Remote (zero for events not from a
	// client).
	Pubkey, IP Use
	Limits     UsageLimits
}

// Use is a count of placeholders and the bytes pushed for them.
type Use struct {
	Placeholders int
	Bytes        int64
}

// UsageLimits are the placeholder quotas per pubkey and per IP (0:
// unbounded).
type UsageLimits struct {
	PlaceholdersPerPubkey, PlaceholdersPerIP int
	BytesPerPubkey, BytesPerIP               int64
}

// Action is what an Acceptor wants done with an event.
type Action int

const (
	// Accept means "no objection": later rules still run.
	Accept Action = iota
	// Reject refuses the event with Msg (a NIP-01 prefixed reason).
	Reject
	// ShadowReject answers OK true to the sender but neither stores nor
	// broadcasts the event.
	ShadowReject
)

func (a Action) String() string {
	switch a {
	case Accept:
		return "accept"
	case Reject:
		return "reject"
	case ShadowReject:
		return "shadowReject"
	}
	return "unknown"
}

// Verdict is an Acceptor's answer.
type Verdict struct {
	Action Action
	Msg    string
}

// Acceptor is one link of the acceptance chain. Implementations must be safe
// for concurrent use and must honour ctx's deadline.
type Acceptor interface {
	Accept(ctx context.Context, evt *nostr.Event, meta Meta) Verdict
}

// AcceptorFunc adapts a function to Acceptor.
type AcceptorFunc func(ctx context.Context, evt *nostr.Event, meta Meta) Verdict

func (f AcceptorFunc) Accept(ctx context.Context, evt *nostr.Event, meta Meta) Verdict {
	return f(ctx, evt, meta)
}

// Chain runs acceptors in order; the first Reject or ShadowReject wins.
type Chain []Acceptor

func (c Chain) Accept(ctx context.Context, evt *nostr.Event, meta Meta) Verdict {
	for _, a := range c {
		if v := a.Accept(ctx, evt, meta); v.Action != Accept {
			return v
		}
	}
	return Verdict{Action: Accept}
}

// Refusal is what an effect returns when it cannot carry out a decision the
// rules took, for a reason the client must hear (a quota of purgatory, a
// full disk): Msg is the NIP-01 prefixed OK text ("rate-limited: ...",
// "error: ..."). Nothing was written.
type Refusal struct{ Msg string }

func (r *Refusal) Error() string { return r.Msg }
