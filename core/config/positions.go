package config

import (
	"sort"
	"strconv"
	"strings"
)

// position is a 1-based line and column in the source. Line 0 means unknown
// (the key came from a default, not from the file).
type position struct{ Line, Col int }

// keyPositions maps every key path of a TOML document to where it is written.
// Paths use dots between keys and [i] for array elements, so the second
// [[plugins.accept]] table's timeout is "plugins.accept[1].timeout".
//
// BurntSushi/toml records key positions but does not export them, and its
// decoder stops at the first problem; we want every unknown key and every
// invalid value reported with its place. The document has already been parsed
// by the real parser, so this scanner only needs to be right on valid TOML
// and simply stops on anything it does not understand.
type keyPositions map[string]position

func scanPositions(src []byte) keyPositions {
	s := &scanner{src: string(src), pos: keyPositions{}, arrays: map[string]int{}}
	s.lineStarts = []int{0}
	for i := 0; i < len(s.src); i++ {
		if s.src[i] == '\n' {
			s.lineStarts = append(s.lineStarts, i+1)
		}
	}
	defer func() {
		// A scanner bug must never break config loading; positions are only
		// decoration on messages.
		_ = recover()
	}()
	s.document()
	return s.pos
}

// lookup returns the position of path, or of its nearest written ancestor.
func (kp keyPositions) lookup(path string) position {
	for path != "" {
		if p, ok := kp[path]; ok {
			return p
		}
		cut := strings.LastIndexAny(path, ".[")
		if cut < 0 {
			break
		}
		path = path[:cut]
	}
	return position{}
}

type scanner struct {
	src        string
	i          int
	lineStarts []int
	pos        keyPositions
	arrays     map[string]int // array-of-tables path -> tables seen so far
	table      string         // current table path
}

func (s *scanner) at(off int) position {
	line := sort.Search(len(s.lineStarts), func(k int) bool { return s.lineStarts[k] > off })
	return position{Line: line, Col: off - s.lineStarts[line-1] + 1}
}

func (s *scanner) eof() bool { return s.i >= len(s.src) }

func (s *scanner) peek() byte {
	if s.eof() {
		return 0
	}
	return s.src[s.i]
}

// skipSpace skips blanks and comments, and newlines too when nl is set.
func (s *scanner) skipSpace(nl bool) {
	for !s.eof() {
		switch c := s.src[s.i]; {
		case c == ' ' || c == '\t' || c == '\r':
			s.i++
		case c == '\n' && nl:
			s.i++
		case c == '#':
			for !s.eof() && s.src[s.i] != '\n' {
				s.i++
			}
		default:
			return
		}
	}
}

func (s *scanner) document() {
	for {
		s.skipSpace(true)
		if s.eof() {
			return
		}
		if s.peek() == '[' {
			if !s.header() {
				return
			}
			continue
		}
		start := s.i
		parts, ok := s.key()
		if !ok {
			return
		}
		path := joinPath(s.table, parts)
		s.pos[path] = s.at(start)
		s.skipSpace(false)
		if s.peek() != '=' {
			return
		}
		s.i++
		if !s.value(path) {
			return
		}
	}
}

func (s *scanner) header() bool {
	start := s.i
	double := strings.HasPrefix(s.src[s.i:], "[[")
	if double {
		s.i += 2
	} else {
		s.i++
	}
	s.skipSpace(false)
	parts, ok := s.key()
	if !ok {
		return false
	}
	s.skipSpace(false)
	closer := "]"
	if double {
		closer = "]]"
	}
	if !strings.HasPrefix(s.src[s.i:], closer) {
		return false
	}
	s.i += len(closer)
	if double {
		parent := s.resolve(parts[:len(parts)-1])
		base := joinPath(parent, parts[len(parts)-1:])
		n := s.arrays[base]
		s.arrays[base] = n + 1
		s.table = base + "[" + strconv.Itoa(n) + "]"
	} else {
		s.table = s.resolve(parts)
	}
	s.pos[s.table] = s.at(start)
	return true
}

// resolve turns header key parts into a path, indexing through arrays of
// tables: [plugins.accept.config] after two [[plugins.accept]] is
// "plugins.accept[1].config".
func (s *scanner) resolve(parts []string) string {
	path := ""
	for _, p := range parts {
		path = joinPath(path, []string{p})
		if n := s.arrays[path]; n > 0 {
			path += "[" + strconv.Itoa(n-1) + "]"
		}
	}
	return path
}

