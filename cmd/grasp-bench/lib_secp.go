//go:build libsecp256k1

package main

const libsecp256k1 = true
