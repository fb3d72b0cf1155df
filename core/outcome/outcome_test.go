package outcome

import (
	"errors"
	"fmt"
	"io"
	"testing"
)

// The OK frame's text is written here alone: every kind gets its NIP-01
// prefix, OK-true kinds their own, and a shadow shows its disguise.
func TestTextWritesTheNIP01Prefix(t *testing.T) {
	cases := []struct {
		r    Result
		ok   bool
		text string
	}{
		{New(Stored, ""), true, ""},
		{New(Duplicate, "already have this event"), true, "duplicate: already have this event"},
		{New(Held, "won't be served until git data arrives"), true, "purgatory: won't be served until git data arrives"},
		{Shadow(""), true, ""},
		{Shadow("duplicate: in purgatory"), true, "duplicate: in purgatory"},
		{Shadow("anything at all"), true, "anything at all"},
		{New(Outdated, "have a newer version of this event"), false, "duplicate: have a newer version of this event"},
		{New(Invalid, "signature is invalid"), false, "invalid: signature is invalid"},
		{New(Blocked, "x"), false, "blocked: x"},
		{New(RateLimited, "slow down"), false, "rate-limited: slow down"},
		{New(Restricted, "not a member"), false, "restricted: not a member"},
		{New(AuthRequired, "who are you"), false, "auth-required: who are you"},
		{New(PoW, "difficulty 20"), false, "pow: difficulty 20"},
		{New(Muted, "muted"), false, "mute: muted"},
		{New(Error, "could not save the event"), false, "error: could not save the event"},
		{New(Error, ""), false, "error:"},
	}
	for _, c := range cases {
		if c.r.OK() != c.ok || c.r.Text() != c.text {
			t.Errorf("%v %q: OK %v text %q, want %v %q", c.r.Kind, c.r.Msg, c.r.OK(), c.r.Text(), c.ok, c.text)
		}
	}
}

// Texts that arrive as text (plugins' verdicts, purgatory's answers) are
// read back into the kind their prefix names, and written out unchanged.
func TestAcceptedAndRefusedReadPrefixes(t *testing.T) {
	for _, text := range []string{"invalid: too many tags", "blocked: no", "rate-limited: wait",
		"restricted: members only", "auth-required: sign in", "pow: more", "mute: shh", "error: boom",
		"duplicate: have a newer version"} {
		r := Refused(text, Blocked)
		if r.OK() || r.Text() != text {
			t.Errorf("Refused(%q) = %v %q, text %q", text, r.Kind, r.Msg, r.Text())
		}
	}
	if r := Refused("duplicate: newer", Blocked); r.Kind != Outdated {
		t.Errorf("a refused duplicate is %v, want outdated", r.Kind)
	}
	if r := Refused("no prefix here: at all", Blocked); r.Kind != Blocked || r.Text() != "blocked: no prefix here: at all" {
		t.Errorf("unprefixed refusal = %v %q", r.Kind, r.Text())
	}
	if r := Refused("purgatory: not a refusal", Error); r.Kind != Error {
		t.Errorf("purgatory: is no refusal prefix, got %v", r.Kind)
	}
	if r := Accepted("purgatory: waiting"); r.Kind != Held || r.Text() != "purgatory: waiting" {
		t.Errorf("Accepted purgatory = %v %q", r.Kind, r.Text())
	}
	if r := Accepted("duplicate: in purgatory"); r.Kind != Duplicate || r.Text() != "duplicate: in purgatory" {
		t.Errorf("Accepted duplicate = %v %q", r.Kind, r.Text())
	}
	if r := Shadow("duplicate: a newer announcement exists"); r.Kind != Shadowed || r.Told() != Duplicate || !r.OK() {
		t.Errorf("a shadow is %v told %v", r.Kind, r.Told())
	}
}

// A refusal made as a Go error keeps its kind through wrapping, prints as
// its OK text, and unwraps to its cause.
func TestRefusalCarriesItsKind(t *testing.T) {
	err := fmt.Errorf("store: %w", Errorf(Invalid, "event id %q is not 64 hex: %w", "zz", io.ErrUnexpectedEOF))
	r, ok := Of(err)
	if !ok || r.Kind != Invalid {
		t.Fatalf("Of(%v) = %v %v", err, r.Kind, ok)
	}
	if got := err.Error(); got != `store: invalid: event id "zz" is not 64 hex: unexpected EOF` {
		t.Errorf("text = %q", got)
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Error("the cause is lost")
	}
	if _, ok := Of(errors.New("invalid: plain text")); ok {
		t.Error("a plain error has no outcome")
	}
	if Err(New(Duplicate, "x")) != nil || Err(New(Blocked, "x")) == nil {
		t.Error("Err must be nil exactly for OK results")
	}
}
