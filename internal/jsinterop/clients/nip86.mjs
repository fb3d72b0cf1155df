// Calls one NIP-86 method on a relay the way a nostr-tools application
// does: the body is the JSON-RPC request, the Authorization header a NIP-98
// token made by nostr-tools' nip98.getToken over that body (its payload
// tag), signed by nostr-tools' finalizeEvent. Prints {"status", "body"}.
//
// Usage: node nip86.mjs <relay http url> <secret key hex> <method> [params json]
import { getToken } from "nostr-tools/nip98";
import { finalizeEvent } from "nostr-tools/pure";
import { hexToBytes } from "nostr-tools/utils";

const [url, skHex, method, paramsJSON] = process.argv.slice(2);
if (!url || !skHex || !method) {
  console.error("usage: node nip86.mjs <relay http url> <secret key hex> <method> [params json]");
  process.exit(2);
}
const sk = hexToBytes(skHex);
const request = { method, params: paramsJSON ? JSON.parse(paramsJSON) : [] };
const token = await getToken(url, "POST", (e) => finalizeEvent(e, sk), true, request);
const res = await fetch(url, {
  method: "POST",
  headers: { "Content-Type": "application/nostr+json+rpc", Authorization: token },
  body: JSON.stringify(request),
});
console.log(JSON.stringify({ status: res.status, body: await res.text() }));
