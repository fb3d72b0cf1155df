package policy

import (
	"context"

	"github.com/nbd-wtf/go-nostr"
)

// Outcome is the pipeline's final decision about an event.
type Outcome int

const (
	// Store: save the event in the main store and broadcast it.
	Store Outcome = iota
	// Reject: answer OK false with Decision.Msg.
	Rejected
	// Shadow: answer OK true, but neither store nor broadcast.
	Shadow
	// Hold: accept (OK true, Decision.Msg starting "purgatory:") and keep the
	// event in purgatory, unserved, until its git data exists.
	Hold
)

func (o Outcome) String() string {
	switch o {
	case Store:
		return "store"
	case Rejected:
		return "reject"
	case Shadow:
		return "shadow"
	case Hold:
		return "hold"
	}
	return "unknown"
}

// Decision is the pipeline's answer for one event.
type Decision struct {
	Outcome Outcome
	// Msg is the NIP-01 prefixed OK message ("invalid: ...", "purgatory: ...").
	Msg string
	// Effects are the side effects the caller must carry out with this
	// outcome (create or remove a bare repo, replace or evict a held entry,
	// align refs, what a held event waits for). Nil for plain decisions.
	Effects []Effect
	// Archived: a repository announcement accepted as a GRASP-05 archive
	// (core/archive). The plugin chain sees it (Meta.Archived) and hosting
	// logs and counts it.
	Archived bool
	// Invited: a repository announcement held while an accepted (served)
	// announcement of its identifier names its author in an M, m, o or
	// maintainers entry. Purgatory's per-identifier cap neither counts nor
	// refuses it, so strangers parking announcements of an identifier
	// cannot lock out the keys its owner invited (audit F31).
	Invited bool
}

// Pipeline turns an incoming event into a Decision: limits, then the GRASP
// rules, then the operator's Acceptor chain. The relay calls it for client
// events, the syncer for synced events; both get the same answer for the
// same event and state.
type Pipeline interface {
	Decide(ctx context.Context, evt *nostr.Event, meta Meta) Decision
}

// AcceptAll is a Pipeline that stores everything; it is what a bare relay
// without GRASP rules does, and what benchmarks compare against.
type AcceptAll struct{}

func (AcceptAll) Decide(context.Context, *nostr.Event, Meta) Decision {
	return Decision{Outcome: Store}
}
