package nip86

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/outcome"
	"github.com/grasp-dev/grasp/core/policy"
)

// KV is the side table the lists live in (store.Side satisfies it): in the
// store's database, or on PostgreSQL shared by every instance.
type KV interface {
	Get(ctx context.Context, bucket, key string) ([]byte, bool, error)
	Put(ctx context.Context, bucket, key string, val []byte, ttl time.Duration) error
	Delete(ctx context.Context, bucket, key string) error
	Scan(ctx context.Context, bucket string, fn func(key string, val []byte, expires time.Time) error) error
}

// Bucket is the side-table bucket of the operator's lists; another
// instance's change to it is reported to Reload.
const Bucket = "nip86"

// The lists, as key prefixes in Bucket ("<list>:<item>").
const (
	ListBannedPubkeys   = "bannedpubkey"
	ListAllowedPubkeys  = "allowedpubkey"
	ListBannedEvents    = "bannedevent"
	ListAllowedEvents   = "allowedevent"
	ListAllowedKinds    = "allowedkind"
	ListDisallowedKinds = "disallowedkind"
	ListBlockedIPs      = "blockedip"
	ListMembers         = "member"
	ListClaims          = "claim"
	ListRelayInfo       = "relay" // items: name, description, icon
)

var lists = []string{ListBannedPubkeys, ListAllowedPubkeys, ListBannedEvents, ListAllowedEvents,
	ListAllowedKinds, ListDisallowedKinds, ListBlockedIPs, ListMembers, ListClaims, ListRelayInfo}

// maxEntries bounds each list: the operator's own calls fill them, but a
// leaked admin key must not grow memory without end.
const maxEntries = 100_000

// Entry is one item of a list with why and by whom it was put there.
type Entry struct {
	Item   string `json:"item"`
	Reason string `json:"reason,omitempty"`
	By     string `json:"by,omitempty"` // the operator key that made the call
	At     int64  `json:"at"`
}

// Change names one item that changed (added or removed), here or on
// another instance; the server applies its effect to live connections.
type Change struct {
	List, Item string
	Present    bool // false: removed
}

// Options configure a State.
type Options struct {
	KV KV // required
}

// State is the operator's live lists (NIP-86): who and what is banned or
// allowed, which kinds are taken, which client addresses are blocked, the
// GRASP-08 members added at run time, the invite claims and the relay's
// name, description and icon. Every change is written to the side table
// before it is answered (so it survives a restart and, on PostgreSQL, is
// shared), kept in memory for the checks on every event, and reported to
// the OnChange hooks. It never touches connections, purgatory or the store
// itself: the server's hooks do.
type State struct {
	kv  KV
	log hclog.Logger
	clk clock.Clock

	mu    sync.RWMutex
	lists map[string]map[string]Entry

	hookMu sync.RWMutex
	hooks  []func(Change)
}

