package store

import (
	"context"

	"github.com/grasp-dev/grasp/core/nocontent"
)

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
	return nocontent.With(ctx) // core/nocontent owns the mark
}

// withoutContent reports a context marked by WithoutContent.
func withoutContent(ctx context.Context) bool {
	return nocontent.Asked(ctx)
}
