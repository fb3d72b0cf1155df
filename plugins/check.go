package plugins

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/policy"
)

// Check is `grasp check-config` for plugins: it compiles every file, warms
// one runtime and checks each file exports what its section needs, without
// serving anything.
func Check(opts Options) error {
	opts.PoolSize = 1
	opts.Registerer = nil
	if _, err := NewSet(opts); err != nil {
		return fmt.Errorf("plugins: %w", err)
	}
	return nil
}

// testLine is one line of events.jsonl: a bare NIP-01 event, or an object
// {"event": {...}, "source": "sync", "remote": "...", "authed": "<hex>"} to
// exercise ctx-dependent policies.
type testLine struct {
	Event  *nostr.Event `json:"event"`
	Source string       `json:"source"`
	Remote string       `json:"remote"`
	Authed string       `json:"authed"`
}

// TestEvents is `grasp plugin test`: it reads events.jsonl from r and writes
// one line per input line to w: "<event id> accept", "<id> reject <msg>",
// "<id> shadowReject", or "line N: invalid: ..." for unparsable input. Only
// the accept chain runs; core's GRASP rules do not. The error is for I/O only.
func TestEvents(ctx context.Context, set *Set, r io.Reader, w io.Writer) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	bw := bufio.NewWriter(w)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		evt, meta, err := parseTestLine([]byte(line))
		if err != nil {
			fmt.Fprintf(bw, "line %d: invalid: %v\n", n, err)
			continue
		}
		meta.ReceivedAt = time.Unix(int64(evt.CreatedAt), 0)
		v := set.Accept(ctx, evt, meta)
		if v.Msg == "" {
			fmt.Fprintf(bw, "%s %s\n", evt.ID, v.Action)
		} else {
			fmt.Fprintf(bw, "%s %s %s\n", evt.ID, v.Action, v.Msg)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read events: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write verdicts: %w", err)
	}
	return nil
}

func parseTestLine(b []byte) (*nostr.Event, policy.Meta, error) {
	meta := policy.Meta{Source: policy.SourceClient}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, meta, err
	}
	var evt *nostr.Event
	if _, wrapped := probe["event"]; wrapped {
		var tl testLine
		if err := json.Unmarshal(b, &tl); err != nil {
			return nil, meta, err
		}
		evt = tl.Event
		if tl.Source != "" {
			meta.Source = policy.Source(tl.Source)
		}
		meta.Remote, meta.Authed = tl.Remote, tl.Authed
	} else {
		evt = &nostr.Event{}
		if err := json.Unmarshal(b, evt); err != nil {
			return nil, meta, err
		}
	}
	if evt == nil || evt.ID == "" {
		return nil, meta, fmt.Errorf("no event id")
	}
	switch meta.Source {
	case policy.SourceClient, policy.SourceSync, policy.SourcePurgatory:
	default:
		return nil, meta, fmt.Errorf("source must be client, sync or purgatory, not %q", meta.Source)
	}
	return evt, meta, nil
}
