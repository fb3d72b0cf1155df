package relaysync

import (
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// CatchUp tells the connection layer how to fetch a subscription's stored
// events before it goes live. Either way it reports SubscriptionDone once the
// stored events are in.
type CatchUp uint8

const (
	// CatchUpReq: plain REQ until EOSE (with until-pagination if the relay
	// caps results), then keep the subscription open for live events.
	CatchUpReq CatchUp = iota
	// CatchUpNegentropy: NIP-77 reconciliation per filter, falling back to
	// CatchUpReq if the relay does not support it; then a live REQ.
	CatchUpNegentropy
)

func (c CatchUp) String() string {
	if c == CatchUpNegentropy {
		return "negentropy"
	}
	return "req"
}

// ReconnectPlan is the 15-minute rule. A relay never connected, or last seen
// connected more than window ago, gets a fresh sync (confirmed state cleared,
// full history). Otherwise it is a quick reconnect: everything confirmed is
// resubscribed from since = last seen connected − window, which covers the
// gap and any clock skew between the relays.
func ReconnectPlan(lastConnected, now time.Time, window time.Duration) (fresh bool, since time.Time) {
	if lastConnected.IsZero() || now.Sub(lastConnected) > window {
		return true, time.Time{}
	}
	return false, lastConnected.Add(-window)
}

// DailyDelay is when a relay's next daily fresh sync is due: uniformly in
// [lo, hi) for r in [0,1), so that relays connected together do not all
// resync together.
func DailyDelay(lo, hi time.Duration, r float64) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(r*float64(hi-lo))
}

func timestamp(t time.Time) *nostr.Timestamp {
	ts := nostr.Timestamp(t.Unix())
	return &ts
}
