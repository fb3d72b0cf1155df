// pubkey_lists: allow/deny lists of event authors (hex pubkeys).
//
// [[plugins.accept]]
// name = "pubkeys"
// file = "pubkey_lists.js"
//   [plugins.accept.config]
//   deny  = ["<hex>", ...]          # always rejected
//   allow = ["<hex>", ...]          # if non-empty, only these may publish
//   allow_sources = ["sync"]        # sources exempt from the allow list (optional)
//
// Lists are turned into Sets once per runtime (ctx.config is the same
// object for every call in a runtime).
let cached = null;
function lists(cfg) {
  if (cached && cached.cfg === cfg) return cached;
  const lower = (a) => new Set((a || []).map((s) => String(s).toLowerCase()));
  cached = { cfg, allow: lower(cfg.allow), deny: lower(cfg.deny), exempt: new Set(cfg.allow_sources || []) };
  return cached;
}

module.exports = {
  accept(event, ctx) {
    const l = lists(ctx.config);
    if (l.deny.has(event.pubkey)) return "blocked: pubkey is banned from this server";
    if (l.allow.size > 0 && !l.allow.has(event.pubkey) && !l.exempt.has(ctx.source))
      return "restricted: this server only accepts events from listed pubkeys";
  },
};
