// Package outcome owns what became of an event on the write path, as a
// type: the Kind (stored, duplicate, held, shadowed, or why it was refused)
// and the human message. It is the one place where the NIP-01 machine
// prefix of an OK message is written (Result.Text) and the one place where
// a text that arrives with such a prefix (a plugin's verdict, a purgatory
// answer) is read back into a Kind (Accepted, Refused).
//
// Go errors that a client will see as an OK false carry their outcome as a
// *Refusal (Errorf, Of), so callers ask for the Kind with errors.As instead
// of looking at the text.
//
// It imports nothing of ours and never does I/O.
package outcome

import (
	"errors"
	"fmt"
	"strings"
)

// Kind is what became of an event.
type Kind uint8

const (
	// Stored: durably written (OK true).
	Stored Kind = iota
	// Duplicate: already stored or already held (OK true, "duplicate:").
	Duplicate
	// Held: kept in purgatory until its git data arrives (OK true,
	// "purgatory:").
	Held
	// Shadowed: neither stored nor held, but answered OK true as something
	// else (Result.Told) so the sender cannot tell.
	Shadowed
	// Outdated: a newer version of this replaceable or addressable event is
	// stored (OK false, "duplicate:").
	Outdated
	// Invalid: malformed, or over a limit (OK false, "invalid:").
	Invalid
	// Blocked: refused by a rule (OK false, "blocked:").
	Blocked
	// RateLimited: too much, too fast (OK false, "rate-limited:").
	RateLimited
	// Restricted: the sender may not write this (OK false, "restricted:").
	Restricted
	// AuthRequired: NIP-42 authentication would change the answer (OK
	// false, "auth-required:").
	AuthRequired
	// PoW: not enough proof of work (OK false, "pow:").
	PoW
	// Muted: the sender is muted (OK false, "mute:").
	Muted
	// Error: the server failed (OK false, "error:").
	Error
)

// prefixes are the NIP-01 machine-readable prefixes, by Kind; "" for Stored
// and Shadowed, which carry none of their own.
var prefixes = [...]string{
	Stored:       "",
	Duplicate:    "duplicate",
	Held:         "purgatory",
	Shadowed:     "",
	Outdated:     "duplicate",
	Invalid:      "invalid",
	Blocked:      "blocked",
	RateLimited:  "rate-limited",
	Restricted:   "restricted",
	AuthRequired: "auth-required",
	PoW:          "pow",
	Muted:        "mute",
	Error:        "error",
}

var names = [...]string{
	Stored: "stored", Duplicate: "duplicate", Held: "held", Shadowed: "shadowed",
	Outdated: "outdated", Invalid: "invalid", Blocked: "blocked", RateLimited: "rate-limited",
	Restricted: "restricted", AuthRequired: "auth-required", PoW: "pow", Muted: "mute", Error: "error",
}

func (k Kind) String() string {
	if int(k) < len(names) {
		return names[k]
	}
	return fmt.Sprintf("outcome(%d)", uint8(k))
}

// Prefix is k's NIP-01 prefix without the colon ("" for Stored and
// Shadowed). It doubles as the reason label of refusal metrics.
func (k Kind) Prefix() string {
	if int(k) < len(prefixes) {
		return prefixes[k]
	}
	return "error"
}

// OK reports whether k is answered OK true.
func (k Kind) OK() bool { return k <= Shadowed }

// Result is what became of one event, and what its sender is told.
type Result struct {
	Kind Kind
	// Msg is the human part of the OK message, without the prefix.
	Msg string
	// told is, for Shadowed, the outcome the sender is shown.
	told Kind
}

// New is a Result of kind k with the human message msg.
func New(k Kind, msg string) Result { return Result{Kind: k, Msg: msg} }

// Shadow is a shadowed result answered as the OK-true text disguise says
// (read by Accepted).
func Shadow(disguise string) Result {
	shown := Accepted(disguise)
	return Result{Kind: Shadowed, Msg: shown.Msg, told: shown.Kind}
}

// OK reports whether the sender gets OK true.
func (r Result) OK() bool { return r.Kind.OK() }

// Told is the kind the sender is shown: Kind, except for a shadowed event,
// which is shown as stored, duplicate or held.
func (r Result) Told() Kind {
	if r.Kind == Shadowed {
		return r.told
	}
	return r.Kind
}

// Text is the message of the NIP-01 OK frame: the prefix of what the sender
// is told, then the human message. It is the only function that writes a
// prefix.
func (r Result) Text() string {
	p := r.Told().Prefix()
	switch {
	case p == "":
		return r.Msg
	case r.Msg == "":
		return p + ":"
	}
	return p + ": " + r.Msg
}

// split cuts a NIP-01 prefix off text: the prefix is what precedes the
// first colon, if it has no space in it.
func split(text string) (prefix, rest string, found bool) {
	prefix, rest, found = strings.Cut(text, ":")
	if !found || strings.ContainsAny(prefix, " \t") {
		return "", text, false
	}
	return prefix, strings.TrimPrefix(rest, " "), true
}

// Accepted reads an OK-true text that arrives as text (a purgatory answer,
// a shadow's disguise): "duplicate:" is Duplicate, "purgatory:" Held, and
// anything else Stored with the text kept whole.
func Accepted(text string) Result {
	if prefix, rest, ok := split(text); ok {
		switch prefix {
		case "duplicate":
			return New(Duplicate, rest)
		case "purgatory":
			return New(Held, rest)
		}
	}
	return New(Stored, text)
}

// Refused reads an OK-false text that arrives as text (a plugin's or a
// rule's verdict): its NIP-01 prefix gives the Kind ("duplicate:" is
// Outdated); a text without one is of kind fallback, kept whole.
func Refused(text string, fallback Kind) Result {
	if prefix, rest, ok := split(text); ok {
		for k := Outdated; k <= Error; k++ {
			if prefixes[k] == prefix {
				return New(k, rest)
			}
		}
	}
	return New(fallback, text)
}

// A Refusal is a Go error that will reach a client as an OK false: it
// carries its outcome, and its text is the OK message (Result.Text).
type Refusal struct {
	Result
	// Err is the cause, if any (errors.Is/As see it).
	Err error
}

func (e *Refusal) Error() string { return e.Result.Text() }

func (e *Refusal) Unwrap() error { return e.Err }

// Errorf is a *Refusal of kind k whose message is formatted as by
// fmt.Errorf; what a %w verb wraps stays reachable by errors.Is and As.
func Errorf(k Kind, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &Refusal{Result: New(k, err.Error()), Err: err}
}

// Err is r as an error (nil when r is OK).
func Err(r Result) error {
	if r.OK() {
		return nil
	}
	return &Refusal{Result: r}
}

// Of is the outcome an error carries, and whether it carries one.
func Of(err error) (Result, bool) {
	var e *Refusal
	if errors.As(err, &e) {
		return e.Result, true
	}
	return Result{}, false
}
