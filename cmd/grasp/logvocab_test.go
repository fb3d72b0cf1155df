package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/constant"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The operator's log names a repository one way: its URL path
// /<npub>/<pct(d)>.git (or /prs/...), nip34.RepoRef.URLPath, under the key
// "repo", the path a reverse proxy logs for the same repository (issue 26
// part 6, docs/operations.md, Logs). These tests read every hclog call of
// the module's non-test code with its types and refuse the other shapes a repository was named
// in: its coordinate (RepoRef.String, "30617:<hex>:<d>"), owner/id or
// author/d pairs, a path built by hand, a RepoRef passed as is.

const (
	hclogPkg = "github.com/hashicorp/go-hclog"
	nip34Pkg = modulePath + "/core/nip34"
)

// pieceKeys name a part of a repository: a line with one names the
// repository in pieces.
var pieceKeys = []string{"owner", "d", "identifier", "npub", "coord", "coordinate"}

// repoKeys may hold a repository's URL path: the repository a line is
// about, and the one a state or data came from.
var repoKeys = []string{"repo", "from"}

// typedPkg is one package's syntax and types.
type typedPkg struct {
	path  string
	files []*ast.File
	info  *types.Info
}

// typeChecker type-checks packages against the export data `go list
// -export` built for the module's dependencies.
type typeChecker struct {
	fset    *token.FileSet
	exports map[string]string
	imp     types.Importer
}

type listedPkg struct {
	ImportPath string
	Dir        string
	Export     string
	GoFiles    []string
	CgoFiles   []string
	DepOnly    bool
}

// loadTyped lists patterns (and their dependencies, for export data) and
// returns the checker and the packages patterns name.
func loadTyped(t *testing.T, patterns ...string) (*typeChecker, []listedPkg) {
	t.Helper()
	args := append([]string{"list", "-export", "-deps", "-json=ImportPath,Dir,Export,GoFiles,CgoFiles,DepOnly"}, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = repoRoot
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	tc := &typeChecker{fset: token.NewFileSet(), exports: map[string]string{}}
	var targets []listedPkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p listedPkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		tc.exports[p.ImportPath] = p.Export
		if !p.DepOnly {
			targets = append(targets, p)
		}
	}
	tc.imp = importer.ForCompiler(tc.fset, "gc", func(path string) (io.ReadCloser, error) {
		f := tc.exports[path]
		if f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	return tc, targets
}

// check parses and type-checks the files of one package.
func (tc *typeChecker) check(path, dir string, names []string) (typedPkg, error) {
	p := typedPkg{path: path, info: &types.Info{
		Types:      map[ast.Expr]types.TypeAndValue{},
		Uses:       map[*ast.Ident]types.Object{},
		Selections: map[*ast.SelectorExpr]*types.Selection{},
	}}
	for _, n := range names {
		f, err := parser.ParseFile(tc.fset, filepath.Join(dir, n), nil, 0)
		if err != nil {
			return p, err
		}
		p.files = append(p.files, f)
	}
	_, err := (&types.Config{Importer: tc.imp}).Check(path, tc.fset, p.files, p.info)
	return p, err
}

// isNamed reports whether t (or what it points to) is pkg's type name.
func isNamed(t types.Type, pkg, name string) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := t.(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == pkg && (name == "" || n.Obj().Name() == name)
}

// methodCall is the receiver type and method name when e is a method call.
func methodCall(info *types.Info, e ast.Expr) (types.Type, string, bool) {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok {
		return nil, "", false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return nil, "", false
	}
	s := info.Selections[sel]
	if s == nil || s.Kind() != types.MethodVal {
		return nil, "", false
	}
	return s.Recv(), sel.Sel.Name, true
}

func isRepoOrAddress(t types.Type) bool {
	return isNamed(t, nip34Pkg, "RepoRef") || isNamed(t, nip34Pkg, "Address")
}

// callsNpubInConcat reports whether e concatenates strings around a call
// of nip34.Npub: a repository path built by hand.
func callsNpubInConcat(info *types.Info, e ast.Expr) bool {
	if _, ok := ast.Unparen(e).(*ast.BinaryExpr); !ok {
		return false
	}
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok {
			if sel, ok := c.Fun.(*ast.SelectorExpr); ok {
				if f, ok := info.Uses[sel.Sel].(*types.Func); ok && f.Pkg() != nil && f.Pkg().Path() == nip34Pkg && f.Name() == "Npub" {
					found = true
				}
			}
		}
		return !found
	})
	return found
}

