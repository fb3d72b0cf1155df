package catchup

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/coder/websocket"

	"github.com/grasp-dev/grasp/core/config"
)

// HTTPDialer returns a Dialer whose websocket handshakes go through client
// (nil: the default client; e.g. one whose connections refuse internal
// addresses, core/netguard), reading frames of up to
// lim.MaxPeerMessageBytes (zero: config's default).
func HTTPDialer(client *http.Client, lim config.Limits) Dialer {
	readLimit := int64(lim.WithDefaults().MaxPeerMessageBytes)
	return func(ctx context.Context, url string) (Conn, error) {
		c, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{
			HTTPClient: client,
			HTTPHeader: http.Header{"User-Agent": {"grasp-sync"}},
		})
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
		if err != nil {
			return nil, err
		}
		c.SetReadLimit(readLimit)
		return wsConn{c}, nil
	}
}

// wsConn adapts a coder/websocket connection to Conn.
type wsConn struct{ c *websocket.Conn }

func (w wsConn) WriteMessage(ctx context.Context, b []byte) error {
	if err := w.c.Write(ctx, websocket.MessageText, b); err != nil {
		return fmt.Errorf("write message: %w", err)
	}
	return nil
}

func (w wsConn) ReadMessage(ctx context.Context, buf io.Writer) error {
	_, r, err := w.c.Reader(ctx)
	if err != nil {
		return fmt.Errorf("read message: %w", err)
	}
	if _, err := io.Copy(buf, r); err != nil {
		return fmt.Errorf("read message: %w", err)
	}
	return nil
}

func (w wsConn) Close() error { return w.c.Close(websocket.StatusNormalClosure, "") }
