package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The owners table of docs/architecture.md ("One owner per decision") names
// the one place each decision is made. These tests keep it true: every
// owner it names exists, and no second definition of a listed decision
// appears in the module's non-test code. A second definition is found by
// rules that are cheap and deterministic (go/ast only, no type checking):
// a top-level function of the owner's name, or of the owner's body shape,
// declared elsewhere; and, for decisions that were copied before, a pattern
// of what such a copy looked like (copyRules).

// ownerRow is one row of the owners table.
type ownerRow struct {
	line     int
	decision string
	owner    string // the owner cell, as written
}

// ownerRows reads the owners table out of the architecture document.
func ownerRows(doc string) []ownerRow {
	var rows []ownerRow
	in := false
	for i, l := range strings.Split(doc, "\n") {
		switch {
		case strings.HasPrefix(l, "### One owner per decision"):
			in = true
		case !in:
		case strings.HasPrefix(l, "#"):
			return rows
		case strings.HasPrefix(l, "|") && !strings.HasPrefix(l, "|---") && !strings.HasPrefix(l, "| decision |"):
			if cells := tableCells(l); len(cells) >= 2 {
				rows = append(rows, ownerRow{line: i + 1, decision: cells[0], owner: cells[1]})
			}
		}
	}
	return rows
}

// tableCells splits a Markdown table row on the bars outside code spans.
func tableCells(l string) []string {
	var cells []string
	var cur strings.Builder
	code := false
	for _, r := range strings.TrimSpace(strings.Trim(strings.TrimSpace(l), "|")) {
		switch {
		case r == '`':
			code = !code
		case r == '|' && !code:
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
			continue
		}
		cur.WriteRune(r)
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// module is what the checks need of the module's non-test Go code.
type module struct {
	fset    *token.FileSet
	dirs    map[string]string          // directory (relative, slashes) → package name
	byName  map[string][]string        // package name → its directories
	names   map[string]map[string]bool // directory → "Name" and "Type.Member" declared there
	members map[string]map[string]bool // directory → "Member" of any type declared there
	funcs   []moduleFunc
	consts  map[string]int // nip34's integer constants (event kinds), by name
	exists  func(path string) bool
}

// moduleFunc is a function declaration, or (decl nil) a package-level
// var or const declaration, where a copied list would stand.
type moduleFunc struct {
	dir, file string
	decl      *ast.FuncDecl
	gen       *ast.GenDecl
}

func (f moduleFunc) node() ast.Node {
	if f.decl != nil {
		return f.decl
	}
	return f.gen
}

func (f moduleFunc) pos() token.Pos { return f.node().Pos() }

func recvType(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return ""
	}
	t := d.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch t := t.(type) {
	case *ast.Ident:
		return t.Name
	case *ast.IndexExpr:
		if id, ok := t.X.(*ast.Ident); ok {
			return id.Name
		}
	case *ast.IndexListExpr:
		if id, ok := t.X.(*ast.Ident); ok {
			return id.Name
		}
	}
	return ""
}

// loadModule parses every non-test Go file of the module.
func loadModule(t *testing.T) *module {
	t.Helper()
	fset := token.NewFileSet()
	files := map[string][]*ast.File{}
	moduleGoFiles(t, func(path, dir string) error {
		if strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, dir+"/"+filepath.Base(path), readFile(t, path), 0)
		if err != nil {
			return err
		}
		files[dir] = append(files[dir], f)
		return nil
	})
	m := newModule(fset, files)
	m.exists = func(p string) bool { _, err := os.Stat(filepath.Join(repoRoot, p)); return err == nil }
	return m
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newModule(fset *token.FileSet, files map[string][]*ast.File) *module {
	m := &module{fset: fset, dirs: map[string]string{}, byName: map[string][]string{},
		names: map[string]map[string]bool{}, members: map[string]map[string]bool{}, consts: map[string]int{}}
	dirs := make([]string, 0, len(files))
	for dir := range files {
		dirs = append(dirs, dir)
	}
	slices.Sort(dirs) // deterministic order of findings
	for _, dir := range dirs {
		names, members := map[string]bool{}, map[string]bool{}
		m.names[dir], m.members[dir] = names, members
		for _, f := range files[dir] {
			m.dirs[dir] = f.Name.Name
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if r := recvType(d); r != "" {
						names[r+"."+d.Name.Name], members[d.Name.Name] = true, true
					} else {
						names[d.Name.Name] = true
					}
					m.funcs = append(m.funcs, moduleFunc{dir: dir, file: fset.Position(d.Pos()).Filename, decl: d})
				case *ast.GenDecl:
					if d.Tok == token.VAR || d.Tok == token.CONST {
						m.funcs = append(m.funcs, moduleFunc{dir: dir, file: fset.Position(d.Pos()).Filename, gen: d})
					}
					for _, s := range d.Specs {
						switch s := s.(type) {
						case *ast.TypeSpec:
							names[s.Name.Name] = true
							for _, fld := range typeMembers(s.Type) {
								names[s.Name.Name+"."+fld], members[fld] = true, true
							}
						case *ast.ValueSpec:
							for i, n := range s.Names {
								names[n.Name] = true
								if dir == "core/nip34" && d.Tok == token.CONST && i < len(s.Values) {
									if lit, ok := s.Values[i].(*ast.BasicLit); ok && lit.Kind == token.INT {
										v, _ := strconv.Atoi(lit.Value)
										m.consts[n.Name] = v
									}
								}
							}
						}
					}
				}
			}
		}
		if name := m.dirs[dir]; !slices.Contains(m.byName[name], dir) {
			m.byName[name] = append(m.byName[name], dir)
		}
	}
	return m
}

