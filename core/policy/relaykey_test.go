package policy

import (
	"testing"

	"github.com/grasp-dev/grasp/core/nip34"
)

// Issue 10 part 6: events signed by the relay's own key (relay.pubkey) are
// always accepted, whatever the reference rules, the event blacklist and the
// operator's plugin chain say (operators' CI publishes with it); the same
// events by another key are refused as before. The cheap limits still apply,
// and the repository rules (announcements, states) keep deciding what is
// hosted and who may push.
func TestG10_RelayKeyEventsAlwaysAccepted(t *testing.T) {
	relayKey := pkC
	rej := &countingAcceptor{v: Verdict{Action: Reject, Msg: "rate-limited: slow down"}}
	e := newEnv(t, func(o *Options) {
		o.RelayKey = relayKey
		o.Plugins = Chain{rej}
		o.EventBlacklist = []string{pkX}
	})
	// A CI job result (NIP-C1 kind 9842) naming a repository nobody hosts
	// here, and a note referencing nothing: refused from anyone else ...
	for _, kind := range []int{9842, 1, 0} {
		want(t, e.decide(e.event(kind, pkA, []string{"a", coord(pkB, "unknown")})), Rejected, "")
		// ... accepted from the relay's key, past the plugin chain.
		want(t, e.decide(e.event(kind, relayKey, []string{"a", coord(pkB, "unknown")})), Store, "")
	}
	// The blacklist does not reach the relay's key either (it is the
	// operator's own key); it still refuses a blacklisted author.
	e2 := newEnv(t, func(o *Options) { o.RelayKey = relayKey; o.EventBlacklist = []string{relayKey, pkX} })
	want(t, e2.decide(e2.event(1, relayKey)), Store, "")
	want(t, e2.decide(e2.event(1, pkX)), Rejected, "blocked:")
	want(t, e2.decide(e2.event(nip34.KindDeletion, relayKey, []string{"e", oid('d') + oid('d')[:24]})), Store, "")

	// The cheap limits still apply to it.
	pre := &countingAcceptor{v: Verdict{Action: Reject, Msg: "invalid: too many tags"}}
	e3 := newEnv(t, func(o *Options) { o.RelayKey = relayKey; o.Pre = Chain{pre} })
	want(t, e3.decide(e3.event(1, relayKey)), Rejected, "invalid: too many tags")

	// Repository rules stay: an announcement not listing this service is
	// refused, one listing it is taken past the plugin chain, and a state
	// for someone else's repository gives the relay's key no push authority.
	want(t, e.decide(e.ann(relayKey, "ci", false)), Rejected, "invalid:")
	if d := e.decide(e.ann(relayKey, "ci", true)); d.Outcome == Rejected {
		t.Fatalf("relay key's listed announcement refused: %q", d.Msg)
	}
	e.stored(e.ann(pkA, "r", true))
	want(t, e.decide(e.state(relayKey, "r", "refs/heads/main", oid('1'))), Rejected, "")
	// Control: without RelayKey the same key's CI event is refused.
	e4 := newEnv(t, nil)
	want(t, e4.decide(e4.event(9842, relayKey, []string{"a", coord(pkB, "unknown")})), Rejected, "")
}
