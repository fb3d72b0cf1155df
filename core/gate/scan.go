package gate

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
)

// maxSpans is how many top-level elements of a frame we remember. Every
// verb the gate inspects needs at most four (NEG-OPEN); the rest are only
// counted.
const maxSpans = 4

// span is a byte range [start, end) of one JSON value inside a frame.
type span struct{ start, end int }

// frame is what one pass over a client message tells us: that it is a
// well-formed JSON array within the depth limit, its label and the position
// of its first elements, found without decoding anything.
type frame struct {
	label []byte // the label, unescaped; switch on string(label) does not allocate
	n     int    // number of top-level elements, label included
	elems [maxSpans]span
}

// kindOf reports the JSON type of element i by its first byte.
func (f *frame) kindOf(b []byte, i int) byte {
	if i >= f.n || i >= maxSpans {
		return 0
	}
	switch c := b[f.elems[i].start]; c {
	case '"', '{', '[', 't', 'f', 'n':
		return c
	default:
		return '0'
	}
}

// stringAt decodes element i, which must be a JSON string.
func (f *frame) stringAt(b []byte, i int) (string, bool) {
	if f.kindOf(b, i) != '"' {
		return "", false
	}
	raw := b[f.elems[i].start:f.elems[i].end]
	inner := raw[1 : len(raw)-1]
	for _, c := range inner {
		if c == '\\' {
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return "", false
			}
			return s, true
		}
	}
	return string(inner), true
}

var (
	errNotArray  = errors.New("message is not a JSON array")
	errNoLabel   = errors.New("message label is not a string")
	errTooDeep   = errors.New("message is nested too deeply")
	errTrailing  = errors.New("unexpected data after the message")
	errTruncated = errors.New("message is truncated")
)

// scanFrame validates b as one JSON array (nesting at most maxDepth) whose
// first element is a string label, in a single pass without allocating
// (except for a label that uses escapes).
func scanFrame(b []byte, maxDepth int) (frame, error) {
	var f frame
	s := scanner{b: b, maxDepth: maxDepth}
	s.ws()
	if s.i >= len(b) || b[s.i] != '[' {
		return f, errNotArray
	}
	s.i++
	s.ws()
	if s.i < len(b) && b[s.i] == ']' {
		return f, errNoLabel
	}
	for {
		s.ws()
		start := s.i
		if err := s.value(1); err != nil {
			return f, err
		}
		if f.n < maxSpans {
			f.elems[f.n] = span{start, s.i}
		}
		f.n++
		s.ws()
		if s.i >= len(b) {
			return f, errTruncated
		}
		if b[s.i] == ']' {
			s.i++
			break
		}
		if b[s.i] != ',' {
			return f, fmt.Errorf("expected ',' or ']' at offset %d", s.i)
		}
		s.i++
	}
	s.ws()
	if s.i != len(b) {
		return f, errTrailing
	}
	if f.kindOf(b, 0) != '"' {
		return f, errNoLabel
	}
	raw := b[f.elems[0].start+1 : f.elems[0].end-1]
	if bytes.IndexByte(raw, '\\') < 0 {
		f.label = raw
		return f, nil
	}
	label, _ := f.stringAt(b, 0)
	f.label = []byte(label)
	return f, nil
}

type scanner struct {
	b        []byte
	i        int
	maxDepth int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) value(depth int) error {
	if s.i >= len(s.b) {
		return errTruncated
	}
	switch c := s.b[s.i]; {
	case c == '"':
		return s.str()
	case c == '[':
		return s.array(depth + 1)
	case c == '{':
		return s.object(depth + 1)
	case c == 't':
		return s.lit("true")
	case c == 'f':
		return s.lit("false")
	case c == 'n':
		return s.lit("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	default:
		return fmt.Errorf("unexpected byte %q at offset %d", c, s.i)
	}
}

func (s *scanner) lit(word string) error {
	if len(s.b)-s.i < len(word) || string(s.b[s.i:s.i+len(word)]) != word {
		return fmt.Errorf("invalid literal at offset %d", s.i)
	}
	s.i += len(word)
	return nil
}

func (s *scanner) str() error {
	s.i++ // opening quote
	for s.i < len(s.b) {
		// Most of a frame is string bytes that need nothing but a step
		// (an event's content, tags, id and signature): skip them eight at
		// a time, and take every other byte below one at a time (issue 27
		// part 5: the byte loop was ~4 µs of a 2 KB EVENT).
		for s.i+8 <= len(s.b) && plainString8(binary.LittleEndian.Uint64(s.b[s.i:])) {
			s.i += 8
		}
		if s.i >= len(s.b) {
			break
		}
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return nil
		case c == '\\':
			if s.i+1 >= len(s.b) {
				return errTruncated
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(s.b) {
					return errTruncated
				}
				for _, h := range s.b[s.i+2 : s.i+6] {
					if !isHex(h) {
						return fmt.Errorf("invalid \\u escape at offset %d", s.i)
					}
				}
				s.i += 6
			default:
				return fmt.Errorf("invalid escape at offset %d", s.i)
			}
		case c < 0x20:
			return fmt.Errorf("control character in string at offset %d", s.i)
		default:
			s.i++
		}
	}
	return errTruncated
}

func (s *scanner) number() error {
	start := s.i
	if s.b[s.i] == '-' {
		s.i++
	}
	if s.i >= len(s.b) {
		return errTruncated
	}
	if s.b[s.i] == '0' {
		s.i++
	} else if !s.digits() {
		return fmt.Errorf("invalid number at offset %d", start)
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if !s.digits() {
			return fmt.Errorf("invalid number at offset %d", start)
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if !s.digits() {
			return fmt.Errorf("invalid number at offset %d", start)
		}
	}
	return nil
}

func (s *scanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

func (s *scanner) array(depth int) error {
	if depth > s.maxDepth {
		return errTooDeep
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return nil
	}
	for {
		s.ws()
		if err := s.value(depth); err != nil {
			return err
		}
		s.ws()
		if s.i >= len(s.b) {
			return errTruncated
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return fmt.Errorf("expected ',' or ']' at offset %d", s.i)
		}
	}
}

func (s *scanner) object(depth int) error {
	if depth > s.maxDepth {
		return errTooDeep
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return nil
	}
	for {
		s.ws()
		if s.i >= len(s.b) {
			return errTruncated
		}
		if s.b[s.i] != '"' {
			return fmt.Errorf("expected object key at offset %d", s.i)
		}
		if err := s.str(); err != nil {
			return err
		}
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return fmt.Errorf("expected ':' at offset %d", s.i)
		}
		s.i++
		s.ws()
		if err := s.value(depth); err != nil {
			return err
		}
		s.ws()
		if s.i >= len(s.b) {
			return errTruncated
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return fmt.Errorf("expected ',' or '}' at offset %d", s.i)
		}
	}
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// plainString8 reports whether none of the eight bytes of w ends a JSON
// string, starts an escape or is a control character: none is '"', '\\'
// or below 0x20. Each test is the exact "some byte is below n" check
// ((w - n×ones) &^ w & high is non-zero iff some byte of w is below n,
// for n <= 0x80); '"' and '\\' are the bytes that XOR to zero.
func plainString8(w uint64) bool {
	const (
		ones = 0x0101010101010101
		high = 0x8080808080808080
	)
	q, bs := w^('"'*ones), w^('\\'*ones)
	return ((w-0x20*ones)&^w|(q-ones)&^q|(bs-ones)&^bs)&high == 0
}
