package hunt

import (
	"context"
	"fmt"
	"github.com/grasp-dev/grasp/core/config"
	"syscall"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/throttle"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// idealMakespan is the shortest time n identical fetches of length took can
// all finish when each may go to any of domains domains limited to lim: the
// greedy schedule (start every fetch as early as both limits allow) is
// optimal for identical jobs.
func idealMakespan(n, domains int, lim throttle.Limits, took time.Duration) time.Duration {
	type dom struct {
		starts []time.Duration
		ends   []time.Duration
	}
	ds := make([]dom, domains)
	var now, last time.Duration
	for n > 0 {
		next := time.Duration(1 << 62)
		for i := range ds {
			d := &ds[i]
			for n > 0 {
				inFlight, inWindow := 0, 0
				for _, e := range d.ends {
					if e > now {
						inFlight++
						if e < next {
							next = e
						}
					}
				}
				for _, s := range d.starts {
					if s+rateWindow > now {
						inWindow++
					}
				}
				if inFlight >= lim.Concurrency || inWindow >= lim.PerMinute {
					if inWindow >= lim.PerMinute {
						if o := d.starts[len(d.starts)-lim.PerMinute] + rateWindow; o < next {
							next = o
						}
					}
					break
				}
				d.starts = append(d.starts, now)
				d.ends = append(d.ends, now+took)
				if now+took > last {
					last = now + took
				}
				n--
			}
		}
		now = next
	}
	return last
}

func TestIdealMakespanMatchesHandCount(t *testing.T) {
	// 200 fetches of 2 s on 3 domains at 5/30: 90 start in each minute, the
	// last 20 in the third, 5 every 2 s: the last starts at 122 s.
	if got := idealMakespan(200, 3, throttle.Limits{Concurrency: 5, PerMinute: 30}, 2*time.Second); got != 124*time.Second {
		t.Fatalf("ideal %v, want 124s", got)
	}
	if got := idealMakespan(10, 1, throttle.Limits{Concurrency: 2, PerMinute: 100}, 10*time.Second); got != 50*time.Second {
		t.Fatalf("ideal %v, want 50s", got)
	}
}

// BenchmarkHunt200Repos3Domains measures how close the hunter comes to the
// schedule the throttle allows: 200 repos, each listing one URL on each of
// 3 domains (in rotated order), limits 5 concurrent / 30 a minute, every
// fetch taking a fixed fake time: 2 s (the rate limit binds) or 20 s (the
// concurrency limit binds). Reported: ideal/actual (1 = perfect).
func BenchmarkHunt200Repos3Domains(b *testing.B) {
	for _, took := range []time.Duration{2 * time.Second, 20 * time.Second} {
		b.Run(fmt.Sprintf("fetch=%v", took), func(b *testing.B) { benchHunt(b, took) })
	}
}

func benchHunt(b *testing.B, took time.Duration) {
	const repos, domains = 200, 3
	lim := throttle.Limits{Concurrency: 5, PerMinute: 30}
	ideal := idealMakespan(repos, domains, lim, took)
	var ratio float64
	var actual time.Duration
	for i := 0; i < b.N; i++ {
		hs := newHarness(b, DefaultOptions(), lim)
		hs.sc.took = took
		for r := 0; r < repos; r++ {
			var urls []string
			for d := 0; d < domains; d++ {
				url := fmt.Sprintf("https://d%d.example/r%d.git", (r+d)%domains, r)
				hs.sc.remote(url, KindOther, oid("x"))
				urls = append(urls, url)
			}
			hs.h.Need(Need{Repo: repoN(fmt.Sprint(r)), OIDs: []string{oid("x")}, Sources: urls, FromSync: true})
		}
		hs.advance(500*time.Millisecond, 500*time.Millisecond) // the sync delay: hunting starts here
		start := hs.clk.Now()
		for hs.h.Stats().Repos > 0 {
			if hs.clk.Since(start) > 10*ideal {
				b.Fatalf("not done after %v (ideal %v): %+v", hs.clk.Since(start), ideal, hs.h.Stats())
			}
			hs.advance(100*time.Millisecond, 100*time.Millisecond)
		}
		actual = hs.clk.Since(start)
		ratio = float64(ideal) / float64(actual)
		if st := hs.h.Stats(); st.Fetches != repos {
			b.Fatalf("%d fetches for %d repos", st.Fetches, repos)
		}
		for d, m := range hs.sc.maxIn {
			if m > lim.Concurrency {
				b.Fatalf("domain %s saw %d fetches at once", d, m)
			}
		}
	}
	b.ReportMetric(ratio, "ideal/actual")
	b.ReportMetric(actual.Seconds(), "sim-s")
	b.ReportMetric(ideal.Seconds(), "ideal-s")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkHunterIdleCPU measures process CPU time over a window of real
// time with 500 repositories queued in backoff, against the same window
// with no hunter running (baseline, same run). No polling means the two
// are equal within noise. Run with -benchtime=1x.
func BenchmarkHunterIdleCPU(b *testing.B) {
	const window = 500 * time.Millisecond
	measure := func() time.Duration {
		c0 := cpuTime()
		time.Sleep(window)
		return cpuTime() - c0
	}
	var base, idle time.Duration
	for i := 0; i < b.N; i++ {
		base = measure()
		opts := DefaultOptions()
		opts.Config.UserFetchDelay = config.Duration(time.Hour)
		h, err := New(withSync(opts, newFakeSC(clock.NewFake(t0))), env.Env{Clock: clock.New()})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- h.Run(ctx) }()
		for r := 0; r < 500; r++ {
			h.Need(Need{Repo: repoN(fmt.Sprint(r)), OIDs: []string{oid("x")}, Sources: []string{"https://a.example/r.git"}})
		}
		if !h.waitSettled(testwait.Limit(b)) {
			b.Fatal("hunter did not settle")
		}
		idle = measure()
		cancel()
		<-done
	}
	b.ReportMetric(float64(base.Microseconds())/window.Seconds()/1000, "base-cpu-ms/s")
	b.ReportMetric(float64(idle.Microseconds())/window.Seconds()/1000, "idle-cpu-ms/s")
}
