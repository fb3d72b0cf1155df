package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// docs/architecture.md describes the tree and its import rules; these tests
// keep the description true as packages are added and imports change.

const (
	modulePath = "github.com/grasp-dev/grasp"
	archDoc    = repoRoot + "/docs/architecture.md"
)

// packageImports maps each package directory of the module (relative, with
// slashes) to the module packages its non-test files import. Directories
// holding only tests are listed with no imports.
func packageImports(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	moduleGoFiles(t, func(path, rel string) error {
		if _, ok := out[rel]; !ok {
			out[rel] = nil
		}
		if strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if dep, ok := strings.CutPrefix(p, modulePath+"/"); ok && !slices.Contains(out[rel], dep) {
				out[rel] = append(out[rel], dep)
			}
		}
		return nil
	})
	return out
}

// moduleGoFiles calls fn for every .go file of the module (hidden
// directories and testdata left out) with its directory relative to the
// module root, with slashes.
func moduleGoFiles(t *testing.T, fn func(path, dir string) error) {
	t.Helper()
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != repoRoot && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, err := filepath.Rel(repoRoot, filepath.Dir(path))
		if err != nil {
			return err
		}
		return fn(path, filepath.ToSlash(rel))
	})
	if err != nil {
		t.Fatal(err)
	}
}

func under(pkg, root string) bool { return pkg == root || strings.HasPrefix(pkg, root+"/") }

// isGit: the git store and its smart-HTTP server (issue 28 part 3).
func isGit(pkg string) bool { return under(pkg, "core/git") || under(pkg, "core/githttp") }

// importViolations checks the rules of the house that docs/architecture.md
// states, for the module packages each package imports.
func importViolations(imports map[string][]string) []string {
	var bad []string
	for pkg, deps := range imports {
		for _, dep := range deps {
			switch {
			case under(pkg, "core") && (under(dep, "plugins") || under(dep, "cmd")):
				bad = append(bad, pkg+" imports "+dep+": core never imports plugins/ or cmd/")
			case pkg == "core/nip34" || pkg == "core/clock":
				bad = append(bad, pkg+" imports "+dep+": it imports nothing of ours")
			case pkg == "core/policy" && !slices.Contains([]string{"core/nip34", "core/env", "core/clock", "core/roster", "core/archive", "core/nocontent"}, dep):
				bad = append(bad, pkg+" imports "+dep+": policy imports only core/nip34, core/env, core/clock, core/roster, core/archive and core/nocontent")
			case pkg == "core/nocontent":
				bad = append(bad, pkg+" imports "+dep+": it imports nothing of ours")
			case pkg == "core/archive" && !slices.Contains([]string{"core/nip34", "core/env"}, dep):
				bad = append(bad, pkg+" imports "+dep+": archive imports only core/nip34 and core/env")
			case pkg == "core/roster" && !slices.Contains([]string{"core/nip34", "core/env", "core/clock"}, dep):
				bad = append(bad, pkg+" imports "+dep+": roster imports only core/nip34, core/env and core/clock")
			case under(pkg, "core/relaysync") && isGit(dep), isGit(pkg) && under(dep, "core/relaysync"):
				bad = append(bad, pkg+" imports "+dep+": sync and git do not import each other")
			case pkg == "core/hosting" && under(dep, "core/relaysync"):
				bad = append(bad, pkg+" imports "+dep+": hosting never touches sync state")
			case testHelper(dep) && !testHelper(pkg):
				bad = append(bad, pkg+" imports "+dep+" outside its tests")
			case dep == "plugins" && pkg != "cmd/grasp":
				bad = append(bad, pkg+" imports plugins: only cmd/grasp wires them")
			}
		}
	}
	slices.Sort(bad)
	return bad
}

// testHelper: the packages only tests import (they may import each other).
func testHelper(pkg string) bool {
	return slices.Contains([]string{"internal/testwait", "internal/pgtest", "internal/testkit", "internal/jsinterop", "core/internal/memkv"}, pkg)
}

// TestImportRules: the import rules of docs/architecture.md hold.
func TestImportRules(t *testing.T) {
	imports := packageImports(t)
	if _, ok := imports["core/nip34"]; !ok {
		t.Fatalf("the walk found no core/nip34: %v", imports)
	}
	if bad := importViolations(imports); len(bad) > 0 {
		t.Fatalf("import rules broken:\n%s", strings.Join(bad, "\n"))
	}
}

// TestImportRulesCatchViolations proves each rule can fail.
func TestImportRulesCatchViolations(t *testing.T) {
	bad := importViolations(map[string][]string{
		"core/relay":          {"plugins"},
		"core/nip34":          {"core/clock"},
		"core/policy":         {"core/store"},
		"core/roster":         {"core/policy"},
		"core/relaysync/conn": {"core/git"},
		"core/git":            {"core/relaysync"},
		"core/githttp":        {"core/relaysync"},
		"core/hosting":        {"core/relaysync"},
		"core/store":          {"internal/testwait"},
		"scripts":             {"plugins"},
		"cmd/grasp":           {"plugins", "core/server"},
	})
	if len(bad) != 10 {
		t.Fatalf("want 10 violations, got %d:\n%s", len(bad), strings.Join(bad, "\n"))
	}
}

// TestArchitectureDocMapsEveryPackage: every package directory of the module
// is in the package map of docs/architecture.md, and every path the map
// names exists.
func TestArchitectureDocMapsEveryPackage(t *testing.T) {
	b, err := os.ReadFile(archDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for pkg := range packageImports(t) {
		if !strings.Contains(doc, "| `"+pkg+"` |") {
			t.Errorf("package %s is not in the package map of docs/architecture.md", pkg)
		}
	}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z./][a-z0-9_./]*)` \\|").FindAllStringSubmatch(doc, -1) {
		if _, err := os.Stat(filepath.Join(repoRoot, m[1])); err != nil {
			t.Errorf("docs/architecture.md maps %s, which does not exist", m[1])
		}
	}
}
