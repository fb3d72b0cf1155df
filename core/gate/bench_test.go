package gate

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// What the gate costs per event, per REQ and per idle connection against
// bare khatru is measured end to end in core/relay (BenchmarkBridge*).

var (
	benchOnce   sync.Once
	benchFrames [][]byte
)

// benchEvents signs a fixed pool of EVENT frames once.
func benchEvents(b *testing.B) [][]byte {
	benchOnce.Do(func() {
		sk := nostr.GeneratePrivateKey()
		for i := 0; i < 2000; i++ {
			evt := signedEvent(b, sk, 1, strings.Repeat("grasp ", 40), 1_700_000_000+int64(i))
			evt.Tags = nil
			frame, _ := json.Marshal([]any{"EVENT", evt})
			benchFrames = append(benchFrames, frame)
		}
	})
	return benchFrames
}

// BenchmarkScanEventFrame measures the per-frame validation pass.
func BenchmarkScanEventFrame(b *testing.B) {
	frame := benchEvents(b)[0]
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := scanFrame(frame, maxFrameDepth); err != nil {
			b.Fatal(err)
		}
	}
}
