package plugins

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/core/relaysync"
	"github.com/grasp-dev/grasp/core/throttle"
)

// Tester is `grasp plugin test`: one chain of a Set run over input lines,
// one output line per input line, and every plugin failure printed whole
// (message, file:line:column) right after the line it belongs to.
type Tester struct {
	set   *Set
	fails []string
}

// TestResult counts what makes `grasp plugin test` exit non-zero.
type TestResult struct {
	Lines   int // non-blank input lines
	Invalid int // lines that could not be parsed
	Failed  int // lines on which at least one plugin failed
}

// OK reports whether every line parsed and no plugin failed.
func (r TestResult) OK() bool { return r.Invalid == 0 && r.Failed == 0 }

// NewTester builds a Set (one runtime) that records plugin failures.
func NewTester(opts Options) (*Tester, error) {
	t := &Tester{}
	opts.PoolSize = 1
	opts.Registerer = nil
	opts.OnFailure = func(name string, kind Kind, err error) {
		t.fails = append(t.fails, fmt.Sprintf("plugins.%s %q failed: %s", kind, name, strings.TrimSpace(err.Error())))
	}
	set, err := NewSet(opts)
	if err != nil {
		return nil, err
	}
	t.set = set
	return t, nil
}

// Count reports how many plugins of kind the set runs.
func (t *Tester) Count(kind Kind) int {
	switch kind {
	case KindAccept:
		return len(t.set.accept)
	case KindRelaySelection:
		return len(t.set.selection)
	case KindThrottle:
		return len(t.set.throttle)
	}
	return 0
}

// Run reads r line by line and writes one result per non-blank line to w:
//
//	accept:          "<event id> accept" | "<id> reject <msg>" | "<id> shadowReject"
//	relay_selection: "<address> <url> <url> ..." (the chosen relays in order)
//	throttle:        "<domain> concurrency=N perMinute=M"
//
// or "line N: invalid: ..." for a line that does not parse. A failed plugin
// adds an indented line with its error. The error is for I/O only.
func (t *Tester) Run(ctx context.Context, kind Kind, r io.Reader, w io.Writer) (TestResult, error) {
	var res TestResult
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
		res.Lines++
		t.fails = t.fails[:0]
		out, err := t.runLine(ctx, kind, []byte(line))
		if err != nil {
			res.Invalid++
			fmt.Fprintf(bw, "line %d: invalid: %v\n", n, err)
			continue
		}
		fmt.Fprintln(bw, out)
		if len(t.fails) > 0 {
			res.Failed++
			for _, f := range t.fails {
				fmt.Fprintf(bw, "  line %d: %s\n", n, strings.ReplaceAll(f, "\n", "\n    "))
			}
		}
	}
	if err := sc.Err(); err != nil {
		return res, fmt.Errorf("read input: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return res, fmt.Errorf("write results: %w", err)
	}
	return res, nil
}

func (t *Tester) runLine(ctx context.Context, kind Kind, b []byte) (string, error) {
	switch kind {
	case KindAccept:
		evt, meta, err := parseTestLine(b)
		if err != nil {
			return "", err
		}
		meta.ReceivedAt = time.Unix(int64(evt.CreatedAt), 0)
		v := t.set.Accept(ctx, evt, meta)
		if v.Msg == "" {
			return fmt.Sprintf("%s %s", evt.ID, v.Action), nil
		}
		return fmt.Sprintf("%s %s %s", evt.ID, v.Action, v.Msg), nil
	case KindRelaySelection:
		repo, cands, err := parseSelectionLine(b)
		if err != nil {
			return "", err
		}
		urls, err := t.set.SelectRelays(ctx, repo, cands)
		if err != nil {
			return fmt.Sprintf("%s error: %v", repo.Address, err), nil
		}
		return strings.TrimSpace(repo.Address + " " + strings.Join(urls, " ")), nil
	case KindThrottle:
		var in struct {
			Domain string `json:"domain"`
			throttle.Limits
		}
		if err := strictJSON(b, &in); err != nil {
			return "", err
		}
		if in.Domain == "" {
			return "", errors.New("no domain")
		}
		l, err := t.set.Throttle(ctx, in.Domain, in.Limits)
		if err != nil {
			return fmt.Sprintf("%s error: %v", in.Domain, err), nil
		}
		return fmt.Sprintf("%s concurrency=%d perMinute=%d", in.Domain, l.Concurrency, l.PerMinute), nil
	}
	return "", fmt.Errorf("unknown hook %q", kind)
}

// TestEvents runs the accept chain of set over r (see Tester.Run); plugin
// failures show only as their on_error verdict.
func TestEvents(ctx context.Context, set *Set, r io.Reader, w io.Writer) (TestResult, error) {
	return (&Tester{set: set}).Run(ctx, KindAccept, r, w)
}

func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// selectionLine is one input line of `grasp plugin test --hook relay_selection`.
type selectionLine struct {
	Repo struct {
		Pubkey     string `json:"pubkey"`
		Identifier string `json:"identifier"`
		Address    string `json:"address"`
	} `json:"repo"`
	Candidates []struct {
		URL    string `json:"url"`
		Source string `json:"source"`
		Health struct {
			OK        bool  `json:"ok"`
			Failures  int   `json:"failures"`
			LatencyMs int64 `json:"latencyMs"`
			LastOK    int64 `json:"lastOk"`
		} `json:"health"`
	} `json:"candidates"`
}

func parseSelectionLine(b []byte) (relaysync.RepoInfo, []relaysync.Candidate, error) {
	var l selectionLine
	if err := strictJSON(b, &l); err != nil {
		return relaysync.RepoInfo{}, nil, err
	}
	repo := relaysync.RepoInfo{Pubkey: l.Repo.Pubkey, Identifier: l.Repo.Identifier, Address: l.Repo.Address}
	if repo.Address == "" {
		repo.Address = fmt.Sprintf("30617:%s:%s", repo.Pubkey, repo.Identifier)
	}
	if len(l.Candidates) == 0 {
		return repo, nil, errors.New("no candidates")
	}
	cands := make([]relaysync.Candidate, len(l.Candidates))
	for i, c := range l.Candidates {
		if c.URL == "" {
			return repo, nil, fmt.Errorf("candidate %d has no url", i)
		}
		src := relaysync.CandidateSource(c.Source)
		if src == "" {
			src = relaysync.FromAnnouncement
		}
		h := relaysync.Health{OK: c.Health.OK, Failures: c.Health.Failures, LatencyMs: c.Health.LatencyMs}
		if c.Health.LastOK > 0 {
			h.LastOK = time.Unix(c.Health.LastOK, 0)
		}
		cands[i] = relaysync.Candidate{URL: c.URL, Source: src, Health: h}
	}
	return repo, cands, nil
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
