// git_only: an example operator policy for a server that hosts git
// collaboration and nothing else.
//
// * only NIP-34 kinds (plus deletions, replies and user grasp lists) are kept;
// * patches larger than max_patch_bytes are refused;
// * events synced from relays not in trusted_relays are dropped silently;
// * optionally, repository announcements require NIP-42 auth by their author.
const kinds = require("./kinds.js");

module.exports = {
  accept(event, ctx) {
    const cfg = ctx.config;
    if (!kinds.ALLOWED.has(event.kind)) return "blocked: this server only stores git collaboration events (NIP-34)";

    if (event.kind === kinds.PATCH && event.content.length > (cfg.max_patch_bytes ?? 262144))
      return "invalid: patch too large; push a branch and open a pull request instead";

    if (ctx.source === "sync" && cfg.trusted_relays && !cfg.trusted_relays.includes(ctx.remote))
      return { action: "shadowReject" };

    if (cfg.announce_needs_auth && event.kind === kinds.ANNOUNCEMENT && ctx.source === "client" && ctx.authed !== event.pubkey) {
      grasp.log.info("announcement without auth", { pubkey: event.pubkey, remote: ctx.remote });
      return "auth-required: authenticate as the repository owner to announce it";
    }
  },
};
