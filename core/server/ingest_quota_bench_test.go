package server_test

import "github.com/grasp-dev/grasp/core/config"

// unboundedHeld lifts purgatory's quotas, so a benchmark can fill it.
func unboundedHeld(cfg *config.Config) {
	p := &cfg.Purgatory
	p.MaxHeld, p.MaxHeldPerIP, p.MaxHeldAnnouncements = 0, 0, 0
	p.MaxHeldAnnouncementsPerIP, p.MaxHeldAnnouncementsPerPubkey, p.MaxHeldAnnouncementsPerIdentifier = 0, 0, 0
}
