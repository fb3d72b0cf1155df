package hunt

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// Clone URLs come from anyone's announcement: without the operator's
// consent the hunter never fetches from an internal address, named by IP or
// by a hostname that resolves to one, and such a source is not a "dead
// host" either.
func TestSourcesOnInternalAddressesAreRefused(t *testing.T) {
	f := newFixture(t)
	srv := serveGit(t, f.rootA, 0)
	f.localRepo(t, "r")
	gc := f.gitContext()
	gc.AllowPrivate = false
	oid := f.c2
	for _, url := range []string{
		srv.URL + "/r.git",
		strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) + "/r.git",
		"http://169.254.169.254/latest/meta-data.git",
	} {
		_, err := gc.Fetch(context.Background(), repoN("r"), url, []string{oid})
		var fe *FetchError
		if !errors.As(err, &fe) || fe.Kind != KindRefused {
			t.Fatalf("%s: %v, want a refused fetch", url, err)
		}
	}
	if srv.total.Load() != 0 {
		t.Fatalf("the internal git host saw %d requests", srv.total.Load())
	}
}

func TestPublicSourceIsPinnedWithoutRedirects(t *testing.T) {
	gc := &GitContext{Timeout: time.Second}
	raw := "https://93.184.216.34/owner/repo.git"
	tg, err := parseSource(raw)
	if err != nil {
		t.Fatal(err)
	}
	pin, err := gc.pinSource(context.Background(), raw, tg)
	if err != nil {
		t.Fatal(err)
	}
	// an address literal is not resolved by curl: nothing to pin
	want := []string{"http.followRedirects=false"}
	if strings.Join(pin, " ") != strings.Join(want, " ") {
		t.Fatalf("pin %v, want %v", pin, want)
	}
}
