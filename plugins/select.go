package plugins

import (
	"context"
	"errors"
	"fmt"

	"github.com/dop251/goja"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/relaysync"
)

// SelectRelays folds the relay_selection chain: each plugin gets the
// previous plugin's output (as candidates) and returns an ordered subset of
// URLs. URLs that were not candidates are dropped with a warning; plugins can
// filter and order, never add. A failing plugin with on_error "skip" leaves
// the list unchanged; with "reject" the chain returns the error. Set
// implements relaysync.RelaySelector.
func (s *Set) SelectRelays(ctx context.Context, repo relaysync.RepoInfo, cands []relaysync.Candidate) ([]string, error) {
	cur := append([]relaysync.Candidate(nil), cands...)
	if len(s.selection) > 0 {
		sl, err := s.acquire(ctx, s.opts.QueueTimeout)
		if err != nil {
			for _, p := range s.selection {
				p.fail(err)
				if p.failClosed() {
					return nil, fmt.Errorf("relay selection plugin %q: %w", p.spec.Name, err)
				}
			}
		} else {
			defer s.release(sl)
			for _, p := range s.selection {
				next, err := sl.runSelect(ctx, p, repo, cur)
				if err != nil {
					p.fail(err)
					if p.failClosed() {
						return nil, fmt.Errorf("relay selection plugin %q: %w", p.spec.Name, err)
					}
					continue
				}
				cur = next
			}
		}
	}
	out := make([]string, len(cur))
	for i, c := range cur {
		out[i] = c.URL
	}
	return out, nil
}

func (sl *slot) runSelect(ctx context.Context, p *plugin, repo relaysync.RepoInfo, cands []relaysync.Candidate) ([]relaysync.Candidate, error) {
	vm := sl.vm
	clk := sl.set.opts.Clock
	start := clk.Now()
	arr := make([]any, len(cands))
	for i, c := range cands {
		h := vm.NewObject()
		_ = h.Set("ok", c.Health.OK)
		_ = h.Set("failures", c.Health.Failures)
		_ = h.Set("latencyMs", c.Health.LatencyMs)
		if c.Health.LastOK.IsZero() {
			_ = h.Set("lastOk", goja.Null())
		} else {
			_ = h.Set("lastOk", c.Health.LastOK.Unix())
		}
		o := vm.NewObject()
		_ = o.Set("url", c.URL)
		_ = o.Set("source", string(c.Source))
		reason := "listed"
		if c.Source == relaysync.FromOutbox {
			reason = "outbox"
		}
		_ = o.Set("reason", reason)
		_ = o.Set("health", h)
		arr[i] = o
	}
	r := vm.NewObject()
	_ = r.Set("pubkey", repo.Pubkey)
	_ = r.Set("identifier", repo.Identifier)
	_ = r.Set("address", repo.Address)
	_ = r.Set("archived", repo.Archived)
	c := vm.NewObject()
	_ = c.Set("repo", r)
	_ = c.Set("config", sl.cfg[p.idx])
	fn := sl.fns[p.idx]
	res, err := sl.call(ctx, p, p.spec.Timeout, func() (goja.Value, error) {
		return fn(goja.Undefined(), vm.NewArray(arr...), c)
	})
	p.obs.took(clk.Since(start))
	if err != nil {
		return nil, err
	}
	if res, err = settle(res); err != nil {
		return nil, err
	}
	if res == nil || goja.IsUndefined(res) || goja.IsNull(res) {
		return cands, nil
	}
	list, ok := res.Export().([]any)
	if !ok {
		return nil, &callError{"bad-return", fmt.Errorf("selectRelays must return an array of URLs, got %s", res.String())}
	}
	byURL := make(map[string]relaysync.Candidate, len(cands))
	for _, c := range cands {
		byURL[c.URL] = c
	}
	out := make([]relaysync.Candidate, 0, len(list))
	seen := map[string]bool{}
	for _, item := range list {
		var u string
		switch x := item.(type) {
		case string:
			u = x
		case map[string]any: // a candidate object passed back as is
			u, _ = x["url"].(string)
		}
		if u == "" {
			return nil, &callError{"bad-return", errors.New("selectRelays returned an entry that is neither a URL nor a candidate")}
		}
		c, known := byURL[u]
		if !known {
			p.log.Warn("selectRelays returned a relay that was not a candidate; dropped", "url", u, "repo", nip34.RepoRef{Pubkey: repo.Pubkey, Identifier: repo.Identifier}.URLPath())
			continue
		}
		if !seen[u] {
			seen[u] = true
			out = append(out, c)
		}
	}
	return out, nil
}
