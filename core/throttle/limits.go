package throttle

import "context"

// Limits are one domain's git-fetch limits for the hunter.
type Limits struct {
	Concurrency int `json:"concurrency"` // simultaneous fetches to the domain
	PerMinute   int `json:"perMinute"`   // fetches started per sliding minute
}

// Tuner adjusts the limits for one domain (the throttle plugins implement
// it). It receives the limits computed so far (defaults, folded through
// earlier tuners) and returns the limits to use. Implementations must
// honour ctx.
type Tuner interface {
	Throttle(ctx context.Context, domain string, current Limits) (Limits, error)
}