// typeMembers lists the fields of a struct and the methods of an interface.
func typeMembers(e ast.Expr) []string {
	var list *ast.FieldList
	switch e := e.(type) {
	case *ast.StructType:
		list = e.Fields
	case *ast.InterfaceType:
		list = e.Methods
	}
	var out []string
	if list != nil {
		for _, f := range list.List {
			for _, n := range f.Names {
				out = append(out, n.Name)
			}
		}
	}
	return out
}

var (
	codeSpan  = regexp.MustCompile("`([^`]+)`")
	goRef     = regexp.MustCompile(`^[a-z][a-z0-9]*(\.[A-Za-z][A-Za-z0-9]*){1,2}$`)
	treePath  = regexp.MustCompile(`^(core|cmd|internal|plugins|scripts|deploy|tools)/[A-Za-z0-9_./-]*[A-Za-z0-9_]$`)
	filePaths = regexp.MustCompile(`\(((?:core|cmd|internal|plugins|scripts)/[A-Za-z0-9_./-]+\.go)`)
)

// owner is one Go symbol an owner cell names: pkg.Name or pkg.Type.Member.
type owner struct {
	ref  string // as written
	dirs []string
	fn   *moduleFunc // the declaration when it is a top-level function
}

// ownerProblems checks that everything each row's owner cell names exists:
// package-qualified symbols (pkg.Name, pkg.Type.Member), tree paths in code
// spans and the .go files named in parentheses. A config key written like
// a symbol (`relay.pubkey`) counts when the example config has it. It
// returns the problems and the owners found.
func ownerProblems(rows []ownerRow, m *module, configKeys map[string]bool) ([]string, []owner) {
	var bad []string
	var owners []owner
	for _, r := range rows {
		var rowDirs []string
		for _, fp := range filePaths.FindAllStringSubmatch(r.owner, -1) {
			if !m.exists(fp[1]) {
				bad = append(bad, fmt.Sprintf("docs/architecture.md:%d (%s): owner file %s does not exist", r.line, r.decision, fp[1]))
			}
			rowDirs = append(rowDirs, filepath.ToSlash(filepath.Dir(fp[1])))
		}
		for _, span := range codeSpan.FindAllStringSubmatch(r.owner, -1) {
			ref := span[1]
			switch {
			case treePath.MatchString(ref):
				if !m.exists(ref) {
					bad = append(bad, fmt.Sprintf("docs/architecture.md:%d (%s): owner %s does not exist", r.line, r.decision, ref))
				}
			case goRef.MatchString(ref):
				pkg, sym, _ := strings.Cut(ref, ".")
				if _, isPkg := m.byName[pkg]; !isPkg {
					continue // not package-qualified (a type's method, a JS name)
				}
				o, ok := m.resolve(ref, pkg, sym, rowDirs)
				switch {
				case ok:
					owners = append(owners, o)
				case configKeys[ref]:
				default:
					bad = append(bad, fmt.Sprintf("docs/architecture.md:%d (%s): owner %s does not exist", r.line, r.decision, ref))
				}
			}
		}
	}
	return bad, owners
}

