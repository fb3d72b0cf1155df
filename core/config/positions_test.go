package config

import "testing"

func TestScanPositions(t *testing.T) {
	src := `# top
title = """
not = "a key"
"""
[server]
listen = "x" # trailing
"quoted.key" = 1
dotted . inner = 'lit'
arr = [
  "a", # comment ]
  ["b", "c"],
]
inline = { a = 1, b = { c = "}" } }

[[plugins.accept]]
name = "one"
[plugins.accept.config]
k = 1

[[plugins.accept]]
  name = "two"
  config = { deep = [1, 2] }
[log]
level = '''
level = "no"
'''
format = "json"
`
	pos := scanPositions([]byte(src))
	want := map[string]position{
		"title":                      {2, 1},
		"server":                     {5, 1},
		"server.listen":              {6, 1},
		"server.quoted.key":          {7, 1},
		"server.dotted.inner":        {8, 1},
		"server.arr":                 {9, 1},
		"server.arr[0]":              {10, 3},
		"server.arr[1]":              {11, 3},
		"server.arr[1][1]":           {11, 9},
		"server.inline":              {13, 1},
		"server.inline.a":            {13, 12},
		"server.inline.b.c":          {13, 25},
		"plugins.accept[0]":          {15, 1},
		"plugins.accept[0].name":     {16, 1},
		"plugins.accept[0].config":   {17, 1},
		"plugins.accept[0].config.k": {18, 1},
		"plugins.accept[1]":          {20, 1},
		"plugins.accept[1].name":     {21, 3},
		"plugins.accept[1].config":   {22, 3},
		"log.level":                  {24, 1},
		"log.format":                 {27, 1},
	}
	for k, w := range want {
		if got, ok := pos[k]; !ok || got != w {
			t.Errorf("%s at %v (found %v), want %v", k, got, ok, w)
		}
	}
	for _, bogus := range []string{"not", "server.level", "log.level.level"} {
		if _, ok := pos[bogus]; ok {
			t.Errorf("text inside a string was taken for key %q", bogus)
		}
	}
	if got := pos.lookup("plugins.accept[1].timeout"); got != (position{20, 1}) {
		t.Errorf("lookup of an unwritten key fell back to %v, want its table", got)
	}
	if got := pos.lookup("nowhere.at.all"); got != (position{}) {
		t.Errorf("lookup of an unknown path = %v", got)
	}
}

// The scanner only decorates messages; on input it cannot follow it must
// stop quietly, never panic or loop.
func TestScanPositionsSurvivesGarbage(t *testing.T) {
	for _, src := range []string{"[", "[[a", "a = [1, ", "a = {b = ", "a = \"\"\"x", "= 3", "a.b. = 1", "a = '", "\"k"} {
		_ = scanPositions([]byte(src))
	}
}

func FuzzScanPositions(f *testing.F) {
	f.Add("[a]\nb = [1, {c = 2}]\n[[d.e]]\nf = \"\"\"\ng\n\"\"\"\n")
	f.Fuzz(func(t *testing.T, src string) {
		for k, p := range scanPositions([]byte(src)) {
			if p.Line < 1 || p.Col < 1 {
				t.Fatalf("%q: key %q at impossible position %v", src, k, p)
			}
		}
	})
}
