package plugins

import (
	"context"
	"fmt"
	"math"

	"github.com/dop251/goja"

	"github.com/grasp-dev/grasp/core/throttle"
)

// Throttle folds the throttle chain for one domain: each plugin gets the
// limits computed so far and may return {concurrency, perMinute} (either
// field optional). A failing plugin with on_error "skip" keeps the previous
// value; with "reject" the chain returns the error (the throttle.Resolver
// then keeps its defaults). Set implements throttle.Tuner; caps and
// tuning files are applied by core/throttle, not here.
func (s *Set) Throttle(ctx context.Context, domain string, cur throttle.Limits) (throttle.Limits, error) {
	if len(s.throttle) == 0 {
		return cur, nil
	}
	sl, err := s.acquire(ctx, s.opts.QueueTimeout)
	if err != nil {
		for _, p := range s.throttle {
			p.fail(err)
			if p.failClosed() {
				return cur, fmt.Errorf("throttle plugin %q: %w", p.spec.Name, err)
			}
		}
		return cur, nil
	}
	defer s.release(sl)
	for _, p := range s.throttle {
		next, err := sl.runThrottle(ctx, p, domain, cur)
		if err != nil {
			p.fail(err)
			if p.failClosed() {
				return cur, fmt.Errorf("throttle plugin %q: %w", p.spec.Name, err)
			}
			continue
		}
		cur = next
	}
	return cur, nil
}

func (sl *slot) runThrottle(ctx context.Context, p *plugin, domain string, cur throttle.Limits) (throttle.Limits, error) {
	vm := sl.vm
	clk := sl.set.opts.Clock
	start := clk.Now()
	lim := vm.NewObject()
	_ = lim.Set("concurrency", cur.Concurrency)
	_ = lim.Set("perMinute", cur.PerMinute)
	c := vm.NewObject()
	_ = c.Set("config", sl.cfg[p.idx])
	fn := sl.fns[p.idx]
	res, err := sl.call(ctx, p, p.spec.Timeout, func() (goja.Value, error) {
		return fn(goja.Undefined(), vm.ToValue(domain), lim, c)
	})
	p.obs.took(clk.Since(start))
	if err != nil {
		return cur, err
	}
	if res, err = settle(res); err != nil {
		return cur, err
	}
	if res == nil || goja.IsUndefined(res) || goja.IsNull(res) {
		return cur, nil
	}
	obj, ok := res.(*goja.Object)
	if !ok || obj.ClassName() != "Object" {
		return cur, &callError{"bad-return", fmt.Errorf("throttle must return {concurrency, perMinute} or nothing, got %s", res.String())}
	}
	next := cur
	for _, f := range []struct {
		name string
		dst  *int
	}{{"concurrency", &next.Concurrency}, {"perMinute", &next.PerMinute}} {
		v := obj.Get(f.name)
		if v == nil || goja.IsUndefined(v) {
			continue
		}
		var n float64
		switch x := v.Export().(type) {
		case int64:
			n = float64(x)
		case float64:
			n = x
		default:
			return cur, &callError{"bad-return", fmt.Errorf("throttle: %s must be a number, got %s", f.name, v.String())}
		}
		if math.IsNaN(n) || n < 1 || n != math.Trunc(n) || n > math.MaxInt32 {
			return cur, &callError{"bad-return", fmt.Errorf("throttle: %s must be a positive integer, got %s", f.name, v.String())}
		}
		*f.dst = int(n)
	}
	return next, nil
}
