package plugins

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"github.com/dop251/goja"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/policy"
)

// Accept runs the accept chain in config order; the first reject or
// shadowReject wins. A failing plugin follows its on_error. Set implements
// policy.Acceptor.
func (s *Set) Accept(ctx context.Context, evt *nostr.Event, meta policy.Meta) policy.Verdict {
	if len(s.accept) == 0 {
		return policy.Verdict{Action: policy.Accept}
	}
	sl, err := s.acquire(ctx, s.opts.QueueTimeout)
	if err != nil {
		// Without a runtime no plugin can run: each one's on_error decides.
		for _, p := range s.accept {
			p.fail(err)
			if p.failClosed() {
				return policy.Verdict{Action: policy.Reject, Msg: "error: policy plugins are overloaded, try again"}
			}
		}
		return policy.Verdict{Action: policy.Accept}
	}
	defer s.release(sl)
	// One event object per event per runtime, shared by the chain: building
	// it is the dominant cost (reference/plugins.md §4). It is a copy, so a
	// plugin that writes to it changes nothing in Go.
	evObj := sl.eventObject(evt)
	for _, p := range s.accept {
		v, err := sl.runAccept(ctx, p, evObj, meta)
		if err != nil {
			p.fail(err)
			if p.failClosed() {
				return policy.Verdict{Action: policy.Reject, Msg: fmt.Sprintf("error: policy plugin %q failed", p.spec.Name)}
			}
			continue
		}
		if v.Action != policy.Accept {
			return v
		}
	}
	return policy.Verdict{Action: policy.Accept}
}

func (sl *slot) runAccept(ctx context.Context, p *plugin, evObj goja.Value, meta policy.Meta) (policy.Verdict, error) {
	clk := sl.set.opts.Clock
	start := clk.Now()
	ctxObj := sl.acceptCtx(p, meta)
	fn := sl.fns[p.idx]
	res, err := sl.call(ctx, p, p.spec.Timeout, func() (goja.Value, error) {
		return fn(goja.Undefined(), evObj, ctxObj)
	})
	p.obs.took(clk.Since(start))
	if err != nil {
		return policy.Verdict{}, err
	}
	return parseVerdict(res, p.spec.Name)
}

func (sl *slot) eventObject(evt *nostr.Event) goja.Value {
	vm := sl.vm
	o := vm.NewObject()
	_ = o.Set("id", evt.ID)
	_ = o.Set("pubkey", evt.PubKey)
	_ = o.Set("created_at", int64(evt.CreatedAt))
	_ = o.Set("kind", evt.Kind)
	// Fresh []any slices: JS sees arrays with the Array prototype, and
	// writes land in these copies, never in evt.Tags.
	tags := make([]any, len(evt.Tags))
	for i, t := range evt.Tags {
		tt := make([]any, len(t))
		for j, v := range t {
			tt[j] = v
		}
		tags[i] = tt
	}
	_ = o.Set("tags", tags)
	_ = o.Set("content", evt.Content)
	_ = o.Set("sig", evt.Sig)
	return o
}

func (sl *slot) acceptCtx(p *plugin, meta policy.Meta) goja.Value {
	vm := sl.vm
	o := vm.NewObject()
	_ = o.Set("source", string(meta.Source))
	_ = o.Set("remote", meta.Remote)
	if meta.Authed != "" {
		_ = o.Set("authed", meta.Authed)
	} else {
		_ = o.Set("authed", goja.Null())
	}
	if meta.ReceivedAt.IsZero() {
		_ = o.Set("receivedAt", sl.set.opts.Clock.Now().Unix())
	} else {
		_ = o.Set("receivedAt", meta.ReceivedAt.Unix())
	}
	_ = o.Set("archived", meta.Archived)
	_ = o.Set("config", sl.cfg[p.idx])
	if u := meta.Usage; u != nil {
		use := func(x policy.Use) map[string]any {
			return map[string]any{"placeholders": x.Placeholders, "bytes": x.Bytes}
		}
		_ = o.Set("usage", map[string]any{
			"pubkey": use(u.Pubkey),
			"ip":     use(u.IP),
			"limits": map[string]any{
				"placeholdersPerPubkey": u.Limits.PlaceholdersPerPubkey,
				"placeholdersPerIp":     u.Limits.PlaceholdersPerIP,
				"bytesPerPubkey":        u.Limits.BytesPerPubkey,
				"bytesPerIp":            u.Limits.BytesPerIP,
			},
		})
	} else {
		_ = o.Set("usage", goja.Null())
	}
	return o
}

var promiseType = reflect.TypeOf((*goja.Promise)(nil))

// settle unwraps a Promise the hook returned. Hooks have no I/O to await,
// so an async hook has settled by the time the call returns.
func settle(v goja.Value) (goja.Value, error) {
	if v == nil {
		return v, nil
	}
	if v.ExportType() != promiseType {
		return v, nil
	}
	pr := v.Export().(*goja.Promise)
	switch pr.State() {
	case goja.PromiseStateFulfilled:
		return pr.Result(), nil
	case goja.PromiseStateRejected:
		return nil, &callError{"exception", fmt.Errorf("promise rejected: %v", pr.Result())}
	}
	return nil, &callError{"bad-return", fmt.Errorf("promise still pending: hooks cannot wait for anything")}
}

// parseVerdict maps the return conventions: nothing = no objection; a string
// rejects with it; {action, msg} with action accept|reject|shadowReject.
func parseVerdict(v goja.Value, name string) (policy.Verdict, error) {
	v, err := settle(v)
	if err != nil {
		return policy.Verdict{}, err
	}
	if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
		return policy.Verdict{Action: policy.Accept}, nil
	}
	switch x := v.Export().(type) {
	case string:
		return policy.Verdict{Action: policy.Reject, Msg: normalizeMsg(x, name)}, nil
	case map[string]any:
		msg, _ := x["msg"].(string)
		if m, ok := x["msg"]; ok && m != nil {
			if _, isStr := m.(string); !isStr {
				return policy.Verdict{}, &callError{"bad-return", fmt.Errorf("msg must be a string, got %T", m)}
			}
		}
		switch x["action"] {
		case "accept":
			return policy.Verdict{Action: policy.Accept}, nil
		case "reject":
			return policy.Verdict{Action: policy.Reject, Msg: normalizeMsg(msg, name)}, nil
		case "shadowReject":
			return policy.Verdict{Action: policy.ShadowReject, Msg: msg}, nil
		}
		return policy.Verdict{}, &callError{"bad-return", fmt.Errorf(`action must be "accept", "reject" or "shadowReject", got %v`, x["action"])}
	}
	return policy.Verdict{}, &callError{"bad-return", fmt.Errorf("accept must return nothing, a string or {action, msg}, got %s", v.String())}
}

// okPrefixes are the machine-readable prefixes of NIP-01 OK messages.
var okPrefixes = []string{"blocked:", "rate-limited:", "invalid:", "restricted:", "pow:", "error:", "duplicate:", "auth-required:", "mute:"}

// normalizeMsg adds "blocked: " to a reason without a NIP-01 prefix, as
// khatru does for its own hooks.
func normalizeMsg(msg, name string) string {
	msg = strings.TrimSpace(msg)
	if msg == "" {
		return fmt.Sprintf("blocked: rejected by policy %q", name)
	}
	for _, p := range okPrefixes {
		if strings.HasPrefix(msg, p) {
			return msg
		}
	}
	return "blocked: " + msg
}
