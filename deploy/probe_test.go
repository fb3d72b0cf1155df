package deploy

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/grasp-dev/grasp/internal/testwait"
)

// probe is an upstream that reports what a proxy did to a request: the
// forwarding headers it set, whether it streamed a request body and a
// response as they came or held them back, and websocket upgrades.
type probe struct {
	*httptest.Server
	// hold is how long the upstream waits for data the proxy should have
	// passed on at once; a buffering proxy passes it only when the other
	// side gives up, so the test fails rather than hangs. It is a hang
	// detector: half of testwait's bound, so the client, which waits the
	// whole bound, sees the upstream give up.
	hold    time.Duration
	mu      sync.Mutex
	signals map[string]chan struct{}
}

// firstChunk is what the streaming probes send before waiting for the other
// side: small enough that a buffering proxy keeps it.
const firstChunk = 64 << 10

func newProbe(t testing.TB) *probe {
	p := &probe{signals: map[string]chan struct{}{}, hold: testwait.Limit(t) / 2}
	mux := http.NewServeMux()
	mux.HandleFunc("/probe/headers", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{
			"host":              r.Host,
			"x-forwarded-for":   strings.Join(r.Header.Values("X-Forwarded-For"), ", "),
			"x-forwarded-proto": r.Header.Get("X-Forwarded-Proto"),
		})
	})
	// upload reads the first chunk of a body whose sender waits for the
	// signal before sending the rest; it answers with the bytes read.
	mux.HandleFunc("/probe/upload", func(w http.ResponseWriter, r *http.Request) {
		n, err := io.ReadFull(r.Body, make([]byte, firstChunk))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		close(p.signal(r.URL.Query().Get("id")))
		rest, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprint(w, int64(n)+rest)
	})
	// download sends a first chunk and the rest only once the client
	// signalled that the first one arrived.
	mux.HandleFunc("/probe/download", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write([]byte(strings.Repeat("a", 100)))
		w.(http.Flusher).Flush()
		select {
		case <-p.signal(r.URL.Query().Get("id")):
			w.Write([]byte("rest"))
		case <-time.After(p.hold):
			w.Write([]byte("gave up"))
		}
	})
	mux.HandleFunc("/probe/ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		typ, b, err := c.Read(r.Context())
		if err != nil {
			return
		}
		c.Write(r.Context(), typ, append([]byte("echo "), b...))
		c.Close(websocket.StatusNormalClosure, "")
	})
	p.Server = httptest.NewServer(mux)
	t.Cleanup(p.Close)
	return p
}

func (p *probe) signal(id string) chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	ch, ok := p.signals[id]
	if !ok {
		ch = make(chan struct{})
		p.signals[id] = ch
	}
	return ch
}

func (p *probe) Addr() string { return strings.TrimPrefix(p.URL, "http://") }

// checkProxying runs the probes through the proxy at base, with HTTP/1.1 and
// HTTP/2 clients (git negotiates HTTP/2 over TLS when the proxy offers it).
func checkProxying(t *testing.T, c certs, base string, p *probe) {
	for _, h2 := range []bool{false, true} {
		name := "http1.1"
		if h2 {
			name = "http2"
		}
		hc := c.client(h2)
		t.Run(name+"/forwarded headers", func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, base+"/probe/headers", nil)
			// A client's own X-Forwarded-For must not reach grasp: with it
			// anyone could pose as any address to per-IP limits.
			req.Header.Set("X-Forwarded-For", "203.0.113.9")
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var got map[string]string
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{false: 1, true: 2}[h2]; resp.ProtoMajor != want {
				t.Errorf("negotiated %s, want HTTP/%d", resp.Proto, want)
			}
			if got["x-forwarded-for"] != "127.0.0.1" {
				t.Errorf("upstream saw X-Forwarded-For %q, want the client's address 127.0.0.1 alone", got["x-forwarded-for"])
			}
			if got["x-forwarded-proto"] != "https" {
				t.Errorf("upstream saw X-Forwarded-Proto %q, want https", got["x-forwarded-proto"])
			}
			if !strings.HasPrefix(got["host"], "127.0.0.1") {
				t.Errorf("upstream saw Host %q, want the client's 127.0.0.1[:port]", got["host"])
			}
		})
		t.Run(name+"/request body streamed", func(t *testing.T) {
			id := name + "-up"
			pr, pw := io.Pipe()
			req, _ := http.NewRequest(http.MethodPost, base+"/probe/upload?id="+id, pr)
			req.ContentLength = -1 // chunked, as git sends a large push
			type result struct {
				body string
				err  error
			}
			done := make(chan result, 1)
			go func() {
				resp, err := hc.Do(req)
				if err != nil {
					done <- result{err: err}
					return
				}
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				done <- result{fmt.Sprintf("%d %s", resp.StatusCode, b), err}
			}()
			if _, err := pw.Write(make([]byte, firstChunk)); err != nil {
				t.Fatal(err)
			}
			select {
			case <-p.signal(id):
			case r := <-done:
				t.Fatalf("request ended before its body did: %q %v", r.body, r.err)
			case <-testwait.After(t):
				pw.CloseWithError(fmt.Errorf("test gave up"))
				t.Fatalf("the first %d bytes of a request body did not reach the upstream while the client kept the body open: the proxy buffers request bodies", firstChunk)
			}
			// More than nginx's default 1 MiB body cap.
			const rest = 2 << 20
			if _, err := pw.Write(make([]byte, rest)); err != nil {
				t.Fatal(err)
			}
			pw.Close()
			r := <-done
			if want := "200 " + strconv.Itoa(firstChunk+rest); r.err != nil || r.body != want {
				t.Fatalf("upload answered %q %v, want %q", r.body, r.err, want)
			}
		})
		t.Run(name+"/response streamed", func(t *testing.T) {
			id := name + "-down"
			ctx := testwait.Context(t)
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/probe/download?id="+id, nil)
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			first := make([]byte, 100)
			if _, err := io.ReadFull(resp.Body, first); err != nil {
				t.Fatal(err)
			}
			close(p.signal(id))
			rest, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if string(rest) != "rest" {
				t.Fatalf("the first 100 bytes of a response reached the client only after the upstream gave up (%q): the proxy buffers responses", rest)
			}
		})
	}
	t.Run("websocket upgrade", func(t *testing.T) {
		ctx := testwait.Context(t)
		ws, resp, err := websocket.Dial(ctx, strings.Replace(base, "https://", "wss://", 1)+"/probe/ws", &websocket.DialOptions{HTTPClient: c.client(false)})
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
		if err != nil {
			t.Fatalf("websocket through the proxy: %v", err)
		}
		defer ws.CloseNow()
		if err := ws.Write(ctx, websocket.MessageText, []byte("ping")); err != nil {
			t.Fatal(err)
		}
		_, b, err := ws.Read(ctx)
		if err != nil || string(b) != "echo ping" {
			t.Fatalf("websocket echo %q %v", b, err)
		}
	})
}
