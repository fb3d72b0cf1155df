package nip86

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/nip98"
	"github.com/grasp-dev/grasp/core/outcome"
)

// ContentType marks a NIP-86 call: a POST with it to the relay's URL.
const ContentType = "application/nostr+json+rpc"

// Bounds on one call.
const (
	maxBody        = 64 << 10
	maxNameLen     = 256
	maxDescription = 4096
	maxReason      = 1024
)

// HandlerOptions configure the RPC endpoint.
type HandlerOptions struct {
	State *State
	// Admins are the operator's keys (hex): relay.pubkey and
	// relay.admin_pubkeys. No key, no call is ever authorised.
	Admins []string
	// Service names the relay's URLs a token's u may name (every public
	// URL, in its http(s) and ws(s) forms).
	Service nip34.Service
	// Members offers the GRASP-08 member and claim methods: set only when
	// the server applies the member list to its reader rule.
	Members bool
}

// Handler serves NIP-86 over HTTP on the public listener: a POST of
// ContentType to the relay's URL, authorised by a NIP-98 token of an
// operator key whose payload tag is the body's SHA-256. Every change is
// written before it is answered and logged at info with the key that made
// it.
type Handler struct {
	o      HandlerOptions
	admins map[string]bool
	log    hclog.Logger
	clk    clock.Clock
}

// NewHandler builds the endpoint.
func NewHandler(o HandlerOptions, e env.Env) (*Handler, error) {
	if o.State == nil {
		return nil, fmt.Errorf("nip86: State is required")
	}
	e = e.OrDefaults()
	h := &Handler{o: o, admins: map[string]bool{}, log: e.Log, clk: e.Clock}
	for _, a := range o.Admins {
		if nip34.IsHex64(a) {
			h.admins[a] = true
		}
	}
	return h, nil
}

// Is reports whether r is a NIP-86 call (the relay routes it here).
func Is(r *http.Request) bool {
	ct, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";")
	return strings.EqualFold(strings.TrimSpace(ct), ContentType)
}

type request struct {
	Method string            `json:"method"`
	Params []json.RawMessage `json:"params"`
}

type response struct {
	Result any    `json:"result,omitempty"`
	Error  string `json:"error,omitempty"`
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST, OPTIONS")
		reply(w, http.StatusMethodNotAllowed, response{Error: "invalid: NIP-86 calls are POSTs"})
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil || len(body) > maxBody {
		reply(w, http.StatusRequestEntityTooLarge, response{Error: fmt.Sprintf("invalid: a call is at most %d bytes", maxBody)})
		return
	}
	who, why := h.authorise(r, body)
	if who == "" {
		w.Header().Set("WWW-Authenticate", "Nostr")
		reply(w, http.StatusUnauthorized, response{Error: "auth-required: " + why})
		return
	}
	if !h.admins[who] {
		h.log.Info("NIP-86 call refused: not an operator key", "pubkey", nip34.Npub(who))
		reply(w, http.StatusForbidden, response{Error: "restricted: " + nip34.Npub(who) + " is not an operator key of this relay"})
		return
	}
	var req request
	if err := json.Unmarshal(body, &req); err != nil || req.Method == "" {
		reply(w, http.StatusBadRequest, response{Error: "invalid: want {\"method\": ..., \"params\": [...]}"})
		return
	}
	result, err := h.call(req, who)
	if err != nil {
		// The server's own failures are 500; everything else is the
		// caller's request.
		status := http.StatusBadRequest
		if r, ok := outcome.Of(err); ok && r.Kind == outcome.Error {
			status = http.StatusInternalServerError
		}
		h.log.Info("NIP-86 call failed", "method", req.Method, "by", nip34.Npub(who), "error", err)
		reply(w, status, response{Error: err.Error()})
		return
	}
	if !strings.HasPrefix(req.Method, "list") && req.Method != "supportedmethods" {
		h.log.Info("NIP-86 change", "method", req.Method, "params", paramsText(req.Params), "by", nip34.Npub(who))
	}
	reply(w, http.StatusOK, response{Result: result})
}

