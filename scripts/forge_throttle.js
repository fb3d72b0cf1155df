// forge_throttle: git-fetch limits per host. Big forges take more
// concurrent fetches; unknown (likely small self-hosted) servers get gentle
// limits. Tuning files ([throttle] files) still override this per domain,
// and [throttle] max_* caps everything.
//
// [[plugins.throttle]]
// name = "forges"
// file = "forge_throttle.js"
//   [plugins.throttle.config]
//   big_forges = ["github.com", "gitlab.com", "codeberg.org", "bitbucket.org", "sr.ht"]
//   big   = { concurrency = 8, perMinute = 120 }
//   small = { concurrency = 2, perMinute = 12 }
const DEFAULT_BIG = ["github.com", "gitlab.com", "codeberg.org", "bitbucket.org", "sr.ht", "gitea.com"];

function isBig(domain, list) {
  for (const f of list) if (domain === f || domain.endsWith("." + f)) return true;
  return false;
}

module.exports = {
  throttle(domain, current, ctx) {
    const cfg = ctx.config;
    const big = cfg.big || { concurrency: 8, perMinute: 120 };
    const small = cfg.small || { concurrency: 2, perMinute: 12 };
    if (isBig(domain.toLowerCase(), cfg.big_forges || DEFAULT_BIG)) return big;
    // Never raise the limits for a small host above what we were given.
    return {
      concurrency: Math.min(current.concurrency, small.concurrency),
      perMinute: Math.min(current.perMinute, small.perMinute),
    };
  },
};
