//go:build !libsecp256k1

package main

// libsecp256k1 reports whether go-nostr checks signatures with the cgo
// libsecp256k1 binding in this build.
const libsecp256k1 = false