// resolve finds sym in the directories of package pkg, then in the
// directories the row names by file (`conn.recovered (core/gate/recover.go)`
// is gate's type conn).
func (m *module) resolve(ref, pkg, sym string, rowDirs []string) (owner, bool) {
	try := func(dirs []string, s string) (owner, bool) {
		for _, dir := range dirs {
			if m.names[dir][s] || (!strings.Contains(s, ".") && m.members[dir][s]) {
				o := owner{ref: ref, dirs: []string{dir}}
				for i, f := range m.funcs {
					if f.dir == dir && f.decl != nil && f.decl.Recv == nil && f.decl.Name.Name == s {
						o.fn = &m.funcs[i]
					}
				}
				return o, true
			}
		}
		return owner{}, false
	}
	if o, ok := try(m.byName[pkg], sym); ok {
		return o, true
	}
	return try(rowDirs, ref)
}

// copyRule describes what a copy of one decision looks like.
type copyRule struct {
	owner string // the owner as the table writes it
	why   string
	copy  func(m *module, f moduleFunc) string // "" when f is not a copy; else what it repeats
	allow map[string]string                    // "dir.Func" → why it is not a copy
}

var copyRules = []copyRule{
	{owner: "nip34.IsHex64", why: "a second 64-hex (or lowercase-hex) check", copy: hexCopy,
		allow: map[string]string{"core/purgatory/hunt.numericLabel": "curl's hex IPv4 label, not an id",
			"core/store.hex32": "which badger key a value goes under, either case as the library's layout wrote it; not an id check"}},
	{owner: "nip34.IsRootKind", why: "a second list of the root kinds", copy: rootKindsCopy},
	{owner: "nip34.KindName", why: "a second name for an event kind in text", copy: kindNameCopy,
		allow: map[string]string{"core/policy.kindClass": "a metric's fixed label set, not a name (the table says so)"}},
}

// copyProblems lists the second definitions of the owners found.
func copyProblems(m *module, owners []owner) []string {
	var bad []string
	listed := map[string]bool{}
	for _, o := range owners {
		listed[o.ref] = true
	}
	for _, rule := range copyRules {
		if !listed[rule.owner] {
			bad = append(bad, fmt.Sprintf("copy rule for %s, which the owners table no longer lists", rule.owner))
			continue
		}
		for _, f := range m.funcs {
			what := rule.copy(m, f)
			key := f.dir + "." + f.name()
			if what == "" || rule.allow[key] != "" || (f.dir == "core/nip34" && ownsFile(f.file)) {
				continue
			}
			bad = append(bad, fmt.Sprintf("%s: %s (owner %s): %s", m.where(f), rule.why, rule.owner, what))
		}
	}
	shapes := map[*ast.FuncDecl]shape{}
	for _, f := range m.funcs {
		if f.decl != nil {
			shapes[f.decl] = bodyShape(f.decl)
		}
	}
	isOwner := map[*ast.FuncDecl]bool{}
	for _, o := range owners {
		if o.fn != nil {
			isOwner[o.fn.decl] = true
		}
	}
	for _, o := range owners {
		if o.fn == nil {
			continue
		}
		shape := shapes[o.fn.decl]
		for _, f := range m.funcs {
			if f.decl == nil || isOwner[f.decl] || f.decl.Recv != nil || f.decl.Body == nil {
				continue
			}
			switch {
			case strings.EqualFold(f.decl.Name.Name, o.fn.decl.Name.Name):
				// unless another decision shares the name, or f is a
				// wrapper adding its own texts on top of the owner
				if sameNameAllow[f.dir+"."+f.name()] == "" && !calls(f.decl, o.ref) {
					bad = append(bad, fmt.Sprintf("%s: a second %s (owner %s, %s)", m.where(f), f.decl.Name.Name, o.ref, m.where(*o.fn)))
				}
			case shape.nodes >= minShapeNodes && shapes[f.decl].text == shape.text:
				bad = append(bad, fmt.Sprintf("%s: the body of %s again (owner %s, %s)", m.where(f), o.ref, o.ref, m.where(*o.fn)))
			}
		}
	}
	return bad
}

// sameNameAllow: functions that share an owner's name but decide something
// else, with what they decide.
var sameNameAllow = map[string]string{
	"plugins.Check": "check-config of the plugin files, not a NIP-77 message",
}

