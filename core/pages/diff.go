package pages

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/nip34"
)

// A diff as a page shows it: the list of files changed with their
// diffstat, each linked to its place in the diff, and the diff itself cut
// at MaxDiffBytes. The PR page reads it from git between two commits, the
// patch page from the patches' text.

// fileStat is one changed file.
type fileStat struct {
	Path     string
	From     string // the old path of a rename
	Add, Del int
	Binary   bool
	Anchor   string // the id of its header in the diff ("" when cut off)
}

// diffRow is one line of a shown diff.
type diffRow struct {
	Class, Text string
	ID          string // anchor of a file's first line
}

type diffView struct {
	Files          []fileStat
	FilesCut       bool // more files than maxDiffFiles
	Added, Deleted int
	Rows           []diffRow
	Truncated      bool // the diff was cut at Max
	Max            int64
}

// maxDiffFiles bounds the file list of one diff.
const maxDiffFiles = 2000

// size is about what the view holds, for the cache.
func (d diffView) size() int {
	n := 0
	for _, f := range d.Files {
		n += len(f.Path) + len(f.From) + 64
	}
	for _, r := range d.Rows {
		n += len(r.Text) + len(r.ID) + 40
	}
	return n
}

// diffBetween reads the diff from commit from to commit to (both object
// ids the caller checked): git's numstat for the file list (complete even
// when the diff is cut) and the patch up to MaxDiffBytes.
func (p *Pages) diffBetween(ctx context.Context, repo nip34.RepoRef, from, to string) (diffView, error) {
	d := diffView{Max: int64(p.opts.MaxDiffBytes)}
	stat, err := p.read(ctx, repo, 1<<20, "diff-tree", "-r", "-M", "-z", "--numstat", "--no-color", "--no-ext-diff", "--no-textconv", from, to)
	if errors.Is(err, git.ErrReadTruncated) {
		d.FilesCut = true
	} else if err != nil {
		return d, err
	}
	d.Files, d.FilesCut = parseNumstat(stat, d.FilesCut)
	for _, f := range d.Files {
		d.Added += f.Add
		d.Deleted += f.Del
	}
	out, err := p.readLimited(ctx, repo, git.ReadLimits{MaxBytes: p.opts.MaxDiffBytes},
		"diff-tree", "-r", "-p", "-M", "--no-color", "--no-ext-diff", "--no-textconv", from, to)
	if errors.Is(err, git.ErrReadTruncated) {
		d.Truncated = true
	} else if err != nil {
		return d, err
	}
	d.Rows = diffRows(string(out), d.Files)
	return d, nil
}

// parseNumstat reads `diff-tree -z --numstat`: "add\tdel\tpath\0", or for
// a rename "add\tdel\t\0old\0new\0"; "-" counts mark a binary file.
func parseNumstat(out []byte, cut bool) ([]fileStat, bool) {
	var files []fileStat
	recs := bytes.Split(out, []byte{0})
	for i := 0; i < len(recs); i++ {
		f := strings.SplitN(string(recs[i]), "\t", 3)
		if len(f) != 3 {
			continue
		}
		fs := fileStat{Path: f[2]}
		if f[0] == "-" && f[1] == "-" {
			fs.Binary = true
		} else {
			fs.Add, _ = strconv.Atoi(f[0])
			fs.Del, _ = strconv.Atoi(f[1])
		}
		if fs.Path == "" {
			if i+2 >= len(recs) {
				break
			}
			fs.From, fs.Path = string(recs[i+1]), string(recs[i+2])
			i += 2
		}
		if len(files) == maxDiffFiles {
			return files, true
		}
		files = append(files, fs)
	}
	return files, cut
}

// diffRows classifies the lines of a unified diff and anchors each file's
// header; files gets the anchors, in order.
func diffRows(text string, files []fileStat) []diffRow {
	text = strings.TrimSuffix(text, "\n")
	if text == "" {
		return nil
	}
	var rows []diffRow
	n := 0
	for _, l := range strings.Split(text, "\n") {
		row := diffRow{Text: l}
		if n > 0 || strings.HasPrefix(l, "diff --git ") {
			// before the first file is a patch's mail and message
			row.Class = diffClass(l)
		}
		if strings.HasPrefix(l, "diff --git ") {
			row.ID = "f-" + strconv.Itoa(n)
			if n < len(files) {
				files[n].Anchor = row.ID
			}
			n++
		}
		rows = append(rows, row)
	}
	return rows
}

// patchStats reads the file list and diffstat of the unified diff in a
// patch's text (its `diff --git` sections and their +/- lines).
func patchStats(text string) []fileStat {
	var files []fileStat
	inHunk := false
	for _, l := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(l, "diff --git "):
			path := l[len("diff --git "):]
			if i := strings.LastIndex(path, " b/"); i >= 0 {
				path = path[i+3:]
			}
			files = append(files, fileStat{Path: path})
			inHunk = false
		case len(files) == 0:
		case strings.HasPrefix(l, "@@"):
			inHunk = true
		case strings.HasPrefix(l, "rename from "):
			files[len(files)-1].From = strings.TrimPrefix(l, "rename from ")
		case strings.HasPrefix(l, "Binary files "), strings.HasPrefix(l, "GIT binary patch"):
			files[len(files)-1].Binary = true
		case !inHunk:
		case l == "-- ":
			// format-patch's signature ends the last hunk
			inHunk = false
		case strings.HasPrefix(l, "+"):
			files[len(files)-1].Add++
		case strings.HasPrefix(l, "-"):
			files[len(files)-1].Del++
		case l != "" && l[0] != ' ' && l[0] != '\\':
			// the signature of format-patch, or the next mail's header
			inHunk = false
		}
	}
	return files
}

// diffParts shows a diffView: "files" (the list with the diffstat) and
// "diff" (the rows). Both read a diffView as dot.
const diffParts = `{{define "files"}}<p>{{len .Files}} file{{if ne (len .Files) 1}}s{{end}} changed, <span class="add">+{{.Added}}</span> <span class="del">−{{.Deleted}}</span>{{if .FilesCut}} (the list was cut){{end}}</p>
{{if .Files}}<div class="scroll"><table class="files">{{range .Files}}<tr><td>{{if .Anchor}}<a href="#{{.Anchor}}">{{.Path}}</a>{{else}}{{.Path}}{{end}}{{if .From}} <span class="muted">(from {{.From}})</span>{{end}}</td><td class="num">{{if .Binary}}binary{{else}}<span class="add">+{{.Add}}</span> <span class="del">−{{.Del}}</span>{{end}}</td></tr>
{{end}}</table></div>{{end}}{{end}}
{{define "diff"}}<pre class="diff">{{range .Rows}}<span class="{{.Class}}"{{if .ID}} id="{{.ID}}"{{end}}>{{.Text}}</span>
{{end}}</pre>
{{if .Truncated}}<p class="muted">The diff was cut at {{size .Max}}. Clone the repository to see all of it.</p>{{end}}{{end}}`