func reply(w http.ResponseWriter, status int, v response) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func paramsText(ps []json.RawMessage) string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteString(" ")
		}
		s := string(p)
		if len(s) > 200 {
			s = s[:200] + "…"
		}
		b.WriteString(s)
	}
	return b.String()
}

// authorise checks the NIP-98 token with the one reading of it
// (nip98.VerifyHeader: kind 27235, within a minute of now, the signature),
// naming method POST, u this relay (any of its URLs, http or ws form) and
// payload the body's SHA-256. It returns the signer, or "" and why not.
func (h *Handler) authorise(r *http.Request, body []byte) (string, string) {
	sum := sha256.Sum256(body)
	evt, err := nip98.VerifyHeader(r.Header.Get("Authorization"), h.clk.Now(), func(evt *nostr.Event) error {
		if m := evt.Tags.Find("method"); m == nil || !strings.EqualFold(m[1], http.MethodPost) {
			return errors.New("the NIP-98 token's method must be POST")
		}
		if u := evt.Tags.Find("u"); u == nil || !h.namesRelay(u[1]) {
			return errors.New("the NIP-98 token's u must be this relay's URL")
		}
		if p := evt.Tags.Find("payload"); p == nil || !strings.EqualFold(p[1], hex.EncodeToString(sum[:])) {
			return errors.New("the NIP-98 token's payload must be the SHA-256 of the body")
		}
		return nil
	})
	if err != nil {
		return "", err.Error()
	}
	return evt.PubKey, ""
}

// namesRelay reports whether u is one of this relay's URLs, in its ws(s)
// form or the http(s) form NIP-86 clients derive from it.
func (h *Handler) namesRelay(u string) bool {
	if h.o.Service.Host == "" {
		return false
	}
	p, err := url.Parse(strings.TrimSpace(u))
	if err != nil {
		return false
	}
	switch strings.ToLower(p.Scheme) {
	case "http":
		p.Scheme = "ws"
	case "https":
		p.Scheme = "wss"
	}
	return h.o.Service.ListsRelay(p.String())
}

// Methods are the NIP-86 methods served, in supportedmethods' order; the
// GRASP-08 member methods and nips#2408's claim methods are among them.
var Methods = []string{
	"supportedmethods",
	"banpubkey", "unbanpubkey", "listbannedpubkeys",
	"allowpubkey", "unallowpubkey", "listallowedpubkeys",
	"banevent", "unbanevent", "listbannedevents",
	"allowevent", "unallowevent", "listallowedevents",
	"allowkind", "disallowkind", "listallowedkinds", "listdisallowedkinds",
	"blockip", "unblockip", "listblockedips",
	"changerelayname", "changerelaydescription", "changerelayicon",
}

// The GRASP-08 member methods (addmember, removemember, listmembers) and
// nips#2408's claims (createclaim, deleteclaim, listclaims, joined by a
// NIP-43 kind-28934 request, join.go) are offered only where the server
// applies the member list to GRASP-08's reader rule (HandlerOptions.Members:
// core/server hands it to visibility.SetMembers), so that a method never
// says it took effect when it did not.
var pendingMethods = []string{"addmember", "removemember", "listmembers", "createclaim", "deleteclaim", "listclaims"}

