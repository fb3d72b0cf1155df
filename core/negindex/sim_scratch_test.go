package negindex

import (
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy/storage/vector"
)

func TestScratchSim(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SIM_N"))
	if n == 0 {
		t.Skip()
	}
	cf, _ := strconv.Atoi(os.Getenv("SIM_CF"))
	sf, _ := strconv.Atoi(os.Getenv("SIM_SF"))
	r := rand.New(rand.NewSource(1))
	ix := New(nil)
	events := make([]Event, n)
	for i := range events {
		e := &events[i]
		r.Read(e.ID[:])
		e.CreatedAt = uint32(1_700_000_000 + r.Intn(n*10))
		e.Kind = 1111
	}
	ix.Load(events)
	snap, _, _ := ix.Select(nostr.Filter{}, n)
	var client negentropy.Storage
	if os.Getenv("SIM_VEC") != "" {
		v := vector.New()
		for i, it := range snap.Range(0, snap.Size()) {
			if i%100 != 50 {
				v.Insert(it.Timestamp, it.ID)
			}
		}
		v.Seal()
		client = v
	} else {
		b := NewSnapshotBuilder(n)
		for i, it := range snap.Range(0, snap.Size()) {
			if i%100 != 50 {
				b.Add(it.Timestamp, it.ID)
			}
		}
		client = b.Snapshot()
	}
	var server, cl time.Duration
	t0 := time.Now()
	cneg := negentropy.New(client, cf)
	msg := cneg.Start()
	cl += time.Since(t0)
	t1 := time.Now()
	s, _, _ := ix.Select(nostr.Filter{}, n)
	sneg := negentropy.New(s, sf)
	server += time.Since(t1)
	missing := make(chan int)
	go func() {
		for range cneg.Haves {
		}
	}()
	go func() {
		k := 0
		for range cneg.HaveNots {
			k++
		}
		missing <- k
	}()
	rounds, up, down := 0, len(msg)/2, 0
	for {
		tt := time.Now()
		out, err := sneg.Reconcile(msg)
		server += time.Since(tt)
		if err != nil {
			t.Fatal(err)
		}
		down += len(out) / 2
		rounds++
		tt = time.Now()
		msg, err = cneg.Reconcile(out)
		cl += time.Since(tt)
		if err != nil {
			t.Fatal(err)
		}
		up += len(msg) / 2
		if msg == "" {
			break
		}
	}
	k := <-missing
	fmt.Printf("n=%d cf=%d sf=%d rounds=%d missing=%d up=%dKB down=%dKB server=%v client=%v\n", n, cf, sf, rounds, k, up/1000, down/1000, server, cl)
}
