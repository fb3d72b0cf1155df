// prefer_healthy: relay selection that skips dead relays and tries healthy,
// fast ones first.
//
// [[plugins.relay_selection]]
// name = "prefer-healthy"
// file = "prefer_healthy.js"
//   [plugins.relay_selection.config]
//   max_failures = 5     # relays failing this often in a row are skipped
//   max_relays   = 8     # keep at most this many (0 = all)
//   keep_one     = true  # if every relay looks dead, still try the best one
module.exports = {
  selectRelays(candidates, ctx) {
    const cfg = ctx.config;
    const maxFailures = cfg.max_failures ?? 5;
    const maxRelays = cfg.max_relays ?? 8;
    const rank = (c) => [c.health.ok ? 0 : 1, c.health.failures, c.health.latencyMs || 1e9];
    const cmp = (a, b) => {
      const ra = rank(a), rb = rank(b);
      for (let i = 0; i < ra.length; i++) if (ra[i] !== rb[i]) return ra[i] - rb[i];
      return 0;
    };
    const sorted = candidates.slice().sort(cmp);
    let alive = sorted.filter((c) => c.health.failures < maxFailures);
    if (alive.length === 0 && (cfg.keep_one ?? true) && sorted.length > 0) alive = [sorted[0]];
    if (maxRelays > 0) alive = alive.slice(0, maxRelays);
    return alive.map((c) => c.url);
  },
};
