// rate_limit: token buckets per author pubkey and per client IP, shared by
// every runtime of the pool (grasp.ratelimit is Go-backed).
//
//   [plugins.accept.config]
//   pubkey_per_minute = 30     # 0 disables the per-pubkey limit
//   pubkey_burst      = 10
//   ip_per_minute     = 60     # 0 disables the per-IP limit
//   ip_burst          = 20
//   sources           = ["client"]   # which sources are limited (sync peers are not, by default)
//   exempt_pubkeys    = ["<hex>"]
let cached = null;
function settings(cfg) {
  if (cached && cached.cfg === cfg) return cached;
  cached = {
    cfg,
    pkRate: cfg.pubkey_per_minute ?? 30,
    pkBurst: cfg.pubkey_burst ?? 10,
    ipRate: cfg.ip_per_minute ?? 60,
    ipBurst: cfg.ip_burst ?? 20,
    sources: new Set(cfg.sources || ["client"]),
    exempt: new Set(cfg.exempt_pubkeys || []),
  };
  return cached;
}

module.exports = {
  accept(event, ctx) {
    const s = settings(ctx.config);
    if (!s.sources.has(ctx.source) || s.exempt.has(event.pubkey)) return;
    if (s.ipRate > 0 && ctx.remote && !grasp.ratelimit("ip:" + ctx.remote, s.ipRate, s.ipBurst))
      return "rate-limited: too many events from your address, slow down";
    if (s.pkRate > 0 && !grasp.ratelimit("pk:" + event.pubkey, s.pkRate, s.pkBurst))
      return "rate-limited: too many events from this pubkey, slow down";
  },
};
