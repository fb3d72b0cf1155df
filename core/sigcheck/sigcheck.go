// Package sigcheck owns the check of a Nostr event's id and signature on the
// write path: the id is the SHA-256 of the event's serialisation and the
// signature a BIP-340 Schnorr signature of that id by the event's pubkey.
//
// It exists because that check bounds ingest (issue 27 part 5): go-nostr's
// CheckID and CheckSignature serialise and hash the event twice, and the pure
// Go verifier decompresses the author's key (a field square root, ~15 % of a
// verification) twice per event. Event serialises and hashes once and, in the
// default build, keeps the decompressed keys of recent authors in a bounded
// table, so an author's second event skips both square roots. Built with
// -tags libsecp256k1, the signature is checked by go-nostr's cgo binding of
// bitcoin-core's library instead.
//
// It decides nothing else about an event and never touches storage. Imports
// only core/nip34 (the 64-hex check).
package sigcheck

import (
	"crypto/sha256"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
)

// Result is what Event found.
type Result int

const (
	// Valid: the id is the event's hash and the signature verifies.
	Valid Result = iota
	// BadID: the id is not the hash of the event (or not 64 hex digits).
	BadID
	// BadSignature: the id is right, the signature (or the pubkey) is not.
	BadSignature
)

// Event checks evt's id, then its signature (see the package doc).
func Event(evt *nostr.Event) Result {
	var id [32]byte
	if !nip34.DecodeHex64(evt.ID, &id) { // lowercase, as the hash is written
		return BadID
	}
	hash := sha256.Sum256(evt.Serialize())
	if hash != id {
		return BadID
	}
	if !verify(evt, &hash) {
		return BadSignature
	}
	return Valid
}
