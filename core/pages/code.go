package pages

import (
	"bytes"
	"html/template"
	"net/http"
	"strconv"
	"strings"

	"github.com/alecthomas/chroma/v2"
	chtml "github.com/alecthomas/chroma/v2/formatters/html"
	"github.com/alecthomas/chroma/v2/lexers"
	"github.com/alecthomas/chroma/v2/styles"
)

// A file is shown as numbered lines, each with its anchor (#L12, a link to
// itself), coloured by chroma on the server: no script runs in the page.
// A lexer's cost is the visitor's choice like Markdown's (chroma's lexers
// are regular expressions that backtrack), so highlighting goes through
// the render pool, its budget and its cache (bounds.go), and a file over
// maxHighlightBytes, of no known language, or not highlighted in time is
// shown with its line numbers and without colours.

// maxHighlightBytes: larger files are not coloured, nor files with a line
// longer than maxHighlightLine (minified code). chroma's cost grows with
// the tokens (about 50 µs each on a loaded 2-core machine: 2 s for 128 KiB
// of Go) and with the square of a line's length on some inputs (16 KiB of
// `"` on one line: 0.8 s); measured on v2.27.0, docs/benchmarks.md.
const (
	maxHighlightBytes = 64 << 10
	maxHighlightLine  = 1000
)

// maxCodeLines bounds the numbered lines of one view: a line costs its
// anchor and number (about 50 bytes) whatever its length, so 512 KiB of
// empty lines would otherwise make a 25 MB page.
const maxCodeLines = 10000

// codeStyle is the chroma style the colours come from.
const codeStyle = "github"

// codeCSS colours the token classes inside pre.chroma.
var codeCSS = func() template.CSS {
	var buf bytes.Buffer
	if err := chtml.New(chtml.WithClasses(true)).WriteCSS(&buf, styles.Get(codeStyle)); err != nil {
		return ""
	}
	// the token colours only: lines, numbers and the box are the layout's
	var keep []string
	for _, rule := range strings.Split(buf.String(), "\n") {
		if strings.Contains(rule, ".chroma .") && !strings.Contains(rule, "/* Line") {
			keep = append(keep, rule)
		}
	}
	return template.CSS(strings.Join(keep, "\n"))
}()

// codeView is a file's lines as a page shows them.
type codeView struct {
	Lines template.HTML
	CSS   template.CSS // the colours, when Lines are coloured
	Lang  string       // the language they are coloured as
	Plain string       // why they are not coloured, when a language was found
	Cut   int          // the lines shown when the file has more (maxCodeLines), else 0
}

func (v codeView) size() int { return len(v.Lines) + len(v.Lang) + len(v.Plain) }

