package plugins

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/dop251/goja_nodejs/require"

	"github.com/grasp-dev/grasp/core/outcome"
)

// errOutside is returned for any module path that resolves (after symlinks)
// outside the plugin directory.
var errOutside = outcome.Errorf(outcome.Restricted, "module is outside the plugin directory")

// jail confines module loading to one directory, symlinks included.
type jail struct {
	root string // absolute, symlinks resolved
}

func newJail(dir string) (*jail, error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("plugin dir %q: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("plugin dir %q: %w", dir, err)
	}
	st, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("plugin dir %q: %w", dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("plugin dir %q is not a directory", dir)
	}
	return &jail{root: real}, nil
}

// inside reports whether the cleaned absolute path p lies under the root.
func (j *jail) inside(p string) bool {
	rel, err := filepath.Rel(j.root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// entry resolves a Spec.File: relative to the root, and inside it once
// symlinks are followed.
func (j *jail) entry(file string) (string, error) {
	if filepath.IsAbs(file) {
		return "", fmt.Errorf("file %q: must be relative to the plugin directory", file)
	}
	p, err := j.resolve(filepath.Join(j.root, file))
	if err != nil {
		return "", fmt.Errorf("file %q: %w", file, err)
	}
	st, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("file %q: %w", file, err)
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("file %q: not a regular file", file)
	}
	return p, nil
}

// resolve follows symlinks and rejects anything outside the root.
func (j *jail) resolve(p string) (string, error) {
	p = filepath.Clean(p)
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if !j.inside(p) {
		return "", errOutside
	}
	return p, nil
}

// pathResolver is the require.PathResolver: base is the requiring module's
// directory (always absolute here, because entry files are loaded by their
// absolute path).
func (j *jail) pathResolver(base, name string) string {
	p := name
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, filepath.FromSlash(name))
	}
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return real
	}
	return filepath.Clean(p)
}

// load is the require.SourceLoader. It re-checks confinement on the final
// path because the resolver's output is only a hint (require also probes
// "<p>.js", "<p>/index.js" and package.json "main").
func (j *jail) load(p string) ([]byte, error) {
	rp, err := j.resolve(p)
	if err != nil {
		return nil, fmt.Errorf("require %s: %w", p, err)
	}
	st, err := os.Stat(rp)
	if err != nil || !st.Mode().IsRegular() {
		return nil, require.ModuleFileDoesNotExistError
	}
	return os.ReadFile(rp)
}

func (j *jail) registry() *require.Registry {
	return require.NewRegistry(require.WithLoader(j.load), require.WithPathResolver(j.pathResolver))
}

// requireName reports whether a require() argument names a file. Bare names
// would reach goja_nodejs's core modules (process, and whatever else the
// binary links), so only paths are allowed.
func requireName(name string) bool {
	return strings.HasPrefix(name, "./") || strings.HasPrefix(name, "../") || strings.HasPrefix(name, "/")
}
