package admin

import (
	"cmp"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// TestVerifyFindsWhatChanged: a fresh backup verifies; a file added to
// it, a changed hash manifest, refs that differ from those recorded and
// an event whose content no longer matches its id are each reported.
func TestVerifyFindsWhatChanged(t *testing.T) {
	data, repos := fakeDataDir(t)
	recorded := map[string]string{"refs/heads/main": strings.Repeat("1", 40)}
	src := BackupSources{DataDir: data,
		Repos: func(ctx context.Context, fn func([]string) error) error { return fn(repos) },
		Refs:  func(context.Context, string) (map[string]string, error) { return recorded, nil },
		Store: func(w io.Writer) error { _, err := w.Write([]byte("dump")); return err },
	}
	backup := func() string {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(WriteBackup(context.Background(), pw, src)) }()
		dest := filepath.Join(t.TempDir(), "b")
		if _, err := ReceiveBackup(pr, dest); err != nil {
			t.Fatal(err)
		}
		return dest
	}
	k := nostr.GeneratePrivateKey()
	good := &nostr.Event{Kind: 1, Content: "hello", CreatedAt: 1}
	good.Sign(k)
	events := []*nostr.Event{good}
	served := recorded
	tools := VerifyTools{
		Load: func(string, io.Reader) error { return nil },
		Query: func(ctx context.Context, _ string, fn func(func(context.Context, nostr.Filter) (chan *nostr.Event, error)) error) error {
			return fn(func(_ context.Context, f nostr.Filter) (chan *nostr.Event, error) {
				ch := make(chan *nostr.Event, len(events))
				for _, e := range events {
					if f.Until == nil || e.CreatedAt <= *f.Until {
						ch <- e
					}
				}
				close(ch)
				return ch, nil
			})
		},
		Refs: func(context.Context, string) (map[string]string, error) { return served, nil },
		Fsck: func(context.Context, string) error { return nil },
	}
	verify := func(dest string) VerifyReport {
		rep, err := Verify(context.Background(), dest, tools)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	dest := backup()
	if rep := verify(dest); len(rep.Problems) != 0 || rep.Events != 1 || rep.Repositories != 2 || rep.Files == 0 {
		t.Fatalf("a fresh backup: %+v", rep)
	}

	os.WriteFile(filepath.Join(dest, "git", "stray"), []byte("x"), 0o644)
	if rep := verify(dest); !hasProblem(rep, "git/stray is not part of the backup") {
		t.Errorf("an added file: %v", rep.Problems)
	}
	os.Remove(filepath.Join(dest, "git", "stray"))

	served = map[string]string{"refs/heads/main": strings.Repeat("2", 40)}
	if rep := verify(dest); !hasProblem(rep, "refs differ from those recorded at backup time: refs/heads/main") {
		t.Errorf("moved refs: %v", rep.Problems)
	}
	served = recorded

	bad := *good
	bad.Content = "changed"
	events = []*nostr.Event{&bad}
	if rep := verify(dest); !hasProblem(rep, "its id or signature does not match") {
		t.Errorf("a changed event: %v", rep.Problems)
	}
	events = []*nostr.Event{good}

	hashes := filepath.Join(dest, HashesName)
	b, _ := os.ReadFile(hashes)
	os.WriteFile(hashes, append(b, []byte("0000  git/stray\n")...), 0o644)
	if rep := verify(dest); !hasProblem(rep, HashesName+" does not match the hash the manifest records") {
		t.Errorf("a changed hash manifest: %v", rep.Problems)
	}
}

func hasProblem(rep VerifyReport, part string) bool {
	for _, p := range rep.Problems {
		if strings.Contains(p, part) {
			return true
		}
	}
	return false
}

// TestVerifyEventsReadsEveryPage: the events are read a page at a time by
// created_at, and a second holding more events than a page does not stop
// the walk or count an event twice.
func TestVerifyEventsReadsEveryPage(t *testing.T) {
	defer func(p int) { verifyPage = p }(verifyPage)
	verifyPage = 20
	k := nostr.GeneratePrivateKey()
	var all []*nostr.Event
	for i := 0; i < 100; i++ {
		at := nostr.Timestamp(1000 + i%20) // 40 of them in seconds shared with another
		if i >= 40 {
			at = 1010 // 60 events in one second, more than two pages
		}
		e := &nostr.Event{Kind: 1, Content: strings.Repeat("x", i%7), CreatedAt: at, Tags: nostr.Tags{{"n", string(rune('a' + i%26)), strconv.Itoa(i)}}}
		e.Sign(k)
		all = append(all, e)
	}
	slices.SortFunc(all, func(a, b *nostr.Event) int {
		return cmp.Or(cmp.Compare(b.CreatedAt, a.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	q := func(_ context.Context, f nostr.Filter) (chan *nostr.Event, error) {
		ch := make(chan *nostr.Event, f.Limit)
		n := 0
		for _, e := range all {
			if n == f.Limit {
				break
			}
			if e.CreatedAt <= *f.Until {
				ch <- e
				n++
			}
		}
		close(ch)
		return ch, nil
	}
	var rep VerifyReport
	if err := verifyEvents(context.Background(), q, &rep, func(f string, a ...any) { t.Errorf(f, a...) }); err != nil {
		t.Fatal(err)
	}
	if rep.Events != len(all) {
		t.Fatalf("read %d events of %d", rep.Events, len(all))
	}
}
