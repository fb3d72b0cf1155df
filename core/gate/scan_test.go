package gate

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestScanFrame(t *testing.T) {
	cases := []struct {
		in    string
		label string
		n     int
		err   bool
	}{
		{in: `["EVENT",{"id":"x","tags":[["p","a"]]}]`, label: "EVENT", n: 2},
		{in: " [ \"REQ\" , \"s\" , {} , {\"#e\":[\"1\"]} ]\n", label: "REQ", n: 4},
		{in: `["CLOSE","a\"b"]`, label: "CLOSE", n: 2},
		{in: `["N\u0045G-MSG","s","61"]`, label: "NEG-MSG", n: 3},
		{in: `["X",1e400,-0,1.5,true,false,null]`, label: "X", n: 7},
		{in: `["X",[],{}]`, label: "X", n: 3},
		{in: ``, err: true},
		{in: `[`, err: true},
		{in: `[]`, err: true},
		{in: `[1]`, err: true},
		{in: `["X",]`, err: true},
		{in: `["X" "Y"]`, err: true},
		{in: `["X",{"a"}]`, err: true},
		{in: `["X",{"a":1,}]`, err: true},
		{in: `["X",tru]`, err: true},
		{in: `["X",-]`, err: true},
		{in: `["X",1.]`, err: true},
		{in: `["X",1e]`, err: true},
		{in: `["X","\u12"]`, err: true},
		{in: `["X"] x`, err: true},
		{in: `["X",` + strings.Repeat("[", maxFrameDepth) + strings.Repeat("]", maxFrameDepth) + `]`, err: true},
		{in: `["X",` + strings.Repeat("[", maxFrameDepth-1) + strings.Repeat("]", maxFrameDepth-1) + `]`, label: "X", n: 2},
	}
	for _, tc := range cases {
		f, err := scanFrame([]byte(tc.in), maxFrameDepth)
		if tc.err {
			if err == nil {
				t.Errorf("%q: no error", tc.in)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if string(f.label) != tc.label || f.n != tc.n {
			t.Errorf("%q: label %q n %d, want %q %d", tc.in, f.label, f.n, tc.label, tc.n)
		}
	}
	f, _ := scanFrame([]byte(`["REQ","s\u00e9",{}]`), maxFrameDepth)
	if s, ok := f.stringAt([]byte(`["REQ","s\u00e9",{}]`), 1); !ok || s != "sé" {
		t.Errorf("escaped subid decoded as %q", s)
	}
}

func TestAppendEnvelope(t *testing.T) {
	got := string(appendEnvelope(nil, "CLOSED", "s\"1", "blocked: é\n"))
	var v []string
	if err := json.Unmarshal([]byte(got), &v); err != nil {
		t.Fatalf("%s: %v", got, err)
	}
	if v[0] != "CLOSED" || v[1] != "s\"1" || v[2] != "blocked: é\n" {
		t.Fatalf("round trip gave %q", v)
	}
}

// FuzzScanFrame checks the scanner against encoding/json: whatever it
// accepts is valid JSON with the element count it reports, and valid
// shallow arrays with a string label are accepted.
func FuzzScanFrame(f *testing.F) {
	for _, s := range []string{
		`["EVENT",{"id":"ab","tags":[["e","x"]],"content":"\u00e9"}]`,
		`["REQ","sub",{"kinds":[1],"limit":10},{"#p":["a"]}]`,
		`["NEG-OPEN","n",{},"6100000200"]`,
		`["CLOSE","x"]`, `[]`, `[[[[`, `"x"`, `["a",1e400,-0.5E+3]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := scanFrame(b, maxFrameDepth)
		var elems []json.RawMessage
		jerr := json.Unmarshal(b, &elems)
		if err == nil {
			if jerr != nil {
				t.Fatalf("scanner accepted %q, encoding/json says %v", b, jerr)
			}
			if len(elems) != fr.n {
				t.Fatalf("%q: scanner counted %d elements, encoding/json %d", b, fr.n, len(elems))
			}
			var label string
			if json.Unmarshal(elems[0], &label) != nil || (utf8.Valid(fr.label) && label != string(fr.label)) {
				t.Fatalf("%q: label %q, encoding/json %q", b, fr.label, label)
			}
			for i := 0; i < fr.n && i < maxSpans; i++ {
				sp := fr.elems[i]
				if !json.Valid(b[sp.start:sp.end]) {
					t.Fatalf("%q: element %d span %q is not a JSON value", b, i, b[sp.start:sp.end])
				}
			}
			return
		}
		if jerr == nil && len(elems) > 0 && len(b) < 200 && !strings.Contains(string(b), strings.Repeat("[", 8)) &&
			!strings.Contains(string(b), strings.Repeat("{", 8)) {
			var label string
			if json.Unmarshal(elems[0], &label) == nil {
				t.Fatalf("scanner refused valid %q: %v", b, err)
			}
		}
	})
}

// strBytewise is the string rule of scanner.str stated a byte at a time
// (the scanner before it skipped plain bytes eight at a time): the
// reference the fast path is held to.
func strBytewise(s *scanner) error {
	s.i++
	for s.i < len(s.b) {
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

// Issue 27 part 5: the scanner skips plain string bytes eight at a time;
// it must still stop at every quote, backslash and control character
// wherever it falls in a word, and refuse what it refused with the same
// message and offset. Every byte value at every position of strings of
// every length up to 40, with and without the closing quote, and random
// mixes of the special bytes.
func TestScanStringSameAsBytewiseForEveryByteAtEveryPosition(t *testing.T) {
	check := func(b []byte) {
		t.Helper()
		fast, ref := scanner{b: b, maxDepth: maxFrameDepth}, scanner{b: b, maxDepth: maxFrameDepth}
		errFast, errRef := fast.str(), strBytewise(&ref)
		if fmt.Sprint(errFast) != fmt.Sprint(errRef) || fast.i != ref.i {
			t.Fatalf("str(%q) = %v at %d, byte at a time %v at %d", b, errFast, fast.i, errRef, ref.i)
		}
	}
	plain := []byte(`"the quick brown fox jumps over the lazy dog, 0123456789`)
	for n := 1; n <= 40; n++ {
		for pos := 1; pos < n; pos++ {
			for c := 0; c < 256; c++ {
				b := append([]byte(nil), plain[:n]...)
				b[pos] = byte(c)
				check(b)
				check(append(b, '"'))
				check(append(b, `"],"x"]`...))
			}
		}
	}
	r := rand.New(rand.NewSource(3))
	special := []byte{'"', '\\', 0, 0x1f, 0x20, 0x7f, 0x80, 0xff, 'u', 'n', '0', 'a', 'G'}
	for range 200000 {
		b := make([]byte, 1+r.Intn(40))
		b[0] = '"'
		for i := 1; i < len(b); i++ {
			if r.Intn(4) == 0 {
				b[i] = special[r.Intn(len(special))]
			} else {
				b[i] = plain[1+r.Intn(len(plain)-1)]
			}
		}
		check(b)
	}
}

// BenchmarkScanString is the scanner's string step on a 1,600-byte
// content (the corpus's average at least-256-byte content is ~1,700 B),
// against the byte-at-a-time rule in the same run (issue 27 part 5).
func BenchmarkScanString(b *testing.B) {
	content, _ := json.Marshal(strings.Repeat("Fix the parser: it read past the end.\n", 42))
	b.Run("words", func(b *testing.B) {
		b.SetBytes(int64(len(content)))
		for b.Loop() {
			s := scanner{b: content, maxDepth: maxFrameDepth}
			if err := s.str(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("bytewise", func(b *testing.B) {
		b.SetBytes(int64(len(content)))
		for b.Loop() {
			s := scanner{b: content, maxDepth: maxFrameDepth}
			if err := strBytewise(&s); err != nil {
				b.Fatal(err)
			}
		}
	})
}
