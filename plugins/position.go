package plugins

import (
	"bytes"
	"os"
	"regexp"
	"strconv"
	"unicode/utf16"
)

// moduleWrapper is the text goja_nodejs puts in front of every module's
// source before compiling it (require/module.go, getCompiledSource). goja
// counts columns from the start of that wrapped text, and in bytes: an error
// on a file's first line is shifted right by the wrapper's length, and one
// after a non-ASCII character (an em dash is three bytes) by the extra
// bytes. Operators read positions in an editor, which counts characters.
const moduleWrapper = "(function(exports,require,module,__filename,__dirname){"

var (
	// "at accept (/dir/gate.js:4:9(7))": a stack frame; "(7)" is goja's
	// program counter, noise to a script's author.
	framePos = regexp.MustCompile(`(/[^\s:()]+\.js):(\d+):(\d+)(?:\(\d+\))?`)
	// "SyntaxError: /dir/gate.js: Line 3:30 Unexpected token".
	syntaxPos = regexp.MustCompile(`(/[^\s:()]+\.js): Line (\d+):(\d+)`)
)

// fixPositions rewrites the positions goja reports for modules inside the
// plugin directory to the file's own line and character column.
func (j *jail) fixPositions(msg string) string {
	if j == nil {
		return msg
	}
	fix := func(re *regexp.Regexp, format func(path, line, col string) string) {
		msg = re.ReplaceAllStringFunc(msg, func(m string) string {
			g := re.FindStringSubmatch(m)
			line, _ := strconv.Atoi(g[2])
			col, _ := strconv.Atoi(g[3])
			if c, ok := j.column(g[1], line, col); ok {
				return format(g[1], g[2], strconv.Itoa(c))
			}
			return m
		})
	}
	fix(framePos, func(p, l, c string) string { return p + ":" + l + ":" + c })
	fix(syntaxPos, func(p, l, c string) string { return p + ": Line " + l + ":" + c })
	return msg
}

// column maps goja's column (1-based bytes of the wrapped source) on line
// to the 1-based character column of the file as written.
func (j *jail) column(path string, line, col int) (int, bool) {
	if line < 1 || col < 1 || !j.inside(path) {
		return 0, false
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	lines := bytes.Split(src, []byte("\n"))
	if line > len(lines) {
		return 0, false
	}
	off := col - 1
	if line == 1 {
		off -= len(moduleWrapper)
	}
	text := lines[line-1]
	off = max(0, min(off, len(text)))
	return len(utf16.Encode([]rune(string(text[:off])))) + 1, true
}
