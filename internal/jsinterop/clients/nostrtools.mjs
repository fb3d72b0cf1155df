// Reconciles a local set against a relay with nostr-tools' NIP-77 client
// (NegentropySync over nostr-tools' Relay) and prints {have, need}.
//
// Usage: node nostrtools.mjs <relay url> <items.json>
// items.json: {"filter": {...}, "items": [{"created_at": n, "id": "hex"}, ...]}
//
// nip77 is not among nostr-tools' package exports, so it is imported by path;
// this file runs from the directory holding node_modules.
import { readFileSync } from "node:fs";
import WebSocket from "ws";
import { Relay, useWebSocketImplementation } from "nostr-tools/relay";
import { NegentropySync, NegentropyStorageVector } from "./node_modules/nostr-tools/lib/esm/nip77.js";

const [url, itemsFile] = process.argv.slice(2);
if (!url || !itemsFile) {
  console.error("usage: node nostrtools.mjs <relay url> <items.json>");
  process.exit(2);
}
const input = JSON.parse(readFileSync(itemsFile, "utf8"));

useWebSocketImplementation(WebSocket);

const storage = new NegentropyStorageVector();
for (const it of input.items) storage.insert(it.created_at, it.id);
storage.seal();

const relay = await Relay.connect(url);
const have = [];
const need = [];
let negErr = null;
const done = new Promise((resolve) => {
  const sync = new NegentropySync(relay, storage, input.filter, {
    onhave: (id) => have.push(id),
    onneed: (id) => need.push(id),
    // Called with nothing both when reconciliation finished and on NEG-ERR;
    // the NEG-ERR case is told apart by the hook below.
    onclose: (reason) => resolve(reason),
  });
  // NegentropySync reports NEG-ERR like a finished sync, so note it here.
  const handle = sync.subscription.oncustom;
  sync.subscription.oncustom = (data) => {
    if (data[0] === "NEG-ERR") negErr = String(data[2]);
    handle(data);
  };
  sync.start();
});
const reason = await done;
relay.close();
if (negErr !== null) {
  console.error(`relay answered NEG-ERR: ${negErr}`);
  process.exit(1);
}
if (reason) {
  console.error(`sync closed: ${reason}`);
  process.exit(1);
}
process.stdout.write(JSON.stringify({ have, need }) + "\n");
process.exit(0);
