package pages

import (
	"net/http"
	"strings"

	"github.com/grasp-dev/grasp/core/githttp"
	"github.com/grasp-dev/grasp/core/nip34"
)

// raw serves raw/<rev>/<path>: the file's bytes as githttp.Snapshots serves
// them (text as text/plain, never as a page), an attachment with
// ?download.
func (p *Pages) raw(w http.ResponseWriter, r *http.Request, repo nip34.RepoRef, rest string) {
	if p.opts.Snapshots == nil {
		p.notFound(w, r)
		return
	}
	_, _, _, _, self, ok := p.fileAt(w, r, repo, rest, "A raw file is named by its path: raw/<branch, tag or commit>/<path>.")
	if !ok {
		return
	}
	_, download := r.URL.Query()["download"]
	p.opts.Snapshots.ServeBlob(w, r, repo, self.OID, self.Name, download)
}

// archive serves archive/<rev>.tar.gz and archive/<rev>.zip: a snapshot of
// the tree of a branch, tag or commit, streamed by githttp.Snapshots in the git
// process slots, its paths under <identifier>-<rev>/.
func (p *Pages) archive(w http.ResponseWriter, r *http.Request, repo nip34.RepoRef, rest string) {
	if p.opts.Snapshots == nil {
		p.notFound(w, r)
		return
	}
	var format string
	for _, f := range githttp.ArchiveFormats {
		if trimmed, ok := strings.CutSuffix(rest, "."+f); ok && trimmed != "" {
			rest, format = trimmed, f
			break
		}
	}
	if format == "" {
		p.errorPage(w, r, http.StatusNotFound, "A snapshot is archive/<branch, tag or commit>.tar.gz or .zip.")
		return
	}
	_, rev, oid, path, ok := p.at(w, r, repo, rest)
	if !ok {
		return
	}
	if path != "" {
		p.errorPage(w, r, http.StatusNotFound, "This repository has no branch, tag or commit "+rest+".")
		return
	}
	p.opts.Snapshots.ServeArchive(w, r, repo, oid, format, snapshotName(repo.Identifier, rev))
}

// snapshotName is the directory a snapshot unpacks into: the identifier
// and the revision, with anything but letters, digits, '.', '_' and '-'
// made '-'.
func snapshotName(d, rev string) string {
	return strings.Map(func(c rune) rune {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
			return c
		}
		return '-'
	}, strings.Trim(d+"-"+rev, "."))
}
