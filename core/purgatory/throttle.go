package purgatory

import "context"

// Limits are the per-domain git fetch limits of the hunter.
type Limits struct {
	Concurrency int `json:"concurrency"` // simultaneous fetches to the domain
	PerMinute   int `json:"perMinute"`   // fetches started per sliding minute
}

// ThrottleTuner adjusts the limits for one domain. It receives the limits
// computed so far (defaults, folded through earlier tuners) and returns the
// limits to use. Implementations must honour ctx.
type ThrottleTuner interface {
	Throttle(ctx context.Context, domain string, current Limits) (Limits, error)
}

// NoTuning is the built-in tuner: it keeps the limits it is given.
type NoTuning struct{}

func (NoTuning) Throttle(_ context.Context, _ string, cur Limits) (Limits, error) { return cur, nil }
