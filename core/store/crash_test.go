package store

import (
	"bufio"
	"context"
	"fmt"
	"github.com/grasp-dev/grasp/internal/pgtest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/internal/testwait"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/nip34"
)

// Environment switches that turn the test binary into the crash child.
const (
	crashDirEnv   = "GRASP_STORE_CRASH_DIR"
	crashRoundEnv = "GRASP_STORE_CRASH_ROUND"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashDirEnv); dir != "" {
		os.Exit(crashChild(dir, os.Getenv(crashRoundEnv)))
	}
	if mode := os.Getenv(rssModeEnv); mode != "" {
		os.Exit(rssChild(mode, os.Getenv(rssDirEnv)))
	}
	pgtest.Main(m)
}

// crashChild saves events from several goroutines and prints each id only
// after SaveEvent returned, until it is killed. It stops on its own after a
// bounded number of events so an orphan cannot run forever.
func crashChild(dir, round string) int {
	// A 1 MiB memtable makes WAL rotations and table flushes happen
	// mid-stream, so the kill lands among them too.
	s, err := New(Options{Dir: dir, MemTableMB: 1}, env.Env{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		return 2
	}
	const writers, perWriter = 4, 5000
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sk := nostr.GeneratePrivateKey()
			for i := range perWriter {
				content := fmt.Sprintf("round %s writer %d patch %d", round, w, i)
				if i%2 == 0 {
					// Every other event is patch-sized: its content is packed
					// into a content record and its record goes to the value
					// log, so the kill also lands between those writes.
					content += "\n" + strings.Repeat(fmt.Sprintf("+\tline %d of patch %d\n", i, w), 60)
				}
				evt := &nostr.Event{
					Kind:      1617,
					CreatedAt: nostr.Timestamp(1_700_000_000 + i),
					Content:   content,
					Tags:      nostr.Tags{{"t", "crash"}, {"r", strconv.Itoa(i)}},
				}
				if err := evt.Sign(sk); err != nil {
					fmt.Fprintln(os.Stderr, "child sign:", err)
					return
				}
				if err := s.Events().SaveEvent(context.Background(), evt); err != nil {
					fmt.Fprintln(os.Stderr, "child save:", err)
					return
				}
				mu.Lock()
				fmt.Fprintln(os.Stdout, evt.ID)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "child close:", err)
		return 2
	}
	return 0
}

// TestCrashKill9EveryAckedEventSurvives kills a writing child with SIGKILL
// mid-stream and checks that every id it reported as saved is queryable,
// intact, and that the store reopens cleanly and keeps accepting writes.
func TestCrashKill9EveryAckedEventSurvives(t *testing.T) {
	dir := t.TempDir()
	var acked []string
	for round := range 3 {
		killAfter := 150 + 100*round
		ids := runCrashChild(t, dir, round, killAfter)
		if len(ids) < killAfter {
			t.Fatalf("round %d: child acknowledged only %d events", round, len(ids))
		}
		acked = append(acked, ids...)

		s, err := New(Options{Dir: dir}, env.Env{})
		if err != nil {
			t.Fatalf("round %d: reopen after kill -9: %v", round, err)
		}
		missing := 0
		for start := 0; start < len(acked); start += 500 {
			chunk := acked[start:min(start+500, len(acked))]
			found := map[string]bool{}
			for _, e := range query(t, context.Background(), s.Events(), nostr.Filter{IDs: chunk}) {
				if !e.CheckID() {
					t.Errorf("round %d: event %s came back altered", round, e.ID)
				}
				found[e.ID] = true
			}
			for _, id := range chunk {
				if !found[id] {
					missing++
				}
			}
		}
		if missing > 0 {
			t.Fatalf("round %d: %d of %d acknowledged events lost", round, missing, len(acked))
		}
		if !s.badger().hasLarge.Load() {
			t.Fatalf("round %d: no content record in the store: the test no longer covers packed events", round)
		}
		// New writes after recovery must not reuse a record slot.
		fresh := signed(t, testKey(round), 1, nostr.Timestamp(100+round), "after crash")
		mustSave(t, s.Events(), fresh)
		if got := query(t, context.Background(), s.Events(), nostr.Filter{IDs: []string{acked[0], fresh.ID}}); len(got) != 2 {
			t.Fatalf("round %d: after a new save found %d of 2 events", round, len(got))
		}
		if err := s.Close(); err != nil {
			t.Fatalf("round %d: close: %v", round, err)
		}
		t.Logf("round %d: %d acknowledged events so far all present", round, len(acked))
	}
}

// runCrashChild starts the child, SIGKILLs it once killAfter ids were read,
// and returns every id it printed (including any printed before it died).
func runCrashChild(t *testing.T, dir string, round, killAfter int) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashRoundEnv+"="+strconv.Itoa(round))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start crash child: %v", err)
	}
	// Hang guard: a child that stops printing is killed too.
	guard := time.AfterFunc(testwait.Limit(t), func() { _ = cmd.Process.Kill() })
	defer guard.Stop()

	var ids []string
	killed := false
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		if !nip34.IsHex64(line) {
			t.Fatalf("child printed %q", line)
		}
		ids = append(ids, line)
		if !killed && len(ids) >= killAfter {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatalf("kill child: %v", err)
			}
			killed = true
		}
	}
	err = cmd.Wait()
	if !killed {
		t.Fatalf("child finished (%v) before %d events", err, killAfter)
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child was not killed by SIGKILL: %v", err)
	}
	return ids
}
