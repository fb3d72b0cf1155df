package scripts_test

import (
	"strings"
	"testing"

	"github.com/grasp-dev/grasp/scripts"
)

func TestCheckConfigOfStockPlugins(t *testing.T) {
	cases := []struct {
		file  string
		cfg   map[string]any
		stock bool
		want  []string // "key: message prefix"
	}{
		{"spam_words.js", map[string]any{"words": []any{"casino"}, "kinds": []any{int64(1)}, "shadow": true}, true, nil},
		{"spam_words.js", map[string]any{"words": "casino"}, true, []string{"words: want a list of strings, got a string"}},
		{"spam_words.js", map[string]any{"kinds": []any{"1"}}, true, []string{"kinds: want a list of numbers"}},
		{"sub/rate_limit.js", map[string]any{"ip_per_minute": "60", "sources": []any{"client"}}, true, []string{"ip_per_minute: want a number, got a string"}},
		{"forge_throttle.js", map[string]any{"big": map[string]any{"concurrency": int64(4)}, "small": map[string]any{"rate": int64(1)}}, true, []string{"small: want a table {concurrency, perMinute}"}},
		{"prefer_healthy.js", map[string]any{"keep_one": "yes", "max": int64(1)}, true, []string{"keep_one: want true or false", `max: prefer_healthy.js reads no key "max"`}},
		{"my_policy.js", map[string]any{"anything": "goes"}, false, nil},
	}
	for _, c := range cases {
		got, stock := scripts.CheckConfig(c.file, c.cfg)
		if stock != c.stock || len(got) != len(c.want) {
			t.Errorf("%s %v: stock %v, problems %v; want %v %v", c.file, c.cfg, stock, got, c.stock, c.want)
			continue
		}
		for i, p := range got {
			if !strings.HasPrefix(p.Key+": "+p.Msg, c.want[i]) {
				t.Errorf("%s: problem %q, want %q", c.file, p.Key+": "+p.Msg, c.want[i])
			}
		}
	}
}
