package pages

import (
	"bytes"
	"fmt"
)

// Bounds of the Markdown shape check. goldmark's cost grows with the
// square of container nesting and of link openers whose destination never
// closes, and a GFM table pads every row to the delimiter row's width, so
// 16 KiB of input made 55 MB of HTML (measured on v1.8.7; the figures are in
// docs/benchmarks.md). Markdown written for people stays far inside these.
const (
	// maxMarkdownBytes: larger Markdown is shown as plain text.
	maxMarkdownBytes = 64 << 10
	// maxMarkdownNesting bounds block quotes and list items opened on one
	// line (`> > - 1.`).
	maxMarkdownNesting = 16
	// maxBracketNesting bounds `[` open at once in a paragraph.
	maxBracketNesting = 32
	// maxUnclosedLinks bounds `](` with no `)` after it on its line, per
	// paragraph.
	maxUnclosedLinks = 32
	// maxTableCells bounds the cells of the tables of a file (columns of
	// the delimiter row times the rows under it).
	maxTableCells = 20000
	// maxMarkdownHTML bounds the rendered HTML; beyond it the file is shown
	// as plain text.
	maxMarkdownHTML = 1 << 20
)

// markdownShape says why src must not be given to the Markdown parser, or
// "" when it may. It reads the bytes once, in linear time, and is
// deliberately coarse: it over-counts (code spans and escapes are not
// skipped), which only ever shows an odd file as plain text.
func markdownShape(src []byte) string {
	if len(src) > maxMarkdownBytes {
		return fmt.Sprintf("it is larger than %s", humanSize(maxMarkdownBytes))
	}
	var (
		brackets, unclosed int // in the current paragraph
		tableCols          int // columns of the table being read, 0 outside one
		cells              int
		prevText           bool // the previous line was not blank
		closedAtEnd        bool // the previous line ended with `]`
	)
	for len(src) > 0 {
		line := src
		if i := bytes.IndexByte(src, '\n'); i >= 0 {
			line, src = src[:i], src[i+1:]
		} else {
			src = nil
		}
		trimmed := bytes.TrimSpace(line)
		if len(trimmed) == 0 {
			brackets, unclosed, tableCols, prevText, closedAtEnd = 0, 0, 0, false, false
			continue
		}
		// `[a]` then `(` on the next line opens a destination too
		if closedAtEnd && trimmed[0] == '(' && bytes.IndexByte(trimmed, ')') < 0 {
			if unclosed++; unclosed > maxUnclosedLinks {
				return fmt.Sprintf("it has more than %d unclosed links in a paragraph", maxUnclosedLinks)
			}
		}
		closedAtEnd = trimmed[len(trimmed)-1] == ']'
		if d := containerDepth(line); d > maxMarkdownNesting {
			return fmt.Sprintf("it nests block quotes or lists more than %d deep", maxMarkdownNesting)
		}
		for i := 0; i < len(line); i++ {
			switch line[i] {
			case '[':
				if brackets++; brackets > maxBracketNesting {
					return fmt.Sprintf("it opens more than %d brackets at once", maxBracketNesting)
				}
			case ']':
				if brackets > 0 {
					brackets--
				}
				if i+1 < len(line) && line[i+1] == '(' && bytes.IndexByte(line[i+1:], ')') < 0 {
					if unclosed++; unclosed > maxUnclosedLinks {
						return fmt.Sprintf("it has more than %d unclosed links in a paragraph", maxUnclosedLinks)
					}
				}
			}
		}
		switch {
		case tableCols > 0:
			cells += tableCols
		case prevText && isDelimiterRow(line):
			tableCols = bytes.Count(bytes.Trim(bytes.TrimSpace(line), "|"), []byte("|")) + 1
			cells += 2 * tableCols // the header and the delimiter row
		}
		if cells > maxTableCells {
			return fmt.Sprintf("its tables have more than %d cells", maxTableCells)
		}
		prevText = true
	}
	return ""
}

// containerDepth counts the block quote and list markers that open a line.
func containerDepth(line []byte) int {
	depth, i := 0, 0
	for {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i >= len(line) {
			return depth
		}
		switch c := line[i]; {
		case c == '>':
			i++
		case c == '-' || c == '*' || c == '+':
			if i+1 < len(line) && line[i+1] != ' ' && line[i+1] != '\t' {
				return depth
			}
			i++
		case c >= '0' && c <= '9':
			j := i
			for j < len(line) && j-i < 9 && line[j] >= '0' && line[j] <= '9' {
				j++
			}
			if j >= len(line) || (line[j] != '.' && line[j] != ')') || (j+1 < len(line) && line[j+1] != ' ' && line[j+1] != '\t') {
				return depth
			}
			i = j + 1
		default:
			return depth
		}
		depth++
	}
}

// isDelimiterRow reports whether line could be a GFM table's delimiter
// row: pipes, dashes, colons and spaces, with a dash.
func isDelimiterRow(line []byte) bool {
	dash := false
	for _, c := range line {
		switch c {
		case '-':
			dash = true
		case '|', ':', ' ', '\t':
		default:
			return false
		}
	}
	return dash && bytes.IndexByte(line, '|') >= 0
}
