package nip34

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"
)

// MaxIdentifierBytes bounds a repository identifier so that "<id>.git" fits
// the 255-byte file-name limit of common filesystems.
const MaxIdentifierBytes = 251

// ValidateIdentifier checks a repository identifier (the `d` tag). It
// rejects only what cannot name a directory safely: empty, ".", "..",
// path separators, NUL and other control characters, invalid UTF-8 and
// over-long names. Spaces and emoji are fine: they are percent-encoded in
// URLs (ngit-grasp rejected them at first and had to relent, grasp.md §9.1).
func ValidateIdentifier(id string) error {
	switch {
	case id == "":
		return errors.New("identifier is empty")
	case id == "." || id == "..":
		return fmt.Errorf("identifier %q is a relative path", id)
	case len(id) > MaxIdentifierBytes:
		return fmt.Errorf("identifier is %d bytes, longer than %d", len(id), MaxIdentifierBytes)
	case !utf8.ValidString(id):
		return errors.New("identifier is not valid UTF-8")
	}
	for _, r := range id {
		switch {
		case r == '/' || r == '\\':
			return fmt.Errorf("identifier %q contains a path separator", id)
		case r == 0:
			return errors.New("identifier contains NUL")
		case r < 0x20 || r == 0x7f:
			return fmt.Errorf("identifier %q contains a control character", id)
		}
	}
	return nil
}

// EscapeIdentifier percent-encodes an identifier for use as one URL path
// segment, as RFC 3986 §2.1 and NIP-34's nostr:// URLs do: every byte
// outside the unreserved set (ALPHA / DIGIT / "-" / "." / "_" / "~") becomes
// %XX with uppercase hex. url.PathEscape is not used because it leaves
// sub-delims such as ":" and "@" bare, which clients then encode differently.
func EscapeIdentifier(id string) string {
	const hexdigits = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(id))
	for i := 0; i < len(id); i++ {
		c := id[i]
		if isUnreserved(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexdigits[c>>4])
		b.WriteByte(hexdigits[c&15])
	}
	return b.String()
}

// UnescapeIdentifier decodes a percent-encoded path segment and validates
// the result, so a request path can never smuggle "..", "/" or NUL into a
// filesystem lookup.
func UnescapeIdentifier(seg string) (string, error) {
	id, err := url.PathUnescape(seg)
	if err != nil {
		return "", fmt.Errorf("decode identifier %q: %w", seg, err)
	}
	if err := ValidateIdentifier(id); err != nil {
		return "", err
	}
	return id, nil
}

func isUnreserved(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}
