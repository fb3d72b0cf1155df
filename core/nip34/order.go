package nip34

import "github.com/nbd-wtf/go-nostr"

// Later is the one ordering of versions of a replaceable or addressable
// event (NIP-01; maintainers-v3.md §4): the greater created_at wins, and on
// a tie the lexicographically lower id. Storage, purgatory, the latest
// announcement per author and the authoritative state all use it: ngit v3
// grinds a nonce so that a same-second replacement carries the lower id,
// and a server that kept the first-seen or the higher id would keep stale
// roles (a removal would not be honoured).
func Later(aCreatedAt int64, aID string, bCreatedAt int64, bID string) bool {
	if aCreatedAt != bCreatedAt {
		return aCreatedAt > bCreatedAt
	}
	return aID < bID
}

// LaterEvent is Later for two events.
func LaterEvent(a, b *nostr.Event) bool {
	return Later(int64(a.CreatedAt), a.ID, int64(b.CreatedAt), b.ID)
}

// MaxFutureSkew is how far ahead of the server's clock a 30617 or 30618 may
// be dated (maintainers-v3.md §6.7): a later one would pin itself as the
// latest version for as long as its date is ahead, whatever the author
// publishes after it. It holds whatever the relay's general limit is.
const MaxFutureSkew int64 = 15 * 60
