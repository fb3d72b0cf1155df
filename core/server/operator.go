package server

import (
	"context"
	"fmt"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/nip86"
	"github.com/grasp-dev/grasp/core/purgatory"
)

// The operator's live administration over NIP-86 (issue 25 part 3): the
// lists live in core/nip86, shared through the side table; here each
// change, made on this instance or followed from another, is applied to
// what runs: a banned key's connections end and its held events leave
// purgatory, a blocked address's connections end, a banned event leaves
// purgatory, the NIP-11 name, description and icon change.

// assembleOperatorState loads the lists before the rules are built: they
// are the first link of the acceptance chain.
func (s *Server) assembleOperatorState() error {
	st, err := nip86.New(nip86.Options{KV: s.store.Side()}, s.env.Named("nip86"))
	if err != nil {
		return err
	}
	s.operator = st
	return nil
}

// assembleOperatorEndpoint mounts the NIP-86 endpoint on the relay and
// applies the lists to it; after the relay exists.
func (s *Server) assembleOperatorEndpoint(svc nip34.Service) error {
	admins := append([]string(nil), s.cfg.Relay.AdminPubkeys...)
	if s.cfg.Relay.Pubkey != "" {
		admins = append(admins, s.cfg.Relay.Pubkey)
	}
	h, err := nip86.NewHandler(nip86.HandlerOptions{State: s.operator, Admins: admins, Service: svc, Members: true}, s.env.Named("nip86"))
	if err != nil {
		return err
	}
	s.relay.HandleManagement(h)
	s.relay.HandleJoin(s.operator.Join)
	s.relay.BlockAddresses(s.operator.BlockedAddr)
	if err := s.relay.SetRelayInfo(s.operator.RelayInfo()); err != nil {
		return fmt.Errorf("apply the NIP-86 relay information: %w", err)
	}
	s.operator.OnChange(s.operatorChanged)
	return nil
}

// operatorChanged applies one change of the lists to live connections and
// held events. It runs on every instance (another's change arrives through
// Reload); purgatory is shared, so removing what another instance already
// removed finds nothing.
func (s *Server) operatorChanged(c nip86.Change) {
	switch {
	case c.List == nip86.ListBannedPubkeys && c.Present:
		n := s.relay.CloseKeys([]string{c.Item}, "blocked: this key is banned on this relay")
		// its held events leave purgatory, and a held announcement's
		// empty bare repo goes with it (hosting's retire)
		held := s.hosting.Evict(context.Background(), func(e *purgatory.Entry) bool { return e.Event.PubKey == c.Item }, "its key was banned")
		s.log.Info("ban applied", "pubkey", nip34.Npub(c.Item), "connections_closed", n, "held_removed", held)
	case c.List == nip86.ListBannedEvents && c.Present:
		s.hosting.Evict(context.Background(), func(e *purgatory.Entry) bool { return e.Event.ID == c.Item }, "the event was banned")
	case c.List == nip86.ListBlockedIPs && c.Present:
		n := s.relay.CloseRemotes(s.operator.BlockedAddr, "blocked: your address is blocked on this relay")
		s.log.Info("address block applied", "addr", c.Item, "connections_closed", n)
	case c.List == nip86.ListMembers:
		// GRASP-08's reader rule takes the new list at once; a removed
		// member's subscriptions and sessions carrying private data end
		s.vis.SetMembers(s.members(s.current()))
		s.log.Info("GRASP-08 members changed over NIP-86", "pubkey", nip34.Npub(c.Item), "member", c.Present)
	case c.List == nip86.ListRelayInfo:
		if err := s.relay.SetRelayInfo(s.operator.RelayInfo()); err != nil {
			s.log.Error("applying the NIP-86 relay information", "error", err)
		}
	}
}
