package deploy

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/coder/websocket"
	"github.com/grasp-dev/grasp/internal/testkit"
	"github.com/nbd-wtf/go-nostr"
)

// relayConn speaks NIP-01 on one websocket (go-nostr envelopes over
// coder/websocket, so the handshake goes through a client that trusts the
// throwaway CA).
type relayConn struct {
	c   *websocket.Conn
	sub int
}

func dialRelay(ctx context.Context, url string, hc *http.Client) (*relayConn, error) {
	c, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: hc})
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", url, err)
	}
	c.SetReadLimit(4 << 20)
	return &relayConn{c: c}, nil
}

func (r *relayConn) close() { r.c.Close(websocket.StatusNormalClosure, "") }

func (r *relayConn) send(ctx context.Context, env nostr.Envelope) error {
	b, err := env.MarshalJSON()
	if err != nil {
		return err
	}
	return r.c.Write(ctx, websocket.MessageText, b)
}

func (r *relayConn) next(ctx context.Context) (nostr.Envelope, error) {
	for {
		_, b, err := r.c.Read(ctx)
		if err != nil {
			return nil, err
		}
		if env, err := nostr.NewMessageParser().ParseMessage(string(b)); err == nil && env != nil {
			return env, nil
		}
	}
}

// publish sends evt and returns its OK.
func (r *relayConn) publish(ctx context.Context, evt *nostr.Event) (bool, string, error) {
	if err := r.send(ctx, &nostr.EventEnvelope{Event: *evt}); err != nil {
		return false, "", err
	}
	for {
		env, err := r.next(ctx)
		if err != nil {
			return false, "", fmt.Errorf("wait for the OK of kind %d: %w", evt.Kind, err)
		}
		if ok, isOK := env.(*nostr.OKEnvelope); isOK && ok.EventID == evt.ID {
			return ok.OK, ok.Reason, nil
		}
	}
}

// subscribe opens a subscription and returns the stored events up to EOSE;
// the subscription stays open for live events (read them with next).
func (r *relayConn) subscribe(ctx context.Context, f nostr.Filter) (string, []nostr.Event, error) {
	r.sub++
	id := fmt.Sprintf("s%d", r.sub)
	if err := r.send(ctx, &nostr.ReqEnvelope{SubscriptionID: id, Filters: nostr.Filters{f}}); err != nil {
		return "", nil, err
	}
	var out []nostr.Event
	for {
		env, err := r.next(ctx)
		if err != nil {
			return "", nil, fmt.Errorf("read subscription %s: %w", id, err)
		}
		switch e := env.(type) {
		case *nostr.EventEnvelope:
			if e.SubscriptionID != nil && *e.SubscriptionID == id {
				out = append(out, e.Event)
			}
		case *nostr.EOSEEnvelope:
			if string(*e) == id {
				return id, out, nil
			}
		case *nostr.ClosedEnvelope:
			if e.SubscriptionID == id {
				return "", nil, fmt.Errorf("subscription %s closed: %s", id, e.Reason)
			}
		}
	}
}

// key is a throwaway Nostr identity.
type key struct{ testkit.Key }

func newKey(t testing.TB) key { return key{testkit.NewKey(t)} }

func (k key) sign(t testing.TB, kind int, tags nostr.Tags, content string) *nostr.Event {
	t.Helper()
	return k.Sign(t, &nostr.Event{Kind: kind, Tags: tags, Content: content, CreatedAt: nostr.Now()})
}

// announcement lists the service in both clone and relays, as ngit does.
func (k key) announcement(t testing.TB, httpURL, relayURL, d string) *nostr.Event {
	return k.sign(t, 30617, nostr.Tags{
		{"d", d}, {"name", d},
		{"clone", cloneURL(httpURL, k, d)},
		{"relays", relayURL},
	}, "")
}

// state says main is at sha and HEAD points to main.
func (k key) state(t testing.TB, d, sha string) *nostr.Event {
	return k.sign(t, 30618, nostr.Tags{
		{"d", d}, {"refs/heads/main", sha}, {"HEAD", "ref: refs/heads/main"},
	}, "")
}

func cloneURL(httpURL string, k key, d string) string {
	return fmt.Sprintf("%s/%s/%s.git", httpURL, k.Npub, d)
}
