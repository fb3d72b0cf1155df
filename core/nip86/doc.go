// Package nip86 owns the operator's live administration over NIP-86
// (issue 25 part 3): the JSON-RPC endpoint on the public listener (a POST
// of application/nostr+json+rpc to the relay's URL, authorised by a NIP-98
// token of an operator key — relay.pubkey or relay.admin_pubkeys — with the
// body's hash in its payload tag), the lists it edits (banned and allowed
// pubkeys and events, allowed and disallowed kinds, blocked client
// addresses, GRASP-08 members, nips#2408 invite claims, the relay's name,
// description and icon), kept in a side table so they survive restarts and
// are shared by every instance on PostgreSQL, and the acceptance check
// those lists make (State.Accept, first in the pipeline), and the thin
// client `grasp admin` uses (Call).
//
// It never closes connections, edits purgatory or reads the store itself:
// State.OnChange tells the server, whose hooks apply a change to live
// connections and held events on every instance.
package nip86
