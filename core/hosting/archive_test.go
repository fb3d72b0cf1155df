package hosting

import (
	"context"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/grasp-dev/grasp/core/archive"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/nip34"
)

// archiveRig serves prsService's identity with archive mode on for the
// repositories of archived (GRASP-05), read-only as readOnly says.
func archiveRig(t *testing.T, archived key, readOnly bool) (*rig, *prometheus.Registry) {
	t.Helper()
	svc := prsService(t)
	reg := prometheus.NewRegistry()
	scope, err := archive.New(archive.Options{Whitelist: []string{archived.PK}, ReadOnly: readOnly, Service: svc}, env.Env{Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	return newRigWith(t, rigOptions{archive: scope, service: svc}), reg
}

// archivedRepos reads grasp_archive_repos by state from reg.
func archivedRepos(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "grasp_archive_repos" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "state" {
					out[l.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	return out
}

// G05-2: a push to a read-only archive is refused with the archive's text;
// a repository hosted here in the ordinary way (its announcement lists
// this server, outside the scope) is not refused, nor anything when the
// archive takes pushes.
func TestG05_2_ReadOnlyArchiveRefusesPushes(t *testing.T) {
	a, b := newKey(t), newKey(t)
	r, _ := archiveRig(t, a, true)
	ctx := context.Background()
	svc := prsService(t)
	r.store.save(t, a.sign(t, nip34.KindAnnouncement, nostr.Tags{{"d", "mirror"}, {"clone", "https://elsewhere.example/mirror.git"}}))
	r.store.save(t, b.sign(t, nip34.KindAnnouncement, nostr.Tags{{"d", "own"}, {"clone", svc.CloneURL(b.PK, "own")}, {"relays", svc.RelayURL()}}))
	mirror, own := nip34.RepoRef{Pubkey: a.PK, Identifier: "mirror"}, nip34.RepoRef{Pubkey: b.PK, Identifier: "own"}
	if got := r.h.ReadOnly(ctx, mirror); got != archive.ReadOnlyMessage(mirror) {
		t.Errorf("push to the archive: %q, want %q", got, archive.ReadOnlyMessage(mirror))
	}
	if got := r.h.ReadOnly(ctx, own); got != "" {
		t.Errorf("push to a repository outside the archive refused: %q", got)
	}
	if got := r.h.ReadOnly(ctx, nip34.RepoRef{Pubkey: b.PK, Identifier: "unknown"}); got != "" {
		t.Errorf("push to an unannounced repository refused as an archive: %q", got)
	}

	w, _ := archiveRig(t, a, false)
	w.store.save(t, a.sign(t, nip34.KindAnnouncement, nostr.Tags{{"d", "mirror"}}))
	if got := w.h.ReadOnly(ctx, mirror); got != "" {
		t.Errorf("an archive that takes pushes refused one: %q", got)
	}
}

// The grasp_archive_repos gauge counts the archived repositories hosted
// here by whether their announcement still waits for git data; with
// archive mode off nothing is counted.
func TestCountArchived(t *testing.T) {
	a, b := newKey(t), newKey(t)
	r, reg := archiveRig(t, a, true)
	ctx := context.Background()
	r.announce(a, "waiting")
	r.store.save(t, a.sign(t, nip34.KindAnnouncement, nostr.Tags{{"d", "mirrored"}}))
	if err := r.repos.Create(ctx, nip34.RepoRef{Pubkey: a.PK, Identifier: "mirrored"}); err != nil {
		t.Fatal(err)
	}
	r.announce(b, "not-archived")
	if err := r.h.CountArchived(ctx); err != nil {
		t.Fatal(err)
	}
	if got := archivedRepos(t, reg); got[archive.StateAwaiting] != 1 || got[archive.StateMirrored] != 1 {
		t.Fatalf("grasp_archive_repos %v, want 1 awaiting and 1 mirrored", got)
	}
	if err := newRig(t).h.CountArchived(ctx); err != nil {
		t.Fatalf("archive mode off: %v", err)
	}
}
