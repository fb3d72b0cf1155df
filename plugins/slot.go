package plugins

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dop251/goja"

	"github.com/grasp-dev/grasp/core/outcome"
)

// slot is one pooled runtime. It is owned by exactly one goroutine between
// acquire and release; only the interrupt callbacks touch it from elsewhere,
// and they go through imu.
type slot struct {
	set *Set
	vm  *goja.Runtime
	fns []goja.Callable // per plugin (Set.plugins index)
	cfg []goja.Value    // per plugin: its config as a plain JS object

	jsonParse goja.Callable
	loading   bool // require() is allowed only while loading

	// Per-call state, for host functions (logging, store deadline, kv).
	cur      *plugin
	ctx      context.Context
	deadline time.Time

	imu    sync.Mutex
	callID uint64
	broken bool // a Go panic went through the runtime; replace it
}

// Sentinels passed to Interrupt, so the error says why the run stopped.
var (
	errTimeout  = errors.New("plugin timed out")
	errCanceled = errors.New("plugin call canceled")
)

// errorKind classifies call failures for logs and metrics.
type callError struct {
	kind string // timeout | canceled | exception | panic | bad-return | busy
	err  error
}

func (e *callError) Error() string { return e.kind + ": " + e.err.Error() }
func (e *callError) Unwrap() error { return e.err }

func (s *slot) interrupt(id uint64, v any) {
	s.imu.Lock()
	if s.callID == id {
		s.vm.Interrupt(v)
	}
	s.imu.Unlock()
}

// call runs fn under p's deadline (or timeout when p is nil, at load time).
// The deadline is armed on the injected clock; the caller's ctx cancels too.
// Interrupts are tagged with a call id so one that fires late can never hit
// the next call on this runtime.
func (s *slot) call(ctx context.Context, p *plugin, timeout time.Duration, fn func() (goja.Value, error)) (v goja.Value, err error) {
	if err := ctx.Err(); err != nil {
		return nil, &callError{"canceled", err}
	}
	clk := s.set.opts.Clock
	s.imu.Lock()
	s.callID++
	id := s.callID
	s.imu.Unlock()
	s.cur, s.ctx, s.deadline = p, ctx, clk.Now().Add(timeout)
	timer := clk.AfterFunc(timeout, func() { s.interrupt(id, errTimeout) })
	var stop func() bool
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, func() { s.interrupt(id, errCanceled) })
	}
	defer func() {
		if r := recover(); r != nil {
			s.broken = true
			err = &callError{"panic", fmt.Errorf("%v", r)}
		}
		timer.Stop()
		if stop != nil {
			stop()
		}
		s.imu.Lock()
		s.callID++
		s.vm.ClearInterrupt()
		s.imu.Unlock()
		s.cur, s.ctx = nil, nil
	}()
	v, err = fn()
	if err != nil {
		err = classify(err, s.set.jail)
	}
	return v, err
}

func classify(err error, j *jail) error {
	var ie *goja.InterruptedError
	if errors.As(err, &ie) {
		if e, ok := ie.Value().(error); ok && errors.Is(e, errCanceled) {
			return &callError{"canceled", e}
		}
		return &callError{"timeout", errTimeout}
	}
	var ex *goja.Exception
	if errors.As(err, &ex) {
		// String() carries the JS stack, which is what an operator needs.
		return &callError{"exception", errors.New(j.fixPositions(ex.String()))}
	}
	// Syntax errors reach here as plain Go errors carrying the text.
	return &callError{"exception", errors.New(j.fixPositions(err.Error()))}
}

// storeCtx is the context a native host call must honour: goja cannot
// interrupt Go code, so the plugin's deadline is re-armed on ctx here.
func (s *slot) storeCtx() (context.Context, func(), error) {
	if s.ctx == nil {
		return nil, nil, outcome.Errorf(outcome.Error, "grasp.store is only available inside a hook call")
	}
	clk := s.set.opts.Clock
	left := s.deadline.Sub(clk.Now())
	if left <= 0 {
		return nil, nil, errTimeout
	}
	ctx, cancel := context.WithCancelCause(s.ctx)
	t := clk.AfterFunc(left, func() { cancel(errTimeout) })
	return ctx, func() { t.Stop(); cancel(nil) }, nil
}