// logNamingViolations lists the hclog calls of p that name a repository in
// another shape than "repo", RepoRef.URLPath().
func (tc *typeChecker) logNamingViolations(p typedPkg) []string {
	var bad []string
	for _, f := range p.files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			s := p.info.Selections[sel]
			if s == nil || !isNamed(s.Recv(), hclogPkg, "") {
				return true
			}
			var kv []ast.Expr
			switch sel.Sel.Name {
			case "Trace", "Debug", "Info", "Warn", "Error":
				kv = call.Args[min(1, len(call.Args)):]
			case "Log":
				kv = call.Args[min(2, len(call.Args)):]
			case "With":
				kv = call.Args
			default:
				return true
			}
			at := tc.fset.Position(call.Pos())
			where := fmt.Sprintf("%s:%d", filepath.ToSlash(at.Filename), at.Line)
			for i := 0; i+1 < len(kv); i += 2 {
				tv := p.info.Types[kv[i]]
				if tv.Value == nil || tv.Value.Kind() != constant.String {
					continue
				}
				key, v := constant.StringVal(tv.Value), kv[i+1]
				recv, method, isCall := methodCall(p.info, v)
				urlPath := isCall && method == "URLPath" && isNamed(recv, nip34Pkg, "RepoRef")
				switch {
				case slices.Contains(pieceKeys, key):
					bad = append(bad, fmt.Sprintf("%s: key %q names a repository in pieces; use \"repo\", RepoRef.URLPath()", where, key))
				case isRepoOrAddress(p.info.TypeOf(v)):
					bad = append(bad, fmt.Sprintf("%s: key %q is a %s as is; use RepoRef.URLPath()", where, key, p.info.TypeOf(v)))
				case isCall && method == "String" && isRepoOrAddress(recv):
					bad = append(bad, fmt.Sprintf("%s: key %q names a repository by its coordinate; use RepoRef.URLPath()", where, key))
				case callsNpubInConcat(p.info, v):
					bad = append(bad, fmt.Sprintf("%s: key %q builds a repository path by hand; use RepoRef.URLPath()", where, key))
				case key == "repo" && !urlPath:
					bad = append(bad, fmt.Sprintf("%s: key \"repo\" holds something else than RepoRef.URLPath()", where))
				case urlPath && !slices.Contains(repoKeys, key):
					bad = append(bad, fmt.Sprintf("%s: a repository's path under key %q; name it \"repo\"", where, key))
				}
			}
			return true
		})
	}
	return bad
}

// TestLogLinesNameRepositoriesOneWay: no log line of core/, plugins/ or
// cmd/ names a repository in another form than "repo", RepoRef.URLPath().
func TestLogLinesNameRepositoriesOneWay(t *testing.T) {
	tc, pkgs := loadTyped(t, "./core/...", "./plugins/...", "./cmd/...")
	var bad []string
	checked := 0
	for _, lp := range pkgs {
		if len(lp.CgoFiles) > 0 {
			t.Fatalf("%s uses cgo: this check type-checks Go files only", lp.ImportPath)
		}
		p, err := tc.check(lp.ImportPath, lp.Dir, lp.GoFiles)
		if err != nil {
			t.Fatalf("type-check %s: %v", lp.ImportPath, err)
		}
		checked++
		bad = append(bad, tc.logNamingViolations(p)...)
	}
	if checked < 20 {
		t.Fatalf("only %d packages checked", checked)
	}
	if len(bad) > 0 {
		t.Fatalf("log lines naming a repository in another form than \"repo\", RepoRef.URLPath() (docs/operations.md, Logs):\n%s", strings.Join(bad, "\n"))
	}
}

// TestLogNamingCatchesViolations proves each rule can fail: every line of
// the fixture marked "bad" is reported, and nothing else.
func TestLogNamingCatchesViolations(t *testing.T) {
	const src = `package fixture

import (
	"github.com/hashicorp/go-hclog"

	"github.com/grasp-dev/grasp/core/nip34"
)

func lines(log hclog.Logger, r nip34.RepoRef, owner, d, addr string) {
	log.Info("pieces", "owner", owner, "id", d) // bad
	log.Debug("identifier", "d", d) // bad
	log.Info("coordinate", "repo", r.String()) // bad
	log.Warn("as is", "at", r) // bad
	log.Error("address", "state", r.StateAddress().String()) // bad
	log.Info("by hand", "where", nip34.Npub(owner)+"/"+d+".git") // bad
	log.Info("string coordinate", "repo", addr) // bad
	log.Info("path key", "path", r.URLPath()) // bad
	log.With("repo", r.String()).Info("with") // bad
	log.Log(hclog.Info, "log", "npub", nip34.Npub(owner)) // bad
	log.Info("fine", "repo", r.URLPath(), "from", r.URLPath(), "author", nip34.Npub(owner), "path", "/x")
	log.With("repo", r.URLPath()).Info("fine too", "id", d)
}
`
	dir := t.TempDir()
	file := filepath.Join(dir, "fixture.go")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	tc, _ := loadTyped(t, "./core/nip34", hclogPkg)
	p, err := tc.check("fixture", dir, []string{"fixture.go"})
	if err != nil {
		t.Fatalf("type-check the fixture: %v", err)
	}
	got := map[int]bool{}
	for _, v := range tc.logNamingViolations(p) {
		// "<file>:<line>: ..."
		var line int
		rest := strings.TrimPrefix(v, filepath.ToSlash(file)+":")
		if _, err := fmt.Sscanf(rest, "%d:", &line); err != nil {
			t.Fatalf("unparsable violation %q", v)
		}
		got[line] = true
	}
	for i, l := range strings.Split(src, "\n") {
		want := strings.HasSuffix(l, "// bad")
		if got[i+1] != want {
			t.Errorf("line %d %q: reported %v, want %v", i+1, strings.TrimSpace(l), got[i+1], want)
		}
	}
}
