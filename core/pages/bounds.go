package pages

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/grasp-dev/grasp/core/clock"
)

// Rendering anyone's content (Markdown, syntax highlighting) costs CPU
// that a visitor chooses: a 128 KiB file of `>` took goldmark 18 s (audit
// 2026-11b, F30), and neither goldmark nor a lexer can be interrupted. So
// every render is bounded four ways:
//
//   - its input is checked for shape before it reaches the renderer
//     (markdownShape: size, nesting, unclosed links, table cells), and
//     whatever fails the check is shown as plain text;
//   - renders run in a pool of MaxRenders workers, at most
//     MaxRendersPerClient of them for one client; a view that finds no
//     worker free shows plain text at once instead of waiting;
//   - a view waits for its render at most RenderBudget, and no longer than
//     its request lives, then shows plain text; the render finishes in its
//     worker (it holds the slot meanwhile, so abandoned renders still count
//     against the pool and their client) and its result is cached;
//   - results are cached by what they render (a blob's object id), and
//     concurrent views of one blob share one render.

// renderOutcome says how a view got its content, for the page and the
// metric grasp_pages_renders_total.
type renderOutcome string

const (
	rendered     renderOutcome = "rendered"      // by this view's render or one it waited for
	fromCache    renderOutcome = "cached"        // rendered before
	plainShape   renderOutcome = "plain_shape"   // refused by the shape check
	plainBusy    renderOutcome = "plain_busy"    // no worker free, or the client's share taken
	plainBudget  renderOutcome = "plain_budget"  // not done within RenderBudget or the request
	plainTooBig  renderOutcome = "plain_output"  // the rendered output exceeded its bound
	plainUnknown renderOutcome = "plain_failure" // the renderer failed
)

// renderPool runs renders on a bounded number of workers.
type renderPool struct {
	clk       clock.Clock
	budget    time.Duration
	total     int
	perClient int

	mu       sync.Mutex
	running  int
	byClient map[string]int
	flights  map[string]*renderFlight

	runningGauge prometheus.Gauge
	outcomes     *prometheus.CounterVec
	// started counts renders begun (goldmark parses, lexer runs): the CPU
	// work, in a unit that does not depend on the machine's speed.
	started *prometheus.CounterVec
	// beforeRender, when set (tests), runs in the worker before each render.
	beforeRender func(kind string)
}

type renderFlight struct {
	done chan struct{}
	val  any
}

func newRenderPool(clk clock.Clock, budget time.Duration, total, perClient int) *renderPool {
	return &renderPool{clk: clk, budget: budget, total: total, perClient: perClient,
		byClient: map[string]int{}, flights: map[string]*renderFlight{},
		runningGauge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "grasp_pages_renders_running",
			Help: "Markdown and syntax-highlighting renders running now, abandoned ones included (at most pages.MaxRenders).",
		}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grasp_pages_renders_total",
			Help: "Views of rendered content (Markdown, highlighted code) by kind and outcome: rendered, cached, or shown as plain text because of its shape (plain_shape), a full pool (plain_busy), the time budget (plain_budget), its output size (plain_output) or a failure.",
		}, []string{"kind", "outcome"}),
		started: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grasp_pages_renders_started_total",
			Help: "Renders begun (goldmark parses, lexer runs), by kind: the CPU work pages spent on content.",
		}, []string{"kind"}),
	}
}

func (rp *renderPool) collectors() []prometheus.Collector {
	return []prometheus.Collector{rp.runningGauge, rp.outcomes, rp.started}
}

// run returns the result of fn for key: from a render of key already
// running, or from a new one on a free worker. ok is false (and the
// outcome says why) when no worker was free for client or the result was
// not ready within the budget or the request; fn's result is then still
// delivered to done when it finishes, for the caller to cache.
//
// cached is the caller's cache, asked again under the pool's lock when no
// render of key is running: a render that finished between the caller's
// own look in the cache and this call has stored its result (done runs
// before the flight is removed), so it is found there instead of being
// rendered a second time.
func (rp *renderPool) run(ctx context.Context, kind, client, key string, cached func() (any, bool), fn func() any, done func(any)) (any, renderOutcome) {
	rp.mu.Lock()
	f, joined := rp.flights[key]
	if !joined {
		if v, ok := cached(); ok {
			rp.mu.Unlock()
			return v, fromCache
		}
		if rp.running >= rp.total || rp.byClient[client] >= rp.perClient {
			rp.mu.Unlock()
			return nil, plainBusy
		}
		rp.running++
		rp.byClient[client]++
		rp.runningGauge.Inc()
		f = &renderFlight{done: make(chan struct{})}
		rp.flights[key] = f
		go func() {
			defer func() {
				rp.mu.Lock()
				rp.running--
				if rp.byClient[client]--; rp.byClient[client] <= 0 {
					delete(rp.byClient, client)
				}
				delete(rp.flights, key)
				rp.mu.Unlock()
				rp.runningGauge.Dec()
				close(f.done)
			}()
			if rp.beforeRender != nil {
				rp.beforeRender(kind)
			}
			rp.started.WithLabelValues(kind).Inc()
			func() {
				// a renderer's panic is one failed render, not a dead server
				defer func() {
					if recover() != nil {
						f.val = nil
					}
				}()
				f.val = fn()
			}()
			if f.val != nil {
				done(f.val)
			}
		}()
	}
	rp.mu.Unlock()
	budget := rp.clk.NewTimer(rp.budget)
	defer budget.Stop()
	select {
	case <-f.done:
		if f.val == nil {
			return nil, plainUnknown
		}
		return f.val, rendered
	case <-budget.C():
	case <-ctx.Done():
	}
	return nil, plainBudget
}

// count records a view's outcome.
func (rp *renderPool) count(kind string, o renderOutcome) {
	rp.outcomes.WithLabelValues(kind, string(o)).Inc()
}
