// repo_quota: at most max_repos repository announcements (kind 30617) per
// pubkey. Updating an existing announcement (same d tag) is always allowed.
// Uses grasp.store.count, which honours this plugin's deadline.
//
//   [plugins.accept.config]
//   max_repos = 50
//   exempt    = ["<hex>"]
module.exports = {
  accept(event, ctx) {
    if (event.kind !== 30617) return;
    const cfg = ctx.config;
    const max = cfg.max_repos ?? 50;
    if ((cfg.exempt || []).includes(event.pubkey)) return;
    const d = (event.tags.find((t) => t[0] === "d") || [])[1] ?? "";
    if (grasp.store.exists({ kinds: [30617], authors: [event.pubkey], "#d": [d] })) return;
    const n = grasp.store.count({ kinds: [30617], authors: [event.pubkey] });
    if (n >= max) return `restricted: repository quota reached (${max} per pubkey)`;
  },
};