// call runs one method for operator key by.
func (h *Handler) call(req request, by string) (any, error) {
	s := h.o.State
	p := params(req.Params)
	if slices.Contains(pendingMethods, req.Method) && !h.o.Members {
		return nil, outcome.Errorf(outcome.Invalid, "method %q is not supported here yet (see supportedmethods)", req.Method)
	}
	switch req.Method {
	case "supportedmethods":
		if h.o.Members {
			return append(slices.Clone(Methods), pendingMethods...), nil
		}
		return Methods, nil
	case "banpubkey", "allowpubkey":
		pk, err := p.pubkey(0)
		if err != nil {
			return nil, err
		}
		on, off := ListBannedPubkeys, ListAllowedPubkeys
		if req.Method == "allowpubkey" {
			on, off = off, on
		}
		return true, swap(s, on, off, pk, p.reason(1), by)
	case "unbanpubkey", "unallowpubkey":
		pk, err := p.pubkey(0)
		if err != nil {
			return nil, err
		}
		list := ListBannedPubkeys
		if req.Method == "unallowpubkey" {
			list = ListAllowedPubkeys
		}
		return true, s.Remove(list, pk)
	case "banevent", "allowevent":
		id, err := p.eventID(0)
		if err != nil {
			return nil, err
		}
		on, off := ListBannedEvents, ListAllowedEvents
		if req.Method == "allowevent" {
			on, off = off, on
		}
		return true, swap(s, on, off, id, p.reason(1), by)
	case "unbanevent", "unallowevent":
		id, err := p.eventID(0)
		if err != nil {
			return nil, err
		}
		list := ListBannedEvents
		if req.Method == "unallowevent" {
			list = ListAllowedEvents
		}
		return true, s.Remove(list, id)
	case "allowkind", "disallowkind":
		k, err := p.kind(0)
		if err != nil {
			return nil, err
		}
		on, off := ListAllowedKinds, ListDisallowedKinds
		if req.Method == "disallowkind" {
			on, off = off, on
		}
		return true, swap(s, on, off, k, "", by)
	case "blockip":
		ip, err := p.addr(0)
		if err != nil {
			return nil, err
		}
		return true, s.Put(ListBlockedIPs, ip, p.reason(1), by)
	case "unblockip":
		ip, err := p.addr(0)
		if err != nil {
			return nil, err
		}
		return true, s.Remove(ListBlockedIPs, ip)
	case "changerelayname", "changerelaydescription", "changerelayicon":
		return true, h.relayInfo(req.Method, p, by)
	case "addmember":
		pk, err := p.pubkey(0)
		if err != nil {
			return nil, err
		}
		return true, s.Put(ListMembers, pk, p.reason(1), by)
	case "removemember":
		pk, err := p.pubkey(0)
		if err != nil {
			return nil, err
		}
		return true, s.Remove(ListMembers, pk)
	case "createclaim", "deleteclaim":
		c, err := p.claim(0)
		if err != nil {
			return nil, err
		}
		if req.Method == "deleteclaim" {
			return true, s.Remove(ListClaims, c)
		}
		if s.Has(ListClaims, c) {
			return nil, outcome.Errorf(outcome.Duplicate, "claim %q exists", c)
		}
		return true, s.Put(ListClaims, c, "", by)
	case "listbannedpubkeys", "listallowedpubkeys", "listmembers":
		list := map[string]string{"listbannedpubkeys": ListBannedPubkeys, "listallowedpubkeys": ListAllowedPubkeys, "listmembers": ListMembers}[req.Method]
		out := []map[string]string{}
		for _, e := range s.Entries(list) {
			out = append(out, map[string]string{"pubkey": e.Item, "reason": e.Reason})
		}
		return out, nil
	case "listbannedevents", "listallowedevents":
		list := ListBannedEvents
		if req.Method == "listallowedevents" {
			list = ListAllowedEvents
		}
		out := []map[string]string{}
		for _, e := range s.Entries(list) {
			out = append(out, map[string]string{"id": e.Item, "reason": e.Reason})
		}
		return out, nil
	case "listallowedkinds", "listdisallowedkinds":
		list := ListAllowedKinds
		if req.Method == "listdisallowedkinds" {
			list = ListDisallowedKinds
		}
		out := []int{}
		for _, e := range s.Entries(list) {
			if n, err := strconv.Atoi(e.Item); err == nil {
				out = append(out, n)
			}
		}
		return out, nil
	case "listblockedips":
		out := []map[string]string{}
		for _, e := range s.Entries(ListBlockedIPs) {
			out = append(out, map[string]string{"ip": e.Item, "reason": e.Reason})
		}
		return out, nil
	case "listclaims":
		out := []string{}
		for _, e := range s.Entries(ListClaims) {
			out = append(out, e.Item)
		}
		return out, nil
	}
	return nil, outcome.Errorf(outcome.Invalid, "method %q is not supported here (see supportedmethods)", req.Method)
}

