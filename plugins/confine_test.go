package plugins

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/policy"
)

func TestRequireConfinedToPluginDir(t *testing.T) {
	outside := t.TempDir()
	secret := write(t, outside, "secret.js", `module.exports = { x: "leaked" };`)
	cases := map[string]string{
		"parent path":           `require("../secret.js")`,
		"parent without ext":    `require("../secret")`,
		"absolute path":         `require(` + jsString(secret) + `)`,
		"core module process":   `require("process")`,
		"core module fs":        `require("fs")`,
		"node: prefix":          `require("node:child_process")`,
		"symlink out of dir":    `require("./link.js")`,
		"symlinked dir":         `require("./linkdir/secret.js")`,
		"dot-dot inside a path": `require("./sub/../../secret.js")`,
	}
	for name, expr := range cases {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "plugins")
			if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			// The outside module sits next to the plugin dir, so "../secret.js" would reach it.
			write(t, root, "secret.js", `module.exports = { x: "leaked" };`)
			if err := os.Symlink(secret, filepath.Join(dir, "link.js")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, filepath.Join(dir, "linkdir")); err != nil {
				t.Fatal(err)
			}
			write(t, dir, "p.js", "const m = "+expr+";\nmodule.exports = { accept() { return m.x } };")
			_, err := NewSet(Options{Dir: dir, PoolSize: 1, Clock: clock.NewFake(t0), Accept: []Spec{acceptSpec("p", "p.js")}})
			if err == nil {
				t.Fatal("a module outside the plugin dir was loaded")
			}
			t.Log(err)
			if !strings.Contains(err.Error(), "restricted") && !strings.Contains(err.Error(), "Invalid module") {
				t.Fatalf("unexpected error: %v", err)
			}
		})
	}
}

func jsString(s string) string { return `"` + strings.ReplaceAll(s, `\`, `\\`) + `"` }

func TestRequireInsideDirWorks(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "lib/words.js", `module.exports = ["casino"];`)
	write(t, dir, "lib/data.json", `{"n": 2}`)
	write(t, dir, "p.js", `const w = require("./lib/words"); const d = require("./lib/data.json");
		module.exports = { accept(e) { if (e.content.includes(w[0]) && d.n === 2) return "spam" } };`)
	s := mustSet(t, Options{Dir: dir, PoolSize: 2, Accept: []Spec{acceptSpec("p", "p.js")}})
	if v := s.Accept(context.Background(), testEvent(1, "casino!"), clientMeta()); v.Msg != "blocked: spam" {
		t.Fatalf("got %+v", v)
	}
}

func TestRequireOnlyAtLoadTime(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "lib.js", `module.exports = 1;`)
	write(t, dir, "p.js", `module.exports = { accept(e) { require("./lib.js") } };`)
	s := mustSet(t, Options{Dir: dir, PoolSize: 1, Accept: []Spec{acceptSpec("p", "p.js")}})
	if v := s.Accept(context.Background(), testEvent(1, ""), clientMeta()); v.Action != policy.Reject {
		t.Fatalf("require() worked during a hook call: %+v", v)
	}
}

func TestEntryFileConfined(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "plugins")
	write(t, root, "evil.js", `module.exports = { accept() {} };`)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "evil.js"), filepath.Join(dir, "link.js")); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"../evil.js", filepath.Join(root, "evil.js"), "link.js", "missing.js"} {
		if _, err := NewSet(Options{Dir: dir, PoolSize: 1, Clock: clock.NewFake(t0), Accept: []Spec{acceptSpec("p", f)}}); err == nil {
			t.Errorf("file %q was accepted", f)
		}
	}
}

func TestNoHostAPIsBeyondGrasp(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "p.js", `module.exports = { accept() {
		const present = ["setTimeout","setInterval","fetch","process","XMLHttpRequest","WebSocket","Deno","Bun"].filter(n => typeof globalThis[n] !== "undefined");
		return present.length ? "restricted: " + present.join(",") : "restricted: none";
	} };`)
	s := mustSet(t, Options{Dir: dir, PoolSize: 1, Accept: []Spec{acceptSpec("p", "p.js")}})
	if v := s.Accept(context.Background(), testEvent(1, ""), clientMeta()); v.Msg != "restricted: none" {
		t.Fatalf("host APIs visible to scripts: %s", v.Msg)
	}
}
