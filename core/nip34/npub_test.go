package nip34

import "testing"

// The vector is the example of NIP-19.
const (
	vecHex  = "7e7e9c42a91bfef19fa929e5fda1b72e0ebc1a4c1141673e2794234d86addf4e"
	vecNpub = "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjptg"
)

func TestNpubRoundTrip(t *testing.T) {
	if got := Npub(vecHex); got != vecNpub {
		t.Fatalf("Npub = %q, want %q", got, vecNpub)
	}
	hex, err := DecodeNpub(vecNpub)
	if err != nil || hex != vecHex {
		t.Fatalf("DecodeNpub = %q, %v", hex, err)
	}
	for _, pk := range []string{pkA, pkB, pkC} {
		back, err := DecodeNpub(Npub(pk))
		if err != nil || back != pk {
			t.Fatalf("round trip %s: %q %v", pk, back, err)
		}
	}
}

func TestNpubRejectsCorruption(t *testing.T) {
	bad := []string{
		vecNpub[:len(vecNpub)-1] + "h", // checksum
		"nsec" + vecNpub[4:],           // prefix
		"npub1",                        // empty
		"Npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjptg", // mixed case
		"npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjpbg", // wrong char
	}
	for _, s := range bad {
		if hex, err := DecodeNpub(s); err == nil {
			t.Errorf("DecodeNpub(%q) = %q, want error", s, hex)
		}
	}
	if Npub("xyz") != "" {
		t.Error("Npub of invalid hex is not empty")
	}
}