// calls reports whether d calls ref (pkg.Name) by its qualified name.
func calls(d *ast.FuncDecl, ref string) bool {
	pkg, name, _ := strings.Cut(ref, ".")
	found := false
	ast.Inspect(d, func(x ast.Node) bool {
		if sel, ok := x.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == pkg && sel.Sel.Name == name {
				found = true
			}
		}
		return !found
	})
	return found
}

// ownsFile: the files where nip34 defines the checked decisions themselves.
func ownsFile(file string) bool {
	return file == "core/nip34/hex.go" || file == "core/nip34/kinds.go"
}

// name is Func, Type.Method, or the first name a var/const block declares.
func (f moduleFunc) name() string {
	if f.decl == nil {
		for _, s := range f.gen.Specs {
			if v, ok := s.(*ast.ValueSpec); ok && len(v.Names) > 0 {
				return v.Names[0].Name
			}
		}
		return "_"
	}
	if r := recvType(f.decl); r != "" {
		return r + "." + f.decl.Name.Name
	}
	return f.decl.Name.Name
}

func (m *module) where(f moduleFunc) string {
	return fmt.Sprintf("%s:%d %s", f.file, m.fset.Position(f.pos()).Line, f.name())
}

// minShapeNodes keeps one-line bodies (a call, a comparison) out of the
// shape comparison: they are alike by accident.
const minShapeNodes = 20

type shape struct {
	text  string
	nodes int
}

// bodyShape is a function body's syntax with names left out: node types,
// operators and literals.
func bodyShape(d *ast.FuncDecl) shape {
	var b strings.Builder
	n := 0
	if d.Body == nil {
		return shape{}
	}
	ast.Inspect(d.Body, func(x ast.Node) bool {
		if x == nil {
			return false
		}
		n++
		switch x := x.(type) {
		case *ast.BinaryExpr:
			fmt.Fprintf(&b, "(%s ", x.Op)
		case *ast.UnaryExpr:
			fmt.Fprintf(&b, "(u%s ", x.Op)
		case *ast.BasicLit:
			fmt.Fprintf(&b, "%s ", x.Value)
		case *ast.Ident:
			b.WriteString("_ ")
		default:
			fmt.Fprintf(&b, "%T ", x)
		}
		return true
	})
	return shape{text: b.String(), nodes: n}
}

// hexCopy: a function that compares a length with 64 or 128, or a byte
// with 'f' but never with 'F' (lowercase hex), without calling the owner.
func hexCopy(_ *module, f moduleFunc) string {
	if f.decl == nil || f.decl.Body == nil {
		return ""
	}
	var len64, lowerF, upperF, callsOwner bool
	ast.Inspect(f.decl.Body, func(x ast.Node) bool {
		switch x := x.(type) {
		case *ast.SelectorExpr:
			if id, ok := x.X.(*ast.Ident); ok && id.Name == "nip34" && strings.HasPrefix(x.Sel.Name, "IsHex") {
				callsOwner = true
			}
		case *ast.BinaryExpr:
			switch x.Op {
			case token.EQL, token.NEQ:
				for _, pair := range [][2]ast.Expr{{x.X, x.Y}, {x.Y, x.X}} {
					if isLenCall(pair[0]) && (isLit(pair[1], "64") || isLit(pair[1], "128")) {
						len64 = true
					}
				}
			case token.LSS, token.GTR, token.LEQ, token.GEQ: // a range test, not a JSON escape's case 'f'
				lowerF = lowerF || isLit(x.X, "'f'") || isLit(x.Y, "'f'")
				upperF = upperF || isLit(x.X, "'F'") || isLit(x.Y, "'F'")
			}
		}
		return true
	})
	switch {
	case callsOwner:
		return ""
	case len64:
		return "compares a length with 64 or 128"
	case lowerF && !upperF:
		return "checks bytes against lowercase hex digits"
	}
	return ""
}

func isLenCall(e ast.Expr) bool {
	c, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	id, ok := c.Fun.(*ast.Ident)
	return ok && id.Name == "len"
}

func isLit(e ast.Expr, v string) bool {
	l, ok := e.(*ast.BasicLit)
	return ok && l.Value == v
}