// code shows src, the blob oid named name, as numbered lines, coloured
// when its language is known and the bounds allow.
func (p *Pages) code(r *http.Request, oid, name string, src []byte) codeView {
	if cut := firstLines(src, maxCodeLines); len(cut) < len(src) {
		v := p.code(r, oid, name, cut)
		v.Cut = maxCodeLines
		return v
	}
	const kind = "highlight"
	lexer := lexers.Match(name)
	if lexer == nil || isMarkdown(name) {
		// Markdown's source is shown under its rendering, uncoloured: its
		// shape was checked for goldmark, not for a lexer
		return codeView{Lines: plainLines(src)}
	}
	lang := lexer.Config().Name
	if len(src) > maxHighlightBytes {
		p.renders.count(kind, plainShape)
		return codeView{Lines: plainLines(src), Lang: lang, Plain: "files over " + humanSize(maxHighlightBytes) + " are not coloured"}
	}
	if longestLine(src) > maxHighlightLine {
		p.renders.count(kind, plainShape)
		return codeView{Lines: plainLines(src), Lang: lang, Plain: "lines over " + strconv.Itoa(maxHighlightLine) + " characters are not coloured"}
	}
	key := "hl|" + oid + "|" + lang + "|" + strconv.Itoa(len(src))
	if v, ok := p.cache.get(key); ok {
		p.renders.count(kind, fromCache)
		return v.(codeView)
	}
	v, outcome := p.renders.run(r.Context(), kind, p.opts.ClientIP(r), key, func() (any, bool) { return p.cache.get(key) }, func() any {
		it, err := chroma.Coalesce(lexer).Tokenise(nil, string(src))
		if err != nil {
			return codeView{Lines: plainLines(src), Lang: lang, Plain: "it could not be coloured"}
		}
		return codeView{Lines: tokenLines(it.Tokens()), CSS: codeCSS, Lang: lang}
	}, func(v any) { p.cache.put(key, v, v.(codeView).size()) })
	p.renders.count(kind, outcome)
	switch outcome {
	case rendered, fromCache:
		return v.(codeView)
	case plainBusy:
		return codeView{Lines: plainLines(src), Lang: lang, Plain: "the server is busy colouring other files; reload in a moment"}
	case plainBudget:
		return codeView{Lines: plainLines(src), Lang: lang, Plain: "it was not coloured within " + p.opts.RenderBudget.String() + "; reload in a moment"}
	}
	return codeView{Lines: plainLines(src), Lang: lang, Plain: "it could not be coloured"}
}

// tokenLines writes tokens as numbered lines, each token in a span of its
// chroma class.
func tokenLines(tokens []chroma.Token) template.HTML {
	var b strings.Builder
	for i, line := range chroma.SplitTokensIntoLines(tokens) {
		openLine(&b, i+1)
		for _, t := range line {
			text := strings.TrimSuffix(t.Value, "\n")
			if text == "" {
				continue
			}
			if c := tokenClass(t.Type); c != "" {
				b.WriteString(`<span class="` + c + `">`)
				template.HTMLEscape(&b, []byte(text))
				b.WriteString("</span>")
			} else {
				template.HTMLEscape(&b, []byte(text))
			}
		}
		b.WriteString("</span>")
	}
	return template.HTML(b.String())
}

// plainLines writes src as numbered lines without colours.
func plainLines(src []byte) template.HTML {
	var b strings.Builder
	b.Grow(len(src) + 64*bytes.Count(src, []byte{'\n'}))
	n := 0
	for len(src) > 0 {
		line := src
		if i := bytes.IndexByte(src, '\n'); i >= 0 {
			line, src = src[:i], src[i+1:]
		} else {
			src = nil
		}
		n++
		openLine(&b, n)
		template.HTMLEscape(&b, line)
		b.WriteString("</span>")
	}
	return template.HTML(b.String())
}

// openLine starts line n: its anchor and its number, which a reader's copy
// leaves out (user-select: none in the style).
func openLine(b *strings.Builder, n int) {
	id := "L" + strconv.Itoa(n)
	b.WriteString(`<span class="line" id="` + id + `"><a class="ln" href="#` + id + `">` + strconv.Itoa(n) + `</a>`)
}

// tokenClass is chroma's class for a token type, or its nearest parent's.
func tokenClass(t chroma.TokenType) string {
	for t != 0 {
		if c, ok := chroma.StandardTypes[t]; ok {
			return c
		}
		t = t.Parent()
	}
	return ""
}

// firstLines is src up to the end of its line n.
func firstLines(src []byte, n int) []byte {
	at := 0
	for range n {
		i := bytes.IndexByte(src[at:], '\n')
		if i < 0 {
			return src
		}
		at += i + 1
	}
	return src[:at]
}

// longestLine is the length in bytes of src's longest line.
func longestLine(src []byte) int {
	longest := 0
	for len(src) > 0 {
		i := bytes.IndexByte(src, '\n')
		if i < 0 {
			i = len(src)
		}
		longest = max(longest, i)
		src = src[min(i+1, len(src)):]
	}
	return longest
}
