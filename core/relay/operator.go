package relay

import (
	"net/http"
	"sync/atomic"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/clientip"
	"github.com/grasp-dev/grasp/core/nip86"
	"github.com/grasp-dev/grasp/core/outcome"
	"github.com/grasp-dev/grasp/core/refusals"
)

// What the operator changes while the relay runs (NIP-86, core/nip86;
// issue 25 part 3): the management endpoint itself, the client addresses
// refused on every path, and the NIP-11 name, description and icon.

// operatorHooks are set once by the server and read on every request.
type operatorHooks struct {
	management atomic.Pointer[http.Handler]
	blocked    atomic.Pointer[func(string) bool]
	nip11      atomic.Pointer[[]byte] // nil: the document built at start
	join       atomic.Pointer[func(*nostr.Event) outcome.Result]
}

// HandleJoin answers NIP-43 join requests (kind 28934, nip86.State.Join)
// from clients; without it they are refused like every ephemeral event.
func (s *Server) HandleJoin(fn func(evt *nostr.Event) outcome.Result) { s.op.join.Store(&fn) }

// HandleManagement mounts the NIP-86 endpoint: a POST of
// application/nostr+json+rpc to the relay's own URL goes to h.
func (s *Server) HandleManagement(h http.Handler) { s.op.management.Store(&h) }

// BlockAddresses makes every request whose client address blocked says yes
// to answer 403 "blocked:" on every path (websocket, git, pages, NIP-11).
func (s *Server) BlockAddresses(blocked func(addr string) bool) { s.op.blocked.Store(&blocked) }

// SetRelayInfo replaces NIP-11's name, description and icon ("" keeps the
// configured one) and rebuilds the document at once.
func (s *Server) SetRelayInfo(name, description, icon string) error {
	s.infoMu.Lock()
	defer s.infoMu.Unlock()
	if name == "" {
		name = s.configured.name
	}
	if description == "" {
		description = s.configured.description
	}
	if icon == "" {
		icon = s.configured.icon
	}
	s.opts.Name, s.opts.Description, s.opts.IconURL = name, description, icon
	doc, err := s.buildNIP11()
	if err != nil {
		return err
	}
	s.op.nip11.Store(&doc)
	return nil
}

// nip11Doc is the NIP-11 document in force.
func (s *Server) nip11Doc() []byte {
	if p := s.op.nip11.Load(); p != nil {
		return *p
	}
	return s.nip11
}

// refusedAddr reports whether r comes from a blocked client address.
func (s *Server) refusedAddr(r *http.Request) bool {
	p := s.op.blocked.Load()
	if p == nil {
		return false
	}
	addr := clientip.Peer(r)
	if s.opts.ClientIP != nil {
		addr = s.opts.ClientIP(r)
	}
	if (*p)(addr) {
		s.opts.RefusalLog.Count(addr, refusals.BlockedAddress)
		return true
	}
	return false
}

// management is the NIP-86 endpoint for r, if r is a call to it.
func (s *Server) management(r *http.Request, rest string) http.Handler {
	p := s.op.management.Load()
	if p == nil || rest != "/" || r.Method != http.MethodPost || !nip86.Is(r) {
		return nil
	}
	return *p
}

// CloseKeys ends, at once, the connections authenticated as one of keys
// (an operator's ban): each subscription gets CLOSED with reason.
func (s *Server) CloseKeys(keys []string, reason string) int { return s.gate.CloseKeys(keys, reason) }

// CloseRemotes ends the connections from client addresses match names.
func (s *Server) CloseRemotes(match func(addr string) bool, reason string) int {
	return s.gate.CloseRemotes(match, reason)
}
