package git

import (
	"context"
	"testing"
)

func TestParseVersion(t *testing.T) {
	for out, want := range map[string]Version{
		"git version 2.39.5\n":               {2, 39, 5},
		"git version 2.37.0.rc1":             {2, 37, 0},
		"git version 2.39.3 (Apple Git-146)": {2, 39, 3},
		"git version 2.45.1.windows.1":       {2, 45, 1},
		"git version 2.36":                   {2, 36, 0},
		"git version 2.38.0-rc2":             {2, 38, 0},
		"git version 3.0.0":                  {3, 0, 0},
		"git version 2.30.2.450.g0123abcd":   {2, 30, 2},
		"  git version 10.1.12  ":            {10, 1, 12},
	} {
		got, err := ParseVersion(out)
		if err != nil || got != want {
			t.Errorf("ParseVersion(%q) = %v, %v; want %v", out, got, err, want)
		}
	}
	for _, bad := range []string{"", "git 2.39.5", "git version x.y", "git version 2", "hub version 2.14.2"} {
		if v, err := ParseVersion(bad); err == nil {
			t.Errorf("ParseVersion(%q) = %v, want an error", bad, v)
		}
	}
	min := Version{2, 37, 0}
	for v, ok := range map[Version]bool{{2, 36, 9}: false, {2, 37, 0}: true, {2, 39, 5}: true, {1, 99, 0}: false, {3, 0, 0}: true} {
		if v.AtLeast(min) != ok {
			t.Errorf("%v.AtLeast(%v) = %v", v, min, !ok)
		}
	}
}

func TestReposVersionRunsTheConfiguredGit(t *testing.T) {
	ts := newTestStore(t)
	v, err := ts.repos.Version(context.Background())
	if err != nil || !v.AtLeast(Version{2, 0, 0}) {
		t.Fatalf("Version = %v, %v", v, err)
	}
}
