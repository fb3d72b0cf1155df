package git

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Version is a git release: major.minor.patch.
type Version struct{ Major, Minor, Patch int }

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// AtLeast reports whether v is o or newer.
func (v Version) AtLeast(o Version) bool {
	if v.Major != o.Major {
		return v.Major > o.Major
	}
	if v.Minor != o.Minor {
		return v.Minor > o.Minor
	}
	return v.Patch >= o.Patch
}

// ParseVersion reads the output of `git version`: "git version 2.39.5",
// "git version 2.37.0.rc1", "git version 2.39.3 (Apple Git-146)",
// "git version 2.45.1.windows.1". A missing patch level is 0.
func ParseVersion(out string) (Version, error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(out), "git version ")
	if !ok {
		return Version{}, fmt.Errorf("not git's version line: %q", Clip(out, 80))
	}
	if i := strings.IndexAny(rest, " \t\n"); i >= 0 {
		rest = rest[:i]
	}
	parts := strings.Split(rest, ".")
	var nums [3]int
	for i := 0; i < 3 && i < len(parts); i++ {
		p := parts[i]
		// "0-rc1" or "2rc1": the digits in front are the number
		end := 0
		for end < len(p) && p[end] >= '0' && p[end] <= '9' {
			end++
		}
		if end == 0 {
			if i < 2 {
				return Version{}, fmt.Errorf("git version %q has no %s number", rest, [...]string{"major", "minor"}[i])
			}
			break
		}
		n, err := strconv.Atoi(p[:end])
		if err != nil {
			return Version{}, fmt.Errorf("git version %q: %w", rest, err)
		}
		nums[i] = n
	}
	if len(parts) < 2 {
		return Version{}, fmt.Errorf("git version %q has no minor number", rest)
	}
	return Version{nums[0], nums[1], nums[2]}, nil
}

// Version runs `git version` with the binary the repositories use.
func (r *Repos) Version(ctx context.Context) (Version, error) {
	out, err := r.run(ctx, "", nil, "version")
	if err != nil {
		return Version{}, err
	}
	return ParseVersion(string(out))
}
