package relay

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/internal/testwait"
)

// The bridge benchmarks measure what grasp's front (gate + relay hooks)
// costs over bare khatru on the same store type, in the same run:
//
//	go test -run '^$' -bench Bridge -benchtime 2000x ./core/relay/
//
// CPU is process CPU time (client included; the client is the same for
// every setup, so differences are the server's), allocations are
// runtime.MemStats.Mallocs deltas. Idle connections are raw TCP clients
// that did the websocket handshake and one round trip, so the client side
// costs one socket.

type bridgeSetup struct {
	name string
	url  string
}

func bridgeSetups(b *testing.B) []bridgeSetup {
	bare := startBareKhatru(b, false) // CPU, not the disk, is measured
	grasp := startRelay(b, Options{})
	return []bridgeSetup{{"khatru", bare}, {"grasp", grasp.ws}}
}

type cost struct {
	cpu    time.Duration
	allocs uint64
	bytes  uint64
}

func measure(fn func()) cost {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	c0 := cpuTime()
	fn()
	c1 := cpuTime()
	runtime.ReadMemStats(&m1)
	return cost{cpu: c1 - c0, allocs: m1.Mallocs - m0.Mallocs, bytes: m1.TotalAlloc - m0.TotalAlloc}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func report(b *testing.B, setups []bridgeSetup, costs []cost, n int) {
	for i, s := range setups {
		c := costs[i]
		b.ReportMetric(float64(c.cpu.Microseconds())/float64(n), s.name+"-cpu-us/op")
		b.ReportMetric(float64(c.allocs)/float64(n), s.name+"-allocs/op")
		b.ReportMetric(float64(c.bytes)/float64(n), s.name+"-B/op")
	}
	last := costs[len(costs)-1]
	b.ReportMetric(float64(last.cpu)/float64(costs[0].cpu), "cpu-ratio-vs-khatru")
	b.ReportMetric(float64(last.allocs)/float64(costs[0].allocs), "allocs-ratio-vs-khatru")
}

func dialBench(b *testing.B, url string) *websocket.Conn {
	c, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		b.Fatalf("dial %s: %v", url, err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

func readLabel(b *testing.B, c *websocket.Conn, want string) []byte {
	b.Helper()
	for {
		if err := c.SetReadDeadline(testwait.Deadline(b)); err != nil {
			b.Fatal(err)
		}
		_, msg, err := c.ReadMessage()
		if err != nil {
			b.Fatalf("read %s (want %q): %v", c.RemoteAddr(), want, err)
		}
		if want == "" || strings.HasPrefix(string(msg), `["`+want+`"`) {
			return msg
		}
	}
}

// runRounds alternates the setups (and who goes first) in rounds of about
// 100 operations, so that load drifting on a shared machine hits every
// setup alike.
func runRounds(b *testing.B, setups []bridgeSetup, n int, op func(i int, s bridgeSetup, from, to int)) []cost {
	rounds := max(4, n/100)
	costs := make([]cost, len(setups))
	for r := 0; r < rounds; r++ {
		from, to := r*n/rounds, (r+1)*n/rounds
		for k := range setups {
			i := (k + r) % len(setups)
			runtime.GC()
			c := measure(func() { op(i, setups[i], from, to) })
			costs[i].cpu += c.cpu
			costs[i].allocs += c.allocs
			costs[i].bytes += c.bytes
		}
	}
	return costs
}

// BenchmarkBridgeEvent is one EVENT round trip (send, wait for its OK) on
// one connection, per setup. Signature checks and the store write are in
// every setup; the differences are the hooks and the front.
func BenchmarkBridgeEvent(b *testing.B) {
	setups := bridgeSetups(b)
	k := newKey(b)
	frames := make([][][]byte, len(setups))
	conns := make([]*websocket.Conn, len(setups))
	now := time.Now().Unix()
	for i, s := range setups {
		conns[i] = dialBench(b, s.url)
		for j := 0; j < b.N; j++ {
			e := k.event(b, 1, now-int64(j%3600), nostr.Tags{{"t", "bench"}}, fmt.Sprintf("bridge bench %d/%d with a little text", i, j))
			f, _ := json.Marshal([]any{"EVENT", e})
			frames[i] = append(frames[i], f)
		}
	}
	b.ResetTimer()
	costs := runRounds(b, setups, b.N, func(i int, s bridgeSetup, from, to int) {
		c := conns[i]
		for _, f := range frames[i][from:to] {
			if err := c.WriteMessage(websocket.TextMessage, f); err != nil {
				b.Fatal(err)
			}
			if ok := readLabel(b, c, "OK"); !strings.Contains(string(ok), ",true,") {
				b.Fatalf("%s refused: %s", s.name, ok)
			}
		}
	})
	b.StopTimer()
	report(b, setups, costs, b.N)
}

// BenchmarkBridgeReq is one REQ answered with 20 stored events and EOSE,
// then CLOSE, on one connection, per setup.
func BenchmarkBridgeReq(b *testing.B) {
	const stored, limit = 50, 20
	setups := bridgeSetups(b)
	k := newKey(b)
	now := time.Now().Unix()
	var seed [][]byte
	for j := 0; j < stored; j++ {
		e := k.event(b, 1, now-int64(j), nostr.Tags{{"t", "bench"}}, fmt.Sprintf("stored event %d with a little text", j))
		f, _ := json.Marshal([]any{"EVENT", e})
		seed = append(seed, f)
	}
	conns := make([]*websocket.Conn, len(setups))
	for i, s := range setups {
		conns[i] = dialBench(b, s.url)
		for _, f := range seed {
			if err := conns[i].WriteMessage(websocket.TextMessage, f); err != nil {
				b.Fatal(err)
			}
			if ok := readLabel(b, conns[i], "OK"); !strings.Contains(string(ok), ",true,") {
				b.Fatalf("%s refused: %s", s.name, ok)
			}
		}
	}
	b.ResetTimer()
	costs := runRounds(b, setups, b.N, func(i int, s bridgeSetup, from, to int) {
		c := conns[i]
		for j := from; j < to; j++ {
			sub := fmt.Sprintf("s%d", j)
			req := fmt.Sprintf(`["REQ","%s",{"kinds":[1],"authors":["%s"],"limit":%d}]`, sub, k.PK, limit)
			if err := c.WriteMessage(websocket.TextMessage, []byte(req)); err != nil {
				b.Fatal(err)
			}
			got := 0
			for {
				msg := readLabel(b, c, "")
				if strings.HasPrefix(string(msg), `["EOSE"`) {
					break
				}
				if strings.HasPrefix(string(msg), `["EVENT"`) {
					got++
				} else {
					b.Fatalf("%s: unexpected %s", s.name, msg)
				}
			}
			if got != limit {
				b.Fatalf("%s sent %d events, want %d", s.name, got, limit)
			}
			if err := c.WriteMessage(websocket.TextMessage, []byte(`["CLOSE","`+sub+`"]`)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.StopTimer()
	report(b, setups, costs, b.N)
}

// BenchmarkBridgeIdleConn opens idle connections (b.N per setup, at least
// 50) and reports the heap+stack and goroutines each costs the process.
func BenchmarkBridgeIdleConn(b *testing.B) {
	setups := bridgeSetups(b)
	n := max(b.N, 50)
	b.ResetTimer()
	var mem, gor []float64
	for _, s := range setups {
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		g0 := runtime.NumGoroutine()
		conns := make([]net.Conn, 0, n)
		for j := 0; j < n; j++ {
			conns = append(conns, rawHandshake(b, s.url))
		}
		runtime.GC()
		runtime.ReadMemStats(&m1)
		g1 := runtime.NumGoroutine()
		mem = append(mem, float64(int64(m1.HeapInuse+m1.StackInuse)-int64(m0.HeapInuse+m0.StackInuse))/float64(n))
		gor = append(gor, float64(g1-g0)/float64(n))
		for _, c := range conns {
			c.Close()
		}
	}
	b.StopTimer()
	for i, s := range setups {
		b.ReportMetric(mem[i], s.name+"-B/conn")
		b.ReportMetric(gor[i], s.name+"-goroutines/conn")
	}
	b.ReportMetric(mem[len(mem)-1]/mem[0], "mem-ratio-vs-khatru")
}

// rawHandshake upgrades a plain TCP connection, then sends an unknown verb
// and reads the NOTICE, so the server has finished setting it up.
func rawHandshake(b *testing.B, url string) net.Conn {
	addr := strings.TrimPrefix(url, "ws://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", addr)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		b.Fatalf("handshake: %v %v", resp, err)
	}
	// A masked text frame ["X"] (mask key 0: the payload is sent as is).
	payload := []byte(`["X"]`)
	frame := append([]byte{0x81, 0x80 | byte(len(payload)), 0, 0, 0, 0}, payload...)
	if _, err := c.Write(frame); err != nil {
		b.Fatal(err)
	}
	if err := c.SetReadDeadline(testwait.Deadline(b)); err != nil {
		b.Fatal(err)
	}
	hdr := make([]byte, 2)
	if _, err := io.ReadFull(br, hdr); err != nil {
		b.Fatalf("read NOTICE: %v", err)
	}
	size := int(hdr[1] & 0x7f)
	if size == 126 {
		ext := make([]byte, 2)
		io.ReadFull(br, ext)
		size = int(ext[0])<<8 | int(ext[1])
	}
	if _, err := io.ReadFull(br, make([]byte, size)); err != nil {
		b.Fatalf("read NOTICE body: %v", err)
	}
	return c
}
