package clientip

import "context"

type ctxKey struct{}

// NewContext returns ctx naming addr (what Of named) as the client a piece
// of work is done for. The gate names the client of every stored query it
// runs, so the store can bound each client's share (core/store, audit
// 2026-11b F25); work without a client (the server's own reads) names none.
func NewContext(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, ctxKey{}, addr)
}

// FromContext is the client address NewContext put in ctx; ok is false for
// work done for no client.
func FromContext(ctx context.Context) (addr string, ok bool) {
	addr, ok = ctx.Value(ctxKey{}).(string)
	return addr, ok
}
