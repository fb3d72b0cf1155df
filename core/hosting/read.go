package hosting

import (
	"context"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
)

// query reads the store; a failed read is logged and reads as nothing, so
// an effect skips what it cannot see instead of acting on half of it.
func (h *Hosting) query(ctx context.Context, f nostr.Filter) []*nostr.Event {
	ch, err := h.events.QueryEvents(ctx, f)
	if err != nil {
		h.log.Error("query store", "error", err)
		return nil
	}
	var out []*nostr.Event
	for evt := range ch {
		out = append(out, evt)
	}
	return out
}

// has reports whether every oid is present in repo.
func (o *op) has(repo nip34.RepoRef, oids []string) bool {
	m, err := o.repos.HasObjects(o.ctx, repo, oids)
	return err == nil && allTrue(m, oids)
}

// stateRefs returns a state's refs/heads/* and refs/tags/* entries (peeled
// "^{}" entries included, so their objects are checked too) and its HEAD.
func stateRefs(st nip34.State) (map[string]string, string) {
	refs := map[string]string{}
	for name, oid := range st.Refs {
		if strings.HasPrefix(name, "refs/heads/") || strings.HasPrefix(name, "refs/tags/") {
			refs[name] = oid
		}
	}
	return refs, st.HEAD
}

func values(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func allTrue(m map[string]bool, keys []string) bool {
	for _, k := range keys {
		if !m[k] {
			return false
		}
	}
	return true
}

func sameRefs(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func ref(owner, d string) nip34.RepoRef { return nip34.RepoRef{Pubkey: owner, Identifier: d} }
