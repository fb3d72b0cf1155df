package config

import "fmt"

// retiredKey is a key an earlier version accepted: renamed (To names the key
// that replaced it) or removed (To is empty).
type retiredKey struct {
	To  string
	Why string // for the operator: what the new key means, or why the old one went
}

// retired lists every key that was renamed or removed, so that an upgraded
// server reports an old config with the replacement instead of a bare
// "unknown key". Entries stay here for good: configs outlive many upgrades.
// An old key is still an error, not a silent alias, because a value that
// changes nothing must not look as if it were in force.
var retired = map[string]retiredKey{
	// Accepted but never read (security audit 2026-11, F18f): rejected
	// events are not kept for re-evaluation.
	"purgatory.rejected_hot_ttl":  {Why: "it never had an effect; rejected events are not kept for re-evaluation"},
	"purgatory.rejected_cold_ttl": {Why: "it never had an effect; rejected event ids are not remembered"},
	// Accepted and validated but never read (issue 11 part 6): an expired
	// announcement leaves with its bare repository at purgatory.ttl.
	"purgatory.announcement_retention": {Why: "it never had an effect; an expired announcement is dropped with its repository at purgatory.ttl"},
	// GRASP-02 sync learns of held announcements from purgatory's hooks
	// at once; there is no poll left to time (issue 9 part 4).
	"sync.purgatory_register_interval": {Why: "held announcements reach sync the moment they are held; there is no poll to time"},
}

// unknownKeyMsg is the problem reported for a key the schema does not have.
func unknownKeyMsg(table map[string]retiredKey, key string) string {
	r, ok := table[key]
	switch {
	case !ok:
		return "unknown key"
	case r.To != "":
		return fmt.Sprintf("renamed to %s: %s; rename it", r.To, r.Why)
	}
	return fmt.Sprintf("removed: %s; delete it", r.Why)
}