// kindValue is the kind e names: an integer literal or a nip34 constant.
func (m *module) kindValue(e ast.Expr) (int, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		v, err := strconv.Atoi(e.Value)
		return v, err == nil
	case *ast.SelectorExpr:
		if id, ok := e.X.(*ast.Ident); ok && id.Name == "nip34" {
			v, ok := m.consts[e.Sel.Name]
			return v, ok
		}
	case *ast.Ident:
		v, ok := m.consts[e.Name]
		return v, ok
	}
	return 0, false
}

// rootKindsCopy: a list ([]int{...} or a case clause) of exactly the kinds
// nip34.IsRootKind accepts.
func rootKindsCopy(m *module, f moduleFunc) string {
	roots := []int{m.consts["KindPatch"], m.consts["KindPR"], m.consts["KindPRUpdate"], m.consts["KindIssue"]}
	same := func(list []ast.Expr) bool {
		var got []int
		for _, e := range list {
			v, ok := m.kindValue(e)
			if !ok {
				return false
			}
			got = append(got, v)
		}
		slices.Sort(got)
		return slices.Equal(got, roots)
	}
	found := ""
	ast.Inspect(f.node(), func(x ast.Node) bool {
		switch x := x.(type) {
		case *ast.CompositeLit:
			if same(x.Elts) {
				found = "lists the root kinds"
			}
		case *ast.CaseClause:
			if same(x.List) {
				found = "switches on the root kinds"
			}
		}
		return found == ""
	})
	return found
}

// kindNameCopy: a case of a PR or PR update (by literal or nip34 constant)
// whose body returns or assigns a string literal.
func kindNameCopy(m *module, f moduleFunc) string {
	pr := map[int]bool{m.consts["KindPR"]: true, m.consts["KindPRUpdate"]: true}
	found := ""
	ast.Inspect(f.node(), func(x ast.Node) bool {
		cc, ok := x.(*ast.CaseClause)
		if !ok || found != "" {
			return found == ""
		}
		names := false
		for _, e := range cc.List {
			ast.Inspect(e, func(y ast.Node) bool {
				if e, ok := y.(ast.Expr); ok {
					if v, ok := m.kindValue(e); ok && pr[v] {
						names = true
					}
				}
				return !names
			})
		}
		if !names {
			return true
		}
		for _, s := range cc.Body {
			var vals []ast.Expr
			switch s := s.(type) {
			case *ast.ReturnStmt:
				vals = s.Results
			case *ast.AssignStmt:
				vals = s.Rhs
			}
			for _, v := range vals {
				if l, ok := v.(*ast.BasicLit); ok && l.Kind == token.STRING {
					found = "names a PR kind " + l.Value
				}
			}
		}
		return found == ""
	})
	return found
}

// exampleConfigKeys lists "section.key" of grasp.toml.example, so an owner
// cell may name a config key the way the docs write it.
func exampleConfigKeys(t *testing.T) map[string]bool {
	keys := map[string]bool{}
	section := ""
	for _, l := range strings.Split(string(readFile(t, filepath.Join(repoRoot, "grasp.toml.example"))), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "[") {
			section = strings.Trim(strings.Fields(l)[0], "[]")
		} else if k, _, ok := strings.Cut(l, "="); ok && section != "" && !strings.HasPrefix(l, "#") {
			keys[section+"."+strings.TrimSpace(k)] = true
		}
	}
	return keys
}

// TestOwnersTable: every owner the owners table of docs/architecture.md
// names exists, and no second definition of a listed decision is in the
// module's code.
func TestOwnersTable(t *testing.T) {
	rows := ownerRows(string(readFile(t, archDoc)))
	if len(rows) < 30 {
		t.Fatalf("found %d rows in the owners table of docs/architecture.md; has its heading changed?", len(rows))
	}
	m := loadModule(t)
	bad, owners := ownerProblems(rows, m, exampleConfigKeys(t))
	if len(owners) < 30 {
		t.Fatalf("the owners table names %d symbols the module has", len(owners))
	}
	bad = append(bad, copyProblems(m, owners)...)
	if len(bad) > 0 {
		t.Fatalf("the owners table of docs/architecture.md is not true:\n%s", strings.Join(bad, "\n"))
	}
}

