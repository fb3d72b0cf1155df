package git

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/grasp-dev/grasp/core/nip34"
)

// BrokenAlternates lists the entries of repo's objects/info/alternates that
// no longer name an objects directory: objects borrowed through them are
// gone, so refs pointing at them are dangling (`grasp admin integrity-check`).
func (r *Repos) BrokenAlternates(repo nip34.RepoRef) ([]string, error) {
	dir, err := r.existing(repo)
	if err != nil {
		return nil, err
	}
	lines, err := readAlternates(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var broken []string
	for _, l := range lines {
		p := l
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, "objects", p)
		}
		if st, err := os.Stat(p); err != nil || !st.IsDir() {
			broken = append(broken, l)
		}
	}
	return broken, nil
}