func joinPath(prefix string, parts []string) string {
	k := strings.Join(parts, ".")
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}

// key reads a possibly dotted key of bare and quoted parts.
func (s *scanner) key() ([]string, bool) {
	var parts []string
	for {
		s.skipSpace(false)
		switch c := s.peek(); {
		case c == '"':
			v, ok := s.basicString()
			if !ok {
				return nil, false
			}
			parts = append(parts, v)
		case c == '\'':
			end := strings.IndexByte(s.src[s.i+1:], '\'')
			if end < 0 {
				return nil, false
			}
			parts = append(parts, s.src[s.i+1:s.i+1+end])
			s.i += end + 2
		case isBare(c):
			start := s.i
			for !s.eof() && isBare(s.src[s.i]) {
				s.i++
			}
			parts = append(parts, s.src[start:s.i])
		default:
			return nil, false
		}
		s.skipSpace(false)
		if s.peek() != '.' {
			return parts, true
		}
		s.i++
	}
}

func isBare(c byte) bool {
	return c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// basicString reads a one-line "..." string; the value is only used for
// quoted keys, so escapes other than \" and \\ are kept as written.
func (s *scanner) basicString() (string, bool) {
	var b strings.Builder
	for j := s.i + 1; j < len(s.src); j++ {
		switch c := s.src[j]; c {
		case '\\':
			if j+1 < len(s.src) && (s.src[j+1] == '"' || s.src[j+1] == '\\') {
				b.WriteByte(s.src[j+1])
				j++
				continue
			}
			b.WriteByte(c)
		case '"':
			s.i = j + 1
			return b.String(), true
		case '\n':
			return "", false
		default:
			b.WriteByte(c)
		}
	}
	return "", false
}

func (s *scanner) value(path string) bool {
	s.skipSpace(false)
	switch rest := s.src[s.i:]; {
	case strings.HasPrefix(rest, `"""`):
		return s.multiline(`"""`, true)
	case strings.HasPrefix(rest, `'''`):
		return s.multiline(`'''`, false)
	case strings.HasPrefix(rest, `"`):
		_, ok := s.basicString()
		return ok
	case strings.HasPrefix(rest, `'`):
		end := strings.IndexByte(rest[1:], '\'')
		if end < 0 {
			return false
		}
		s.i += end + 2
		return true
	case strings.HasPrefix(rest, "["):
		s.i++
		for n := 0; ; n++ {
			s.skipSpace(true)
			if s.peek() == ']' {
				s.i++
				return true
			}
			elem := path + "[" + strconv.Itoa(n) + "]"
			s.pos[elem] = s.at(s.i)
			if !s.value(elem) {
				return false
			}
			s.skipSpace(true)
			if s.peek() == ',' {
				s.i++
			}
		}
	case strings.HasPrefix(rest, "{"):
		s.i++
		for {
			s.skipSpace(true)
			if s.peek() == '}' {
				s.i++
				return true
			}
			start := s.i
			parts, ok := s.key()
			if !ok {
				return false
			}
			sub := joinPath(path, parts)
			s.pos[sub] = s.at(start)
			s.skipSpace(false)
			if s.peek() != '=' {
				return false
			}
			s.i++
			if !s.value(sub) {
				return false
			}
			s.skipSpace(true)
			if s.peek() == ',' {
				s.i++
			}
		}
	default:
		start := s.i
		for !s.eof() && !strings.ContainsRune(",]}\n#", rune(s.src[s.i])) {
			s.i++
		}
		return s.i > start
	}
}

func (s *scanner) multiline(delim string, escapes bool) bool {
	for j := s.i + len(delim); j < len(s.src); j++ {
		if escapes && s.src[j] == '\\' {
			j++
			continue
		}
		if strings.HasPrefix(s.src[j:], delim) {
			// up to two extra quotes may belong to the content
			end := j + len(delim)
			for k := 0; k < 2 && end < len(s.src) && s.src[end] == delim[0]; k++ {
				end++
			}
			s.i = end
			return true
		}
	}
	return false
}
