package throttle

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// tuningFile is the whole schema of a tuning file: only [domains."x"] tables.
type tuningFile struct {
	Domains map[string]Entry `toml:"domains"`
}

// LoadFiles reads every tuning file matched by globs (in sorted order per
// glob) into one Table. Decoding is strict: unknown keys, negative values and
// a domain defined in two files are errors naming the file(s). A glob that
// matches nothing is not an error, so an empty throttle.d/ is fine.
func LoadFiles(globs []string) (Table, error) {
	t := Table{}
	seen := map[string]bool{}
	for _, g := range globs {
		matches, err := filepath.Glob(g)
		if err != nil {
			return nil, fmt.Errorf("throttle files: bad pattern %q: %w", g, err)
		}
		sort.Strings(matches)
		for _, f := range matches {
			if seen[f] {
				continue // two globs matching one file is not a duplicate definition
			}
			seen[f] = true
			if err := loadFile(f, t); err != nil {
				return nil, err
			}
		}
	}
	return t, nil
}

func loadFile(path string, into Table) error {
	var tf tuningFile
	md, err := toml.DecodeFile(path, &tf)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return fmt.Errorf("throttle file %s: %s", path, pe.ErrorWithPosition())
		}
		return fmt.Errorf("throttle file %s: %w", path, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, k := range und {
			keys[i] = k.String()
		}
		return fmt.Errorf("throttle file %s: unknown keys: %s", path, strings.Join(keys, ", "))
	}
	names := make([]string, 0, len(tf.Domains))
	for d := range tf.Domains {
		names = append(names, d)
	}
	sort.Strings(names)
	for _, d := range names {
		e := tf.Domains[d]
		if err := validDomainKey(d); err != nil {
			return fmt.Errorf("throttle file %s: %w", path, err)
		}
		if e.Concurrent != nil && *e.Concurrent < 1 {
			return fmt.Errorf("throttle file %s: domain %q: concurrent must be at least 1", path, d)
		}
		if e.PerMinute != nil && *e.PerMinute < 1 {
			return fmt.Errorf("throttle file %s: domain %q: per_minute must be at least 1", path, d)
		}
		if prev, dup := into[d]; dup {
			return fmt.Errorf("throttle files: domain %q is defined in both %s and %s", d, prev.File, path)
		}
		e.File = path
		into[d] = e
	}
	return nil
}
