package relay

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/policy"
)

// khatru applies a kind-5 deletion before it runs RejectEvent or the store
// hooks, so the only place to stop a deletion that we will refuse is
// OverwriteDeletionOutcome. There we run the cheap limits and the pipeline
// for the deletion event itself; the pipeline's decision is remembered so the
// store hook does not ask again (the pipeline runs once per event).

// deletionOutcome is khatru's OverwriteDeletionOutcome hook. Its answer
// replaces khatru's author check, so it repeats it. khatru prefixes a refusal
// with "blocked: ", so the reasons here carry no prefix.
func (s *Server) deletionOutcome(ctx context.Context, target, deletion *nostr.Event) (bool, string) {
	if target.PubKey != deletion.PubKey {
		return false, "you are not the author of this event"
	}
	if modeOf(ctx) == modePublish {
		return true, ""
	}
	if msg := s.checkEvent(deletion); msg != "" {
		return false, stripPrefix(msg)
	}
	d, ok := s.deletes.get(deletion.ID)
	if !ok {
		d = s.pipeline.Decide(ctx, deletion, metaFor(ctx, s.clock))
		s.deletes.put(deletion.ID, d)
	}
	if d.Outcome == policy.Rejected {
		// khatru stops here; the store hook will not run to consume it.
		s.deletes.take(deletion.ID)
		if d.Msg == "" {
			return false, "rejected by policy"
		}
		return false, stripPrefix(d.Msg)
	}
	// Shadow and Hold still honour the author's own deletion: it harms no one
	// else, and refusing it would reveal a shadow rejection.
	return true, ""
}

// applyDeletion does for Ingest and Publish what khatru does for a client's
// kind 5 before storing it. It returns a prefixed reason on refusal.
func (s *Server) applyDeletion(ctx context.Context, evt *nostr.Event) string {
	for _, tag := range evt.Tags {
		if len(tag) < 2 {
			continue
		}
		var f nostr.Filter
		switch tag[0] {
		case "e":
			f = nostr.Filter{IDs: []string{tag[1]}, Limit: 1}
		case "a":
			parts := strings.SplitN(tag[1], ":", 3)
			if len(parts) != 3 {
				continue
			}
			kind, err := strconv.Atoi(parts[0])
			if err != nil {
				continue
			}
			until := evt.CreatedAt
			f = nostr.Filter{Kinds: []int{kind}, Authors: []string{parts[1]},
				Tags: nostr.TagMap{"d": []string{parts[2]}}, Until: &until, Limit: 1}
		default:
			continue
		}
		ch, err := s.store.QueryEvents(ctx, f)
		if err != nil {
			s.log.Warn("deletion target lookup failed", "deletion", evt.ID, "error", err)
			continue
		}
		var target *nostr.Event
		for e := range ch {
			if target == nil {
				target = e
			}
		}
		if target == nil {
			continue
		}
		if ok, msg := s.deletionOutcome(ctx, target, evt); !ok {
			return "blocked: " + msg
		}
		if err := s.deleteEvent(ctx, target); err != nil {
			return err.Error()
		}
	}
	return ""
}

func stripPrefix(msg string) string {
	if i := strings.Index(msg, ": "); i > 0 && !strings.ContainsRune(msg[:i], ' ') {
		return msg[i+2:]
	}
	return msg
}

// decisionMemo remembers pipeline decisions for deletion events between
// khatru's deletion step and the store hook. It is bounded: entries whose
// store hook never runs (khatru refused the event in between) are dropped
// wholesale when it fills, at the cost of one extra pipeline call.
type decisionMemo struct {
	mu  sync.Mutex
	max int
	m   map[string]policy.Decision
}

func newDecisionMemo(max int) *decisionMemo {
	return &decisionMemo{max: max, m: make(map[string]policy.Decision)}
}

func (d *decisionMemo) get(id string) (policy.Decision, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.m[id]
	return v, ok
}

func (d *decisionMemo) put(id string, v policy.Decision) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.m) >= d.max {
		clear(d.m)
	}
	d.m[id] = v
}

func (d *decisionMemo) len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.m)
}

func (d *decisionMemo) take(id string) (policy.Decision, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.m[id]
	delete(d.m, id)
	return v, ok
}
