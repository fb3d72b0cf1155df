package githttp

import (
	"context"
	"net/http"

	"github.com/grasp-dev/grasp/core/nip34"
)

// PRsQuota bounds what GRASP-06 /prs/ repositories hold on disk (audit
// 2026-11b, F20): every push into one is counted, whether or not its PR
// event is known, per client address, per npub of the path and in total,
// before git runs and as its bytes arrive; what an applied push brought
// stays counted until the repository is removed.
type PRsQuota interface {
	// ReservePRs admits a push from ip into the /prs/ repository repo
	// before git runs; expect is a lower bound of its size (the request's
	// Content-Length, 0 when unknown). An error's text is what the client
	// sees.
	ReservePRs(repo nip34.RepoRef, ip string, expect int64) (PRsReservation, error)
}

// PRsReservation is a /prs/ push in progress.
type PRsReservation interface {
	// Charge counts n more bytes of the push; an error stops the push (its
	// text is what the client sees).
	Charge(n int64) error
	// Commit keeps what the applied push brought counted.
	Commit(ctx context.Context) error
	// Release ends the reservation (idempotent): what was not committed is
	// given back.
	Release()
}

// reservePRs reserves a /prs/ push of r's size (at least) with the
// handler's PRsQuota; nil and no error when there is none.
func (h *handler) reservePRs(r *http.Request, repo nip34.RepoRef, ip string) (PRsReservation, error) {
	if !repo.PRs || h.opts.PRsQuota == nil {
		return nil, nil
	}
	return h.opts.PRsQuota.ReservePRs(repo, ip, max(r.ContentLength, 0))
}

// chargeAll is one limitReader.charge for several reservations: the first
// refusal stops the body.
func chargeAll(charges []func(int64) error) func(int64) error {
	if len(charges) == 0 {
		return nil
	}
	return func(n int64) error {
		for _, c := range charges {
			if err := c(n); err != nil {
				return err
			}
		}
		return nil
	}
}
