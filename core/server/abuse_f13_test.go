package server_test

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grasp-dev/grasp/core/config"
)

// F13: every announcement from a fresh key created a bare repository at
// once (10 inodes, ~40 KB, 30 min), without bound: 2000 took 18.5 s from
// one client. The operator now sees a client's announcements beyond its
// quota refused with rate-limited: and no repository made for them, and
// the repositories it did get laid out small.
func TestAbuse_F13(t *testing.T) {
	e := newEnvOn(t, func(c *config.Config) { c.Purgatory.MaxHeldAnnouncementsPerIP = 5 }, nil)
	cl := e.dial()
	var first key
	for i := 0; i < 5; i++ {
		k := newKey(t)
		if i == 0 {
			first = k
		}
		cl.mustAccept(e.announcement(k, fmt.Sprint("flood", i)), purg)
	}
	for i := 5; i < 8; i++ {
		k := newKey(t)
		ok, msg := cl.publish(e.announcement(k, fmt.Sprint("flood", i)))
		if ok || !strings.HasPrefix(msg, "rate-limited: 5 repositories announced from your address already wait here for their first push (limit 5)") {
			t.Fatalf("announcement %d past the address's quota: %v %q", i, ok, msg)
		}
		if infoRefsStatus(t, e.cloneURL(k, fmt.Sprint("flood", i))) != 404 {
			t.Fatalf("a bare repository was made for refused announcement %d", i)
		}
	}
	dir, err := e.srv.Repos().Path(first.repo("flood0"))
	if err != nil {
		t.Fatal(err)
	}
	var inodes int
	var size int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil {
			inodes++
			if info, err := d.Info(); err == nil && !d.IsDir() {
				size += info.Size()
			}
		}
		return nil
	})
	t.Logf("a held announcement's bare repository: %d inodes, %d bytes of files", inodes, size)
	if inodes > 8 || size > 4096 {
		t.Fatalf("a held announcement's bare repository takes %d inodes and %d bytes", inodes, size)
	}
}
