package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// The generated texts only need the shape of the real thing: sizes, line
// lengths, the characters JSON has to escape (newlines, quotes, tabs) and
// enough variety that stores cannot compress them away.

var words = strings.Fields(`the a to of and in is it that for on with as this be by not are from or at
an if when then else use add fix remove update refactor support handle return error value config
repository branch commit patch merge rebase push clone fetch remote ref state event relay server client
request response message filter subscription index store query cache buffer stream reader writer
timeout retry backoff limit size count length offset cursor page batch queue worker pool lock mutex
channel context cancel deadline signal process thread goroutine memory allocation garbage collector
test benchmark fuzz race panic recover log metric trace span tag label key pubkey signature verify
hash digest encode decode parse serialize json binary hex base64 utf8 string bytes slice map struct
interface method function closure pointer nil zero default option flag argument parameter variable
should would could might must will can does did was were has have had been being make makes made
new old first last next previous current early late fast slow small large empty full broken working
because however although while since until unless before after during between across through without`)

var identifiers = strings.Fields(`ctx err buf n i j k opts cfg req resp conn store evt filter sub id ok
path dir name key val out res tmp count limit offset size data msg log repo ref oid tree blob`)

var funcs = strings.Fields(`Open Close Read Write Parse Encode Decode Query Save Delete Replace Match
Publish Subscribe Broadcast Verify Sign Fetch Push Clone Align Release Hold Expire Sweep Start Stop`)

var fileNames = strings.Fields(`src/relay.rs src/store.rs src/main.rs src/git.rs src/sync.rs lib/index.ts
lib/events.ts lib/filter.ts pkg/server/server.go pkg/store/badger.go pkg/git/handler.go cmd/app/main.go
README.md docs/config.md Cargo.toml package.json go.mod internal/queue/queue.go web/app.js web/style.css`)

var firstNames = strings.Fields(`Alice Bob Carol Dave Erin Frank Grace Heidi Ivan Judy Mallory Niaj Olivia
Peggy Rupert Sybil Trent Victor Walter Yara Zoe`)

// logNormal draws a size with the given median and spread, clamped.
func logNormal(rng *rand.Rand, median, sigma float64, lo, hi int) int {
	v := int(median * math.Exp(sigma*rng.NormFloat64()))
	return max(lo, min(hi, v))
}

func pick(rng *rand.Rand, list []string) string { return list[rng.IntN(len(list))] }

// sentence is 4–18 words, capitalised, with a full stop.
func sentence(rng *rand.Rand) string {
	n := 4 + rng.IntN(15)
	var b strings.Builder
	for i := range n {
		w := pick(rng, words)
		if i == 0 {
			w = strings.ToUpper(w[:1]) + w[1:]
		} else {
			b.WriteByte(' ')
		}
		if rng.IntN(25) == 0 {
			w = "`" + pick(rng, identifiers) + "`"
		}
		b.WriteString(w)
	}
	b.WriteByte('.')
	return b.String()
}

// prose is markdown-ish paragraphs of about size bytes.
func prose(rng *rand.Rand, size int) string {
	var b strings.Builder
	for b.Len() < size {
		if b.Len() > 0 {
			if rng.IntN(4) == 0 {
				b.WriteString("\n\n")
			} else {
				b.WriteByte(' ')
			}
		}
		switch rng.IntN(12) {
		case 0:
			b.WriteString("\n```\n" + codeLine(rng) + "\n" + codeLine(rng) + "\n```\n")
		case 1:
			b.WriteString("\n- " + sentence(rng) + "\n- " + sentence(rng) + "\n")
		default:
			b.WriteString(sentence(rng))
		}
	}
	return b.String()
}

// codeLine is one line of plausible source code.
func codeLine(rng *rand.Rand) string {
	indent := strings.Repeat("\t", rng.IntN(4))
	a, c := pick(rng, identifiers), pick(rng, identifiers)
	switch rng.IntN(8) {
	case 0:
		return fmt.Sprintf(`%sif %s != nil {`, indent, a)
	case 1:
		return fmt.Sprintf(`%sreturn %s, fmt.Errorf("%s %s: %%w", %s)`, indent, c, pick(rng, words), pick(rng, words), a)
	case 2:
		return fmt.Sprintf(`%s%s, err := %s.%s(ctx, %s)`, indent, a, c, pick(rng, funcs), pick(rng, identifiers))
	case 3:
		return fmt.Sprintf(`%s// %s`, indent, sentence(rng))
	case 4:
		return fmt.Sprintf(`%sfor _, %s := range %s {`, indent, a, c)
	case 5:
		return fmt.Sprintf(`%s}`, indent)
	case 6:
		return fmt.Sprintf(`%s%s.%s = append(%s.%s, %s)`, indent, a, c, a, c, pick(rng, identifiers))
	}
	return fmt.Sprintf(`%slet %s = %s::%s(&%s)?;`, indent, a, strings.ToLower(pick(rng, funcs)), pick(rng, funcs), c)
}

// hexID is n random lowercase hex characters (a git object id for n = 40).
func hexID(rng *rand.Rand, n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[rng.IntN(16)]
	}
	return string(b)
}

// formatPatch is a `git format-patch` email of about size bytes: headers,
// message, diffstat and hunks of code.
func formatPatch(rng *rand.Rand, size int, commit, author string, when int64, subject string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "From %s Mon Sep 17 00:00:00 2001\nFrom: %s <%s@example.com>\nDate: %d +0000\nSubject: [PATCH] %s\n\n",
		commit, author, strings.ToLower(author), when, subject)
	b.WriteString(prose(rng, 80+rng.IntN(300)))
	b.WriteString("\n---\n")
	files := 1 + rng.IntN(4)
	names := make([]string, files)
	for i := range names {
		names[i] = pick(rng, fileNames)
		fmt.Fprintf(&b, " %s | %d %s\n", names[i], 2+rng.IntN(60), strings.Repeat("+", 1+rng.IntN(20)))
	}
	fmt.Fprintf(&b, " %d files changed\n\n", files)
	for f := 0; b.Len() < size; f = (f + 1) % files {
		name := names[f]
		fmt.Fprintf(&b, "diff --git a/%s b/%s\nindex %s..%s 100644\n--- a/%s\n+++ b/%s\n",
			name, name, hexID(rng, 7), hexID(rng, 7), name, name)
		for h := 0; h < 1+rng.IntN(3) && b.Len() < size; h++ {
			line := 1 + rng.IntN(900)
			fmt.Fprintf(&b, "@@ -%d,%d +%d,%d @@ func %s(%s) {\n", line, 7, line, 9, pick(rng, funcs), pick(rng, identifiers))
			for l := 0; l < 6+rng.IntN(20); l++ {
				mark := " "
				switch rng.IntN(5) {
				case 0:
					mark = "-"
				case 1, 2:
					mark = "+"
				}
				b.WriteString(mark + codeLine(rng) + "\n")
			}
		}
	}
	b.WriteString("-- \n2.43.0\n")
	return b.String()
}