// New builds a State and loads the lists.
func New(o Options, e env.Env) (*State, error) {
	if o.KV == nil {
		return nil, fmt.Errorf("nip86: KV is required")
	}
	e = e.OrDefaults()
	s := &State{kv: o.KV, log: e.Log, clk: e.Clock}
	if err := s.load(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *State) load() error {
	next := map[string]map[string]Entry{}
	for _, l := range lists {
		next[l] = map[string]Entry{}
	}
	err := s.kv.Scan(context.Background(), Bucket, func(key string, val []byte, _ time.Time) error {
		list, item, ok := strings.Cut(key, ":")
		if !ok || next[list] == nil {
			return nil
		}
		var e Entry
		if json.Unmarshal(val, &e) != nil {
			e = Entry{Item: item}
		}
		e.Item = item
		next[list][item] = e
		return nil
	})
	if err != nil {
		return fmt.Errorf("nip86: load the operator's lists: %w", err)
	}
	s.mu.Lock()
	s.lists = next
	s.mu.Unlock()
	return nil
}

// OnChange registers fn to hear every change, made here or (through
// Reload) on another instance.
func (s *State) OnChange(fn func(Change)) {
	s.hookMu.Lock()
	s.hooks = append(s.hooks, fn)
	s.hookMu.Unlock()
}

func (s *State) changed(c Change) {
	s.hookMu.RLock()
	hooks := slices.Clone(s.hooks)
	s.hookMu.RUnlock()
	for _, fn := range hooks {
		fn(c)
	}
}

// Put adds item to list (replacing its reason), durably, then tells the
// hooks.
func (s *State) Put(list, item, reason, by string) error {
	s.mu.RLock()
	m, known := s.lists[list]
	n := len(m)
	_, have := m[item]
	s.mu.RUnlock()
	if !known {
		return fmt.Errorf("nip86: unknown list %q", list)
	}
	if !have && n >= maxEntries {
		return outcome.Errorf(outcome.Error, "the %s list holds %d entries, the most it may", list, maxEntries)
	}
	e := Entry{Item: item, Reason: reason, By: by, At: s.clk.Now().Unix()}
	val, _ := json.Marshal(e)
	if err := s.kv.Put(context.Background(), Bucket, list+":"+item, val, 0); err != nil {
		return outcome.Errorf(outcome.Error, "could not save the change: %w", err)
	}
	s.mu.Lock()
	s.lists[list][item] = e
	s.mu.Unlock()
	s.changed(Change{List: list, Item: item, Present: true})
	return nil
}

// Remove takes item off list, durably, then tells the hooks. Removing an
// absent item changes nothing and is not an error.
func (s *State) Remove(list, item string) error {
	s.mu.RLock()
	_, known := s.lists[list]
	s.mu.RUnlock()
	if !known {
		return fmt.Errorf("nip86: unknown list %q", list)
	}
	if err := s.kv.Delete(context.Background(), Bucket, list+":"+item); err != nil {
		return outcome.Errorf(outcome.Error, "could not save the change: %w", err)
	}
	s.mu.Lock()
	_, had := s.lists[list][item]
	delete(s.lists[list], item)
	s.mu.Unlock()
	if had {
		s.changed(Change{List: list, Item: item, Present: false})
	}
	return nil
}

// Reload brings one key of Bucket in line with the side table after
// another instance changed it (the postgres store's notification), and
// tells the hooks what changed.
func (s *State) Reload(key string) error {
	list, item, ok := strings.Cut(key, ":")
	if !ok {
		return nil
	}
	val, present, err := s.kv.Get(context.Background(), Bucket, key)
	if err != nil {
		return fmt.Errorf("nip86: reload %s: %w", key, err)
	}
	s.mu.Lock()
	m := s.lists[list]
	if m == nil {
		s.mu.Unlock()
		return nil
	}
	_, had := m[item]
	if present {
		var e Entry
		if json.Unmarshal(val, &e) != nil {
			e = Entry{}
		}
		e.Item = item
		m[item] = e
	} else {
		delete(m, item)
	}
	s.mu.Unlock()
	if present || had {
		s.changed(Change{List: list, Item: item, Present: present})
	}
	return nil
}

// Resync reloads every list (after a lost notification connection) and
// tells the hooks about every item that differs.
func (s *State) Resync() error {
	s.mu.RLock()
	prev := map[string]map[string]Entry{}
	for l, m := range s.lists {
		prev[l] = cloneEntries(m)
	}
	s.mu.RUnlock()
	if err := s.load(); err != nil {
		return err
	}
	s.mu.RLock()
	var changes []Change
	for l, m := range s.lists {
		for item := range m {
			if _, ok := prev[l][item]; !ok {
				changes = append(changes, Change{List: l, Item: item, Present: true})
			}
		}
		for item := range prev[l] {
			if _, ok := m[item]; !ok {
				changes = append(changes, Change{List: l, Item: item, Present: false})
			}
		}
	}
	s.mu.RUnlock()
	for _, c := range changes {
		s.changed(c)
	}
	return nil
}

func cloneEntries(m map[string]Entry) map[string]Entry {
	out := make(map[string]Entry, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Entries lists list's items, sorted.
func (s *State) Entries(list string) []Entry {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Entry, 0, len(s.lists[list]))
	for _, e := range s.lists[list] {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Item < out[j].Item })
	return out
}

// Has reports whether item is on list.
func (s *State) Has(list, item string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ok := s.lists[list][item]
	return ok
}

func (s *State) size(list string) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.lists[list])
}

