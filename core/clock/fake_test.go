package clock

import (
	"sync/atomic"
	"testing"
	"time"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestFakeTimersFireInDeadlineOrder(t *testing.T) {
	f := NewFake(epoch)
	var order []string
	f.AfterFunc(3*time.Second, func() { order = append(order, "c") })
	f.AfterFunc(time.Second, func() { order = append(order, "a") })
	f.AfterFunc(2*time.Second, func() { order = append(order, "b") })
	f.Advance(2500 * time.Millisecond)
	if got := len(order); got != 2 || order[0] != "a" || order[1] != "b" {
		t.Fatalf("after 2.5s fired %v, want [a b]", order)
	}
	if want := epoch.Add(2500 * time.Millisecond); !f.Now().Equal(want) {
		t.Fatalf("Now()=%v, want %v", f.Now(), want)
	}
	f.Advance(time.Second)
	if len(order) != 3 || order[2] != "c" {
		t.Fatalf("fired %v, want [a b c]", order)
	}
}

func TestFakeCallbackSeesItsDeadline(t *testing.T) {
	f := NewFake(epoch)
	var seen time.Time
	f.AfterFunc(time.Minute, func() { seen = f.Now() })
	f.Advance(time.Hour)
	if !seen.Equal(epoch.Add(time.Minute)) {
		t.Fatalf("callback saw %v, want %v", seen, epoch.Add(time.Minute))
	}
}

func TestFakeTimerStopAndReset(t *testing.T) {
	f := NewFake(epoch)
	tm := f.NewTimer(time.Second)
	if !tm.Stop() {
		t.Fatal("Stop of an armed timer returned false")
	}
	f.Advance(2 * time.Second)
	select {
	case <-tm.C():
		t.Fatal("stopped timer fired")
	default:
	}
	tm.Reset(time.Second)
	f.Advance(time.Second)
	select {
	case got := <-tm.C():
		if !got.Equal(epoch.Add(3 * time.Second)) {
			t.Fatalf("fired at %v", got)
		}
	default:
		t.Fatal("reset timer did not fire")
	}
	if f.Pending() != 0 {
		t.Fatalf("pending=%d after a fired timer", f.Pending())
	}
}

func TestFakeTickerRepeatsAndDropsUnreadTicks(t *testing.T) {
	f := NewFake(epoch)
	tk := f.NewTicker(10 * time.Second)
	var n int32
	f.AfterFunc(0, func() {}) // a zero timer fires on the next Advance
	f.Advance(35 * time.Second)
	// three ticks were due; the channel holds one, the rest were dropped
	select {
	case <-tk.C():
		atomic.AddInt32(&n, 1)
	default:
	}
	select {
	case <-tk.C():
		atomic.AddInt32(&n, 1)
	default:
	}
	if n != 1 {
		t.Fatalf("read %d ticks, want 1 buffered", n)
	}
	f.Advance(5 * time.Second) // t=40s: 4th tick
	select {
	case got := <-tk.C():
		if !got.Equal(epoch.Add(40 * time.Second)) {
			t.Fatalf("tick at %v", got)
		}
	default:
		t.Fatal("ticker stopped ticking")
	}
	tk.Stop()
	f.Advance(time.Minute)
	select {
	case <-tk.C():
		t.Fatal("stopped ticker ticked")
	default:
	}
}

func TestFakeBlockUntil(t *testing.T) {
	f := NewFake(epoch)
	done := make(chan struct{})
	go func() {
		<-f.After(time.Minute)
		close(done)
	}()
	if !f.BlockUntil(1, 5*time.Second) {
		t.Fatal("goroutine never armed its timer")
	}
	f.Advance(time.Minute)
	<-done
	if f.BlockUntil(5, 10*time.Millisecond) {
		t.Fatal("BlockUntil reported 5 waiters that do not exist")
	}
}

func TestRealClockTimers(t *testing.T) {
	c := New()
	tm := c.NewTimer(time.Millisecond)
	<-tm.C()
	fired := make(chan struct{})
	c.AfterFunc(time.Millisecond, func() { close(fired) })
	<-fired
	if c.Since(c.Now().Add(-time.Second)) < time.Second {
		t.Fatal("Since is wrong")
	}
}
