// Package nocontent owns the mark a reader puts on a query's context to say
// it needs no event contents: ids, authors, kinds, timestamps and tags only.
// The stores honour it (core/store: the badger backend never reads or
// unpacks a content record, the postgres backend never reads the column);
// the pure deciders (core/policy, core/visibility) set it on their lookups
// without importing a store. Events read with it carry an empty Content:
// they must never be served, stored or checked against a signature, since
// their ids no longer hash what they carry.
//
// It imports nothing of ours and decides nothing.
package nocontent

import "context"

type key struct{}

// With marks ctx: queries run with it read no event content.
func With(ctx context.Context) context.Context {
	return context.WithValue(ctx, key{}, true)
}

// Asked reports whether ctx was marked by With.
func Asked(ctx context.Context) bool {
	v, _ := ctx.Value(key{}).(bool)
	return v
}
