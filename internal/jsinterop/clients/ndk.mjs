// Reconciles a local set against a relay with NDK's NIP-77 client
// (NDKSync from @nostr-dev-kit/sync, which opens with its filters in an
// array) and prints {have, need}.
//
// Usage: node ndk.mjs <relay url> <items.json>
// items.json: {"filter": {...}, "items": [{"created_at": n, "id": "hex"}, ...]}
//
// NDKSync takes the local set from NDK's cache adapter, so the items are
// served by a small in-memory adapter. It asks the relay's NIP-11 document
// whether it speaks NIP-77 unless the adapter already knows; the gate alone
// serves no NIP-11 (core/relay does), so the adapter says it does, and
// without that NDKSync would fall back to a plain REQ.
import { readFileSync } from "node:fs";
import WebSocket from "ws";
import NDK, { NDKEvent } from "@nostr-dev-kit/ndk";
import { NDKSync } from "@nostr-dev-kit/sync";

const [url, itemsFile] = process.argv.slice(2);
if (!url || !itemsFile) {
  console.error("usage: node ndk.mjs <relay url> <items.json>");
  process.exit(2);
}
const input = JSON.parse(readFileSync(itemsFile, "utf8"));

globalThis.WebSocket = WebSocket;
// NDK's sync hashes with the Web Crypto global, which node has by default
// from 19 on; Debian 12's nodejs is 18.
if (!globalThis.crypto) globalThis.crypto = (await import("node:crypto")).webcrypto;

let ndk;
const cached = () =>
  input.items.map(
    (it) =>
      new NDKEvent(ndk, {
        id: it.id,
        created_at: it.created_at,
        kind: 1,
        pubkey: "0".repeat(64),
        content: "",
        tags: [],
        sig: "0".repeat(128),
      }),
  );
const cacheAdapter = {
  locking: false,
  query: () => cached(),
  setEvent: async () => {},
  getRelayStatus: () => ({ metadata: { sync: { supportsNegentropy: true, lastChecked: Date.now() } } }),
  updateRelayStatus: () => {},
};

// Without the outbox model NDK talks to the relay under test only (it would
// otherwise also dial its default outbox relays on the internet).
ndk = new NDK({ explicitRelayUrls: [url], cacheAdapter, enableOutboxModel: false });
await ndk.connect(30_000);

const errors = [];
const sync = new NDKSync(ndk);
const result = await sync.sync([input.filter], {
  relayUrls: [url],
  autoFetch: false,
  onRelayError: (relay, err) => errors.push(`${relay.url}: ${err.message}`),
});
if (errors.length > 0) {
  console.error(`sync failed: ${errors.join("; ")}`);
  process.exit(1);
}
process.stdout.write(JSON.stringify({ have: [...result.have], need: [...result.need] }) + "\n");
process.exit(0);
