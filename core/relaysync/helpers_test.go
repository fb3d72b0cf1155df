package relaysync

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

func hexID(i int) string  { return fmt.Sprintf("%064x", i) }
func pubkey(i int) string { return fmt.Sprintf("%063x%c", i, 'f') }
func repoAddr(i int) string {
	return "30617:" + pubkey(i) + ":repo" + fmt.Sprint(i)
}

func announcement(i int, relays ...string) *nostr.Event {
	tags := nostr.Tags{{"d", "repo" + fmt.Sprint(i)}}
	if len(relays) > 0 {
		tags = append(tags, append(nostr.Tag{"relays"}, relays...))
	}
	return &nostr.Event{ID: hexID(1 << 40), PubKey: pubkey(i), Kind: 30617, Tags: tags}
}

func rootEvent(kind, id int, repos ...int) *nostr.Event {
	var tags nostr.Tags
	for _, r := range repos {
		tags = append(tags, nostr.Tag{"a", repoAddr(r)})
	}
	return &nostr.Event{ID: hexID(id), PubKey: pubkey(99), Kind: kind, Tags: tags}
}

// tagValues returns the single tag key and its values of an item filter.
func tagValues(t *testing.T, f nostr.Filter) (string, []string) {
	t.Helper()
	if len(f.Tags) != 1 {
		t.Fatalf("filter has %d tag keys, want 1: %v", len(f.Tags), f)
	}
	for k, v := range f.Tags {
		return k, v
	}
	return "", nil
}

func letters(t *testing.T, fs []nostr.Filter) string {
	var b strings.Builder
	for _, f := range fs {
		k, _ := tagValues(t, f)
		b.WriteString(k)
	}
	return b.String()
}
