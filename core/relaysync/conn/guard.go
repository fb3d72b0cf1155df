package conn

import (
	"context"
	"net/http"

	"github.com/coder/websocket"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/netguard"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/relaysync/catchup"
)

// GuardedDialers returns the dialers sync uses. Relay URLs come from anyone's
// announcements, so unless allowPrivate is set they may not reach internal
// addresses (core/netguard checks the address actually connected to). The
// trusted relays (the operator's bootstrap relays) are dialled as given.
// lim.MaxPeerMessageBytes bounds a catch-up frame (the pool bounds the live
// connection's).
func GuardedDialers(allowPrivate bool, trusted []string, lim config.Limits) (Dialer, catchup.Dialer) {
	if allowPrivate {
		return HTTPDialer(nil), catchup.HTTPDialer(nil, lim)
	}
	ok := map[string]bool{}
	for _, u := range trusted {
		if n, err := nip34.NormalizeRelayURL(u); err == nil {
			ok[n] = true
		}
	}
	guarded := netguard.HTTPClient()
	pick := func(url string) *http.Client {
		if n, err := nip34.NormalizeRelayURL(url); err == nil && ok[n] {
			return nil
		}
		return guarded
	}
	return func(ctx context.Context, url string) (*websocket.Conn, error) {
			return HTTPDialer(pick(url))(ctx, url)
		}, func(ctx context.Context, url string) (catchup.Conn, error) {
			return catchup.HTTPDialer(pick(url), lim)(ctx, url)
		}
}
