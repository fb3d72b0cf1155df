package scripts

import (
	"fmt"
	"path"
	"sort"

	"github.com/grasp-dev/grasp/core/config"
)

// valueType is what one key of a stock plugin's config table must hold.
type valueType int

const (
	tNumber valueType = iota
	tBool
	tStrings // a list of strings
	tNumbers // a list of numbers
	tLimits  // a table {concurrency, perMinute} of numbers
)

func (t valueType) String() string {
	return [...]string{"a number", "true or false", "a list of strings", "a list of numbers", "a table {concurrency, perMinute}"}[t]
}

// schemas are the config keys each stock plugin reads (see the comment at
// the top of each file). A key the script does not read is a typo that would
// otherwise silently leave its default in place.
var schemas = map[string]map[string]valueType{
	"forge_throttle.js": {"big_forges": tStrings, "big": tLimits, "small": tLimits},
	"prefer_healthy.js": {"max_failures": tNumber, "max_relays": tNumber, "keep_one": tBool},
	"pubkey_lists.js":   {"deny": tStrings, "allow": tStrings, "allow_sources": tStrings},
	"rate_limit.js": {"pubkey_per_minute": tNumber, "pubkey_burst": tNumber, "ip_per_minute": tNumber,
		"ip_burst": tNumber, "sources": tStrings, "exempt_pubkeys": tStrings},
	"repo_quota.js": {"max_repos": tNumber, "exempt": tStrings},
	"spam_words.js": {"words": tStrings, "kinds": tNumbers, "shadow": tBool},
}

// ConfigProblem is one wrong key of a stock plugin's config table.
type ConfigProblem struct {
	Key string // the key inside the config table
	Msg string
}

// CheckConfig checks cfg, the config table of a plugin whose file is file,
// against the stock plugin of the same base name. Files that are not stock
// plugins are not checked (ok is false): their config is theirs to read.
func CheckConfig(file string, cfg map[string]any) (problems []ConfigProblem, ok bool) {
	schema, ok := schemas[path.Base(file)]
	if !ok {
		return nil, false
	}
	keys := make([]string, 0, len(cfg))
	for k := range cfg {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		want, known := schema[k]
		if !known {
			problems = append(problems, ConfigProblem{k, fmt.Sprintf("%s reads no key %q", path.Base(file), k)})
			continue
		}
		if !fits(cfg[k], want) {
			problems = append(problems, ConfigProblem{k, fmt.Sprintf("want %s, got %s", want, config.TypeName(cfg[k]))})
		}
	}
	return problems, true
}

func fits(v any, t valueType) bool {
	switch t {
	case tNumber:
		return isNumber(v)
	case tBool:
		_, ok := v.(bool)
		return ok
	case tStrings, tNumbers:
		list, ok := v.([]any)
		if !ok {
			return false
		}
		for _, e := range list {
			if _, s := e.(string); (t == tStrings) != s || (t == tNumbers && !isNumber(e)) {
				return false
			}
		}
		return true
	case tLimits:
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		for k, e := range m {
			if (k != "concurrency" && k != "perMinute") || !isNumber(e) {
				return false
			}
		}
		return true
	}
	return false
}

func isNumber(v any) bool {
	switch v.(type) {
	case int64, float64:
		return true
	}
	return false
}
