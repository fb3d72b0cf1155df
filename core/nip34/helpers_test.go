package nip34

import (
	"strings"

	"github.com/nbd-wtf/go-nostr"
)

var (
	pkA = strings.Repeat("a", 64)
	pkB = strings.Repeat("b", 64)
	pkC = strings.Repeat("c", 64)
	pkD = strings.Repeat("d", 64)
)

func ev(kind int, pubkey string, tags ...[]string) *nostr.Event {
	e := &nostr.Event{Kind: kind, PubKey: pubkey, CreatedAt: 1000}
	for _, t := range tags {
		e.Tags = append(e.Tags, nostr.Tag(t))
	}
	e.ID = e.GetID()
	return e
}

func oid(c byte) string { return strings.Repeat(string(c), 40) }
