package deploy

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

// perIPCap is the max_connections_per_ip the proxy suite's grasp runs
// with (startGrasp), small enough to reach from one test.
const perIPCap = 6

// fromAddr is an HTTP client whose connections leave from the loopback
// address src (127.0.0.0/8 is all loopback on Linux), so one test can be
// several clients.
func fromAddr(c certs, src string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	return &http.Client{Transport: &http.Transport{
		DialContext:     d.DialContext,
		TLSClientConfig: &tls.Config{RootCAs: c.Pool, MinVersion: tls.VersionTLS12},
		TLSNextProto:    map[string]func(string, *tls.Conn) http.RoundTripper{},
	}}
}

// dialFrom opens a websocket to url as client src, with X-Forwarded-For
// set to spoof when it is not empty; a refused upgrade returns its status.
func dialFrom(ctx context.Context, t *testing.T, c certs, url, src, spoof string) (*websocket.Conn, int) {
	t.Helper()
	opts := &websocket.DialOptions{HTTPClient: fromAddr(c, src), HTTPHeader: http.Header{}}
	if spoof != "" {
		opts.HTTPHeader.Set("X-Forwarded-For", spoof)
	}
	ws, resp, err := websocket.Dial(ctx, url, opts)
	if err != nil {
		if resp == nil {
			t.Fatalf("dial %s from %s: %v", url, src, err)
		}
		return nil, resp.StatusCode
	}
	return ws, http.StatusSwitchingProtocols
}

// checkClientAddresses is issue 18 part 1's check of client addresses:
// through the proxy (which grasp trusts, server.trusted_proxies) the
// per-IP connection cap counts each client, not the proxy, and a client
// cannot pick its address with X-Forwarded-For, neither through the proxy
// nor straight to grasp (direct, an untrusted peer's address).
func checkClientAddresses(t *testing.T, c certs, fp *frontProxy, g *graspProc) {
	ctx := context.Background()
	var open []*websocket.Conn
	defer func() {
		for _, ws := range open {
			ws.Close(websocket.StatusNormalClosure, "")
		}
	}()
	// client A fills its cap, through the proxy, with a different
	// spoofed address on each connection: the proxy's view wins
	for i := 0; i < perIPCap; i++ {
		ws, code := dialFrom(ctx, t, c, fp.Relay, "127.0.0.2", "198.51.100."+string(rune('1'+i)))
		if ws == nil {
			t.Fatalf("connection %d of client A through the proxy refused: %d", i+1, code)
		}
		open = append(open, ws)
	}
	if ws, code := dialFrom(ctx, t, c, fp.Relay, "127.0.0.2", "198.51.100.99"); ws != nil || code != http.StatusTooManyRequests {
		if ws != nil {
			open = append(open, ws)
		}
		t.Fatalf("client A over its cap through the proxy got %d, want 429: the cap must count A, whatever its X-Forwarded-For says", code)
	}
	// client B, behind the same proxy, is another address
	ws, code := dialFrom(ctx, t, c, fp.Relay, "127.0.0.3", "")
	if ws == nil {
		t.Fatalf("client B through the proxy refused (%d): per-IP limits see the proxy, not the client", code)
	}
	open = append(open, ws)
	if !strings.Contains(g.scrape(t), `grasp_gate_limit_rejections_total{kind="connections_ip"} 1`) {
		t.Errorf("grasp counted no per-address connection refusal")
	}

	// straight to grasp from an untrusted peer, X-Forwarded-For is ignored
	direct := "ws://" + g.Addr + "/"
	for i := 0; i < perIPCap; i++ {
		ws, code := dialFrom(ctx, t, c, direct, "127.0.0.4", "203.0.113."+string(rune('1'+i)))
		if ws == nil {
			t.Fatalf("direct connection %d refused: %d", i+1, code)
		}
		open = append(open, ws)
	}
	if ws, code := dialFrom(ctx, t, c, direct, "127.0.0.4", "203.0.113.99"); ws != nil || code != http.StatusTooManyRequests {
		if ws != nil {
			open = append(open, ws)
		}
		t.Fatalf("an untrusted peer over its cap got %d with a spoofed X-Forwarded-For, want 429", code)
	}
}