// TestOwnersTableCatchesBrokenRows proves each check can fail: an owner
// that does not exist, and a copy of each ruled decision.
func TestOwnersTableCatchesBrokenRows(t *testing.T) {
	src := map[string]string{
		"core/nip34/hex.go":    "package nip34\nfunc IsHex64(s string) bool { return len(s) == 64 }\n",
		"core/nip34/kinds.go":  "package nip34\nconst (\n\tKindPatch = 1617\n\tKindPR = 1618\n\tKindPRUpdate = 1619\n\tKindIssue = 1621\n)\nfunc IsRootKind(k int) bool { return false }\n" + kindName("KindName"),
		"core/pages/thread.go": "package pages\n" + kindName("kindWord"),
		"core/store/events.go": "package store\nfunc isLowerHex(s string, n int) bool {\n\tfor i := 0; i < len(s); i++ {\n\t\tif s[i] > 'f' {\n\t\t\treturn false\n\t\t}\n\t}\n\treturn true\n}\n" +
			"func isHex64(s string) bool { return len(s) != 64 }\n",
		"core/relaysync/observe.go": "package relaysync\nimport \"nip34\"\nvar RootKinds = []int{nip34.KindIssue, 1617, 1618, 1619}\n" +
			"func name(k int) string {\n\tswitch k {\n\tcase nip34.KindPR:\n\t\treturn \"pr\"\n\t}\n\treturn \"\"\n}\n",
		"core/git/paths.go": "package git\nfunc ishex64(s string) bool { return s != \"\" }\n" +
			"func DecodeNpub(s string) string { return nip34.IsHex64(s) }\n", // a wrapper, not a copy
	}
	fset := token.NewFileSet()
	files := map[string][]*ast.File{}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range src {
			if !yield(k) {
				return
			}
		}
	}) {
		f, err := parser.ParseFile(fset, name, src[name], 0)
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Dir(name)] = append(files[filepath.Dir(name)], f)
	}
	m := newModule(fset, files)
	m.exists = func(p string) bool { _, ok := src[p]; return ok || p == "core/nip34" }
	rows := ownerRows("### One owner per decision\n\n| decision | owner | called from |\n|---|---|---|\n" +
		"| hex | `nip34.IsHex64` (core/nip34/hex.go) | all |\n" +
		"| roots | `nip34.IsRootKind` (core/nip34/kinds.go) | sync |\n" +
		"| names | `nip34.KindName` (core/nip34/kinds.go) | pages |\n" +
		"| gone | `nip34.Gone`, `store.Store.Lead` (core/store/pglease.go), `internal/nothere` | x |\n" +
		"| key | `relay.pubkey` | x |\n\n## next\n")
	bad, owners := ownerProblems(rows, m, map[string]bool{})
	bad = append(bad, copyProblems(m, owners)...)
	want := []string{
		"owner nip34.Gone does not exist",
		"owner store.Store.Lead does not exist",
		"owner file core/store/pglease.go does not exist",
		"owner internal/nothere does not exist",
		"core/store/events.go:2 isLowerHex: a second 64-hex (or lowercase-hex) check",
		"core/store/events.go:10 isHex64: a second 64-hex (or lowercase-hex) check",
		"core/relaysync/observe.go:3 RootKinds: a second list of the root kinds",
		"core/relaysync/observe.go:4 name: a second name for an event kind in text",
		"core/git/paths.go:2 ishex64: a second ishex64 (owner nip34.IsHex64",
		"core/pages/thread.go:2 kindWord: a second name for an event kind in text",
		"core/pages/thread.go:2 kindWord: the body of nip34.KindName again",
		"core/store/events.go:10 isHex64: a second isHex64 (owner nip34.IsHex64",
	}
	for _, w := range want {
		if !slices.ContainsFunc(bad, func(b string) bool { return strings.Contains(b, w) }) {
			t.Errorf("no problem reported like %q", w)
		}
	}
	if t.Failed() || len(bad) != len(want) {
		t.Fatalf("want %d problems, got %d:\n%s", len(want), len(bad), strings.Join(bad, "\n"))
	}
}

// kindName is a function of the shape of nip34.KindName, named name.
func kindName(name string) string {
	return "func " + name + "(kind int) string {\n\tswitch kind {\n\tcase KindIssue:\n\t\treturn \"issue\"\n" +
		"\tcase KindPatch:\n\t\treturn \"patch\"\n\tcase KindPR:\n\t\treturn \"PR\"\n\tcase KindPRUpdate:\n\t\treturn \"PR update\"\n\t}\n\treturn \"event\"\n}\n"
}
