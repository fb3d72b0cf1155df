package git

import (
	"strconv"
	"strings"
)

// MaxLoggedRefs bounds the refs one log line lists: a push of a thousand
// tags is one line naming the first ten and how many more.
const MaxLoggedRefs = 10

// RefsMoved is how a log line lists a push's ref updates:
// "refs/heads/main 1a2b3c4d5e→5d6e7f8a9b", the short ids of the push's
// refusal messages (shortOID; 0000000000 for a ref created or deleted),
// comma-separated, at most MaxLoggedRefs
// of them and then "(+N more)". The ref names are the client's: quoted
// when they hold anything but printable ASCII, so a line stays one line.
func RefsMoved(us []RefUpdate) string {
	var b strings.Builder
	for i, u := range us {
		if i == MaxLoggedRefs {
			b.WriteString(" (+" + strconv.Itoa(len(us)-i) + " more)")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(printable(u.Ref))
		b.WriteString(" " + printable(ShortOID(u.Old)) + "→" + printable(ShortOID(u.New)))
	}
	return b.String()
}

// printable is s, or s quoted when it holds a byte outside printable
// ASCII or a space or comma (which would make the list ambiguous).
func printable(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c > '~' || c == ',' || c == '"' {
			return strconv.Quote(s)
		}
	}
	return s
}
