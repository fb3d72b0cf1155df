package git

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// ValidateIdentifier checks a NIP-34 `d` identifier before it is used as a
// directory name. The identifier is kept verbatim on disk (spaces and emoji
// included, G01-G1b); only what could escape the owner's directory or break
// the filesystem is refused.
func ValidateIdentifier(id string) error {
	switch {
	case id == "":
		return errors.New("invalid: identifier is empty")
	case id == "." || id == "..":
		return fmt.Errorf("invalid: identifier %q is reserved", id)
	case strings.ContainsAny(id, "/\\\x00"):
		return errors.New("invalid: identifier must not contain '/', '\\' or NUL")
	case len(id) > 255-len(".git"):
		return errors.New("invalid: identifier is too long")
	}
	return nil
}

// DecodeNpub validates a bech32 npub and returns the public key as 64
// lowercase hex characters. The owner segment of every path goes through it,
// so a directory name can only ever be a well-formed npub.
func DecodeNpub(npub string) (string, error) {
	data, err := bech32Decode(npub, "npub")
	if err != nil {
		return "", fmt.Errorf("invalid: owner %q is not an npub: %w", truncate(npub, 80), err)
	}
	if len(data) != 32 {
		return "", fmt.Errorf("invalid: npub decodes to %d bytes, want 32", len(data))
	}
	return hex.EncodeToString(data), nil
}

// EncodeNpub is the inverse of DecodeNpub.
func EncodeNpub(pubkeyHex string) (string, error) {
	raw, err := hex.DecodeString(pubkeyHex)
	if err != nil || len(raw) != 32 {
		return "", fmt.Errorf("invalid: public key %q is not 64 hex characters", truncate(pubkeyHex, 80))
	}
	return bech32Encode("npub", raw), nil
}

// RepoURLPath is the URL path of a repository: /<npub>/<percent-encoded id>.git.
func RepoURLPath(npub, id string) string {
	return "/" + npub + "/" + url.PathEscape(id) + ".git"
}

// IsGitPath reports whether an escaped URL path has the shape this package
// serves (/<npub…>/<id>.git with an optional git subpath), so the relay can
// route to the handler before falling back to its own pages.
func IsGitPath(escapedPath string) bool {
	_, _, _, ok := splitRepoPath(escapedPath)
	return ok
}

// splitRepoPath splits /<owner>/<pct-id>.git[/<sub>] without validating the
// owner or identifier. sub is "" for the repository page.
func splitRepoPath(escapedPath string) (owner, id, sub string, ok bool) {
	p := strings.TrimPrefix(escapedPath, "/")
	owner, rest, found := strings.Cut(p, "/")
	if !found || !strings.HasPrefix(owner, "npub1") {
		return "", "", "", false
	}
	seg, sub, _ := strings.Cut(rest, "/")
	if !strings.HasSuffix(seg, ".git") {
		return "", "", "", false
	}
	raw, err := url.PathUnescape(strings.TrimSuffix(seg, ".git"))
	if err != nil {
		return "", "", "", false
	}
	return owner, raw, sub, true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

const bech32Charset = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"

func bech32Polymod(values []byte) uint32 {
	gen := [5]uint32{0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3}
	chk := uint32(1)
	for _, v := range values {
		top := chk >> 25
		chk = (chk&0x1ffffff)<<5 ^ uint32(v)
		for i := 0; i < 5; i++ {
			if (top>>uint(i))&1 == 1 {
				chk ^= gen[i]
			}
		}
	}
	return chk
}

func bech32HRPExpand(hrp string) []byte {
	out := make([]byte, 0, len(hrp)*2+1)
	for i := 0; i < len(hrp); i++ {
		out = append(out, hrp[i]>>5)
	}
	out = append(out, 0)
	for i := 0; i < len(hrp); i++ {
		out = append(out, hrp[i]&31)
	}
	return out
}

// bech32Decode accepts only the lowercase form: npubs in URLs and on disk
// must have exactly one spelling, or two paths could name one repository.
func bech32Decode(s, wantHRP string) ([]byte, error) {
	if len(s) > 120 {
		return nil, errors.New("too long")
	}
	pos := strings.LastIndexByte(s, '1')
	if pos < 1 || pos+7 > len(s) {
		return nil, errors.New("missing separator or checksum")
	}
	if s[:pos] != wantHRP {
		return nil, fmt.Errorf("prefix is not %q", wantHRP)
	}
	values := make([]byte, 0, len(s)-pos-1)
	for i := pos + 1; i < len(s); i++ {
		idx := strings.IndexByte(bech32Charset, s[i])
		if idx < 0 {
			return nil, fmt.Errorf("invalid character %q", s[i])
		}
		values = append(values, byte(idx))
	}
	if bech32Polymod(append(bech32HRPExpand(wantHRP), values...)) != 1 {
		return nil, errors.New("bad checksum")
	}
	return convertBits(values[:len(values)-6], 5, 8, false)
}

func bech32Encode(hrp string, data []byte) string {
	values, _ := convertBits(data, 8, 5, true)
	poly := bech32Polymod(append(append(bech32HRPExpand(hrp), values...), 0, 0, 0, 0, 0, 0)) ^ 1
	var b strings.Builder
	b.WriteString(hrp)
	b.WriteByte('1')
	for _, v := range values {
		b.WriteByte(bech32Charset[v])
	}
	for i := 0; i < 6; i++ {
		b.WriteByte(bech32Charset[(poly>>uint(5*(5-i)))&31])
	}
	return b.String()
}

func convertBits(data []byte, from, to uint, pad bool) ([]byte, error) {
	var acc, bits uint
	maxv := uint(1)<<to - 1
	out := make([]byte, 0, len(data)*int(from)/int(to)+1)
	for _, v := range data {
		acc = acc<<from | uint(v)
		bits += from
		for bits >= to {
			bits -= to
			out = append(out, byte(acc>>bits&maxv))
		}
	}
	if pad {
		if bits > 0 {
			out = append(out, byte(acc<<(to-bits)&maxv))
		}
	} else if bits >= from || acc<<(to-bits)&maxv != 0 {
		return nil, errors.New("invalid padding")
	}
	return out, nil
}