// Members are the GRASP-08 members added over NIP-86.
func (s *State) Members() []string {
	var out []string
	for _, e := range s.Entries(ListMembers) {
		out = append(out, e.Item)
	}
	return out
}

// RelayInfo is the name, description and icon set over NIP-86 ("" where
// none was: the configuration's then stands).
func (s *State) RelayInfo() (name, description, icon string) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	m := s.lists[ListRelayInfo]
	return m["name"].Reason, m["description"].Reason, m["icon"].Reason
}

// BannedPubkey reports whether pk is banned, and why.
func (s *State) BannedPubkey(pk string) (string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.lists[ListBannedPubkeys][pk]
	return e.Reason, ok
}

// Banned reports whether evt is banned here, by its id or its author:
// the reader rule withholds it from everyone but the members
// (core/visibility, Options.Banned), as acceptance refuses it (Accept).
func (s *State) Banned(evt *nostr.Event) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, id := s.lists[ListBannedEvents][evt.ID]
	_, pk := s.lists[ListBannedPubkeys][evt.PubKey]
	return id || pk
}

// Bans lists the banned event ids and pubkeys.
func (s *State) Bans() (ids, pubkeys []string) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for id := range s.lists[ListBannedEvents] {
		ids = append(ids, id)
	}
	for pk := range s.lists[ListBannedPubkeys] {
		pubkeys = append(pubkeys, pk)
	}
	return ids, pubkeys
}

// BannedEvent reports whether event id is banned, and why.
func (s *State) BannedEvent(id string) (string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.lists[ListBannedEvents][id]
	return e.Reason, ok
}

// BlockedAddr reports whether a client address (the key clientip counts it
// by, or a bare address) falls in a blocked address or network.
func (s *State) BlockedAddr(addr string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(s.lists[ListBlockedIPs]) == 0 || addr == "" {
		return false
	}
	if _, ok := s.lists[ListBlockedIPs][addr]; ok {
		return true
	}
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.SplitN(addr, "/", 2)[0], "]"))
	if err != nil {
		return false
	}
	for item := range s.lists[ListBlockedIPs] {
		if p, err := netip.ParsePrefix(item); err == nil && p.Contains(a) {
			return true
		}
	}
	return false
}

// Accept is the operator's lists as the first link of the acceptance chain
// (policy.Options.Pre): it runs for every event whatever its source
// (client, sync, a release from purgatory), so a ban also stops a banned
// key's events arriving through sync and keeps a held one from being
// released.
func (s *State) Accept(_ context.Context, evt *nostr.Event, meta policy.Meta) policy.Verdict {
	if why, ok := s.BannedEvent(evt.ID); ok {
		return refuse("blocked: this event is banned on this relay%s", because(why))
	}
	if why, ok := s.BannedPubkey(evt.PubKey); ok {
		return refuse("blocked: %s is banned on this relay%s", nip34.Npub(evt.PubKey), because(why))
	}
	if meta.Source == policy.SourceClient && s.BlockedAddr(meta.Remote) {
		return refuse("blocked: your address is blocked on this relay")
	}
	allowedEvent := s.Has(ListAllowedEvents, evt.ID)
	if !allowedEvent && s.size(ListAllowedPubkeys) > 0 && !s.Has(ListAllowedPubkeys, evt.PubKey) {
		return refuse("restricted: %s is not on this relay's allow list", nip34.Npub(evt.PubKey))
	}
	kind := strconv.Itoa(evt.Kind)
	if s.Has(ListDisallowedKinds, kind) {
		return refuse("blocked: kind %d is not accepted on this relay", evt.Kind)
	}
	if !allowedEvent && s.size(ListAllowedKinds) > 0 && !s.Has(ListAllowedKinds, kind) {
		return refuse("blocked: kind %d is not on this relay's list of accepted kinds", evt.Kind)
	}
	return policy.Verdict{Action: policy.Accept}
}

func refuse(format string, args ...any) policy.Verdict {
	return policy.Verdict{Action: policy.Reject, Msg: fmt.Sprintf(format, args...)}
}

func because(why string) string {
	if why == "" {
		return ""
	}
	return " (" + why + ")"
}
