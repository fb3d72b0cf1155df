package store

import "context"

// noContentKey marks a query context whose reader needs no event content.
type noContentKey struct{}

// WithoutContent marks the queries run with ctx as reading no event
// content: ids, authors, kinds, timestamps and tags only. Every event then
// comes with an empty Content: the badger backend never reads or unpacks a
// content record, the postgres backend never reads the column. It is
// for readers that walk the whole store and keep a few fields of each event
// (sync's start-up replay of every root event and reply): at a million
// events, unpacking every content cost ~3 GB of transient allocation
// (issue 27 part 2). Events read this way must never be served, stored or
// checked against a signature: their ids no longer hash what they carry.
func WithoutContent(ctx context.Context) context.Context {
	return context.WithValue(ctx, noContentKey{}, true)
}

// withoutContent reports a context marked by WithoutContent.
func withoutContent(ctx context.Context) bool {
	v, _ := ctx.Value(noContentKey{}).(bool)
	return v
}