// swap puts item on list on and takes it off list off (NIP-86: banning
// removes from the allow list and allowing from the ban list).
func swap(s *State, on, off, item, reason, by string) error {
	if err := s.Remove(off, item); err != nil {
		return err
	}
	return s.Put(on, item, reason, by)
}

func (h *Handler) relayInfo(method string, p params, by string) error {
	v, err := p.str(0)
	if err != nil {
		return err
	}
	v = strings.TrimSpace(v)
	item := strings.TrimPrefix(method, "changerelay")
	switch item {
	case "name":
		if v == "" || len(v) > maxNameLen {
			return outcome.Errorf(outcome.Invalid, "a relay name is 1 to %d bytes", maxNameLen)
		}
	case "description":
		if len(v) > maxDescription {
			return outcome.Errorf(outcome.Invalid, "a relay description is at most %d bytes", maxDescription)
		}
	case "icon":
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return outcome.Errorf(outcome.Invalid, "a relay icon is an http(s) URL")
		}
	}
	// The value travels as the entry's reason: one shape for every list.
	return h.o.State.Put(ListRelayInfo, item, v, by)
}

type params []json.RawMessage

func (p params) str(i int) (string, error) {
	if i >= len(p) {
		return "", outcome.Errorf(outcome.Invalid, "parameter %d is missing", i+1)
	}
	var s string
	if err := json.Unmarshal(p[i], &s); err != nil {
		return "", outcome.Errorf(outcome.Invalid, "parameter %d must be a string", i+1)
	}
	return s, nil
}

func (p params) reason(i int) string {
	s, _ := p.str(i)
	if len(s) > maxReason {
		s = s[:maxReason]
	}
	return s
}

func (p params) pubkey(i int) (string, error) {
	s, err := p.str(i)
	if err != nil {
		return "", err
	}
	pk, ok := nip34.PubkeyHex(s)
	if !ok {
		return "", outcome.Errorf(outcome.Invalid, "%q is not a pubkey (64 hex characters or an npub)", s)
	}
	return pk, nil
}

func (p params) eventID(i int) (string, error) {
	s, err := p.str(i)
	if err != nil {
		return "", err
	}
	s = strings.ToLower(strings.TrimSpace(s))
	if !nip34.IsHex64(s) {
		return "", outcome.Errorf(outcome.Invalid, "%q is not an event id (64 hex characters)", s)
	}
	return s, nil
}

func (p params) kind(i int) (string, error) {
	if i >= len(p) {
		return "", outcome.Errorf(outcome.Invalid, "parameter %d is missing", i+1)
	}
	var n int
	if err := json.Unmarshal(p[i], &n); err != nil {
		s, serr := p.str(i)
		if serr != nil {
			return "", outcome.Errorf(outcome.Invalid, "a kind is a number")
		}
		if n, err = strconv.Atoi(strings.TrimSpace(s)); err != nil {
			return "", outcome.Errorf(outcome.Invalid, "a kind is a number")
		}
	}
	if n < 0 || n > 65535 {
		return "", outcome.Errorf(outcome.Invalid, "kind %d is outside 0..65535", n)
	}
	return strconv.Itoa(n), nil
}

// addr reads an IP address or network (CIDR), in its canonical form.
func (p params) addr(i int) (string, error) {
	s, err := p.str(i)
	if err != nil {
		return "", err
	}
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().String(), nil
	}
	if pr, err := netip.ParsePrefix(s); err == nil {
		return pr.Masked().String(), nil
	}
	return "", outcome.Errorf(outcome.Invalid, "%q is not an IP address or network", s)
}

var claimRE = regexp.MustCompile(`^[A-Za-z0-9_-]{4,64}$`)

func (p params) claim(i int) (string, error) {
	s, err := p.str(i)
	if err != nil {
		return "", err
	}
	if !claimRE.MatchString(s) {
		return "", outcome.Errorf(outcome.Invalid, "a claim is 4 to 64 letters, digits, '-' or '_'")
	}
	return s, nil
}
