package relay

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/fiatjaf/eventstore"
)

// info is our NIP-11 document. We build it ourselves rather than through
// khatru's nip11 type because GRASP-01 needs supported_grasps,
// repo_acceptance_criteria and an optional curation key (absent, not null,
// when events are not curated: G01-N4).
type info struct {
	Name                   string   `json:"name,omitempty"`
	Description            string   `json:"description,omitempty"`
	PubKey                 string   `json:"pubkey,omitempty"`
	Contact                string   `json:"contact,omitempty"`
	Icon                   string   `json:"icon,omitempty"`
	Software               string   `json:"software,omitempty"`
	Version                string   `json:"version,omitempty"`
	SupportedNIPs          []int    `json:"supported_nips"`
	SupportedGrasps        []string `json:"supported_grasps"`
	RepoAcceptanceCriteria string   `json:"repo_acceptance_criteria"`
	Curation               string   `json:"curation,omitempty"`
	// The service's public URLs and relay URLs, the canonical one first,
	// then its aliases (issue 25 part 5: a .onion, a second name): every
	// one of them counts as this service in an announcement.
	PublicURLs []string    `json:"public_urls,omitempty"`
	RelayURLs  []string    `json:"relay_urls,omitempty"`
	Limitation *limitation `json:"limitation,omitempty"`
}

type limitation struct {
	MaxMessageLength int `json:"max_message_length,omitempty"`
	MaxSubscriptions int `json:"max_subscriptions,omitempty"`
	// MaxFilters (filters per REQ or COUNT) was in NIP-11 and is still
	// read by clients; MaxFilterItems (ids, authors, kinds or values of one
	// tag in one filter) is ours: a filter naming ids gets every matching
	// event up to len(ids), so this is what bounds such a query, and a
	// client splitting a long id list needs to know it (issue 10 part 4).
	MaxFilters          int   `json:"max_filters,omitempty"`
	MaxFilterItems      int   `json:"max_filter_items,omitempty"`
	MaxLimit            int   `json:"max_limit,omitempty"`
	MaxSubidLength      int   `json:"max_subid_length,omitempty"`
	MaxEventTags        int   `json:"max_event_tags,omitempty"`
	MaxContentLength    int   `json:"max_content_length,omitempty"`
	CreatedAtLowerLimit int64 `json:"created_at_lower_limit,omitempty"`
	CreatedAtUpperLimit int64 `json:"created_at_upper_limit,omitempty"`
	DefaultLimit        int   `json:"default_limit,omitempty"`
	AuthRequired        bool  `json:"auth_required,omitempty"`
	// Ours: git pushes and the refs/nostr/<id> placeholders anyone may
	// push (also under GRASP-06 /prs/), so a client can tell before it
	// pushes (issue 12 part 4).
	MaxPushBytes                 int64 `json:"max_push_bytes,omitempty"`
	MaxPlaceholdersPerRepo       int   `json:"max_placeholders_per_repo,omitempty"`
	MaxPlaceholdersPerPubkey     int   `json:"max_placeholders_per_pubkey,omitempty"`
	MaxPlaceholdersPerIP         int   `json:"max_placeholders_per_ip,omitempty"`
	MaxPlaceholderBytesPerRepo   int64 `json:"max_placeholder_bytes_per_repo,omitempty"`
	MaxPlaceholderBytesPerPubkey int64 `json:"max_placeholder_bytes_per_pubkey,omitempty"`
	MaxPlaceholderBytesPerIP     int64 `json:"max_placeholder_bytes_per_ip,omitempty"`
	PlaceholderTTL               int64 `json:"placeholder_ttl,omitempty"`
	// Ours: what GRASP-06 /prs/ repositories may hold, whether or not
	// their PR event is known (audit F20), and how long unused data is kept
	// (seconds).
	MaxPRsBytes          int64 `json:"max_prs_bytes,omitempty"`
	MaxPRsBytesPerIP     int64 `json:"max_prs_bytes_per_ip,omitempty"`
	MaxPRsBytesPerPubkey int64 `json:"max_prs_bytes_per_pubkey,omitempty"`
	MaxPRsRepos          int   `json:"max_prs_repos,omitempty"`
	MaxPRsReposPerIP     int   `json:"max_prs_repos_per_ip,omitempty"`
	MaxPRsReposPerPubkey int   `json:"max_prs_repos_per_pubkey,omitempty"`
	PRsTTL               int64 `json:"prs_ttl,omitempty"`
}

func positive(v int) int {
	if v < 0 {
		return 0
	}
	return v
}

func (s *Server) buildNIP11() ([]byte, error) {
	nips := []int{1}
	if s.opts.PubkeyHex != "" {
		nips = append(nips, 5) // nip05.go: the relay key as _@host
	}
	nips = append(nips, 9, 11, 34, 42)
	if _, ok := s.store.(eventstore.Counter); ok {
		nips = append(nips, 45)
	}
	nips = append(nips, 70, 77)
	grasps := s.opts.SupportedGrasps
	if grasps == nil {
		grasps = []string{}
	}
	criteria := s.opts.AcceptanceCriteria
	if criteria == "" {
		criteria = "Repository announcements must list this server in both their clone and relays tags; other events must reference an accepted repository or event."
	}
	l := s.limits
	doc := info{
		Name:                   s.opts.Name,
		Description:            s.opts.Description,
		PubKey:                 s.opts.PubkeyHex,
		Contact:                s.opts.Contact,
		Icon:                   s.iconURL(),
		Software:               s.opts.SoftwareURL,
		Version:                s.opts.Version,
		SupportedNIPs:          nips,
		SupportedGrasps:        grasps,
		RepoAcceptanceCriteria: criteria,
		Curation:               s.opts.Curation,
		Limitation: &limitation{
			MaxMessageLength:    positive(l.MaxMessageBytes),
			MaxSubscriptions:    positive(l.MaxSubscriptions),
			MaxFilters:          positive(l.MaxFiltersPerReq),
			MaxFilterItems:      positive(l.MaxFilterItems),
			MaxLimit:            positive(l.MaxLimit),
			MaxSubidLength:      positive(l.MaxSubIDLength),
			MaxEventTags:        positive(l.MaxEventTags),
			MaxContentLength:    positive(l.MaxContentBytes),
			CreatedAtLowerLimit: int64(positive(int(l.CreatedAtLowerLimit.D().Seconds()))),
			CreatedAtUpperLimit: int64(positive(int(l.CreatedAtUpperLimit.D().Seconds()))),
			DefaultLimit:        positive(l.DefaultLimit),
			AuthRequired:        s.opts.AuthRequired,

			MaxPushBytes:                 max(s.opts.PushLimits.MaxPushBytes, 0),
			MaxPlaceholdersPerRepo:       positive(s.opts.PushLimits.PlaceholdersPerRepo),
			MaxPlaceholdersPerPubkey:     positive(s.opts.PushLimits.PerPubkey),
			MaxPlaceholdersPerIP:         positive(s.opts.PushLimits.PerIP),
			MaxPlaceholderBytesPerRepo:   max(s.opts.PushLimits.PlaceholderBytesPerRepo, 0),
			MaxPlaceholderBytesPerPubkey: max(s.opts.PushLimits.BytesPerPubkey, 0),
			MaxPlaceholderBytesPerIP:     max(s.opts.PushLimits.BytesPerIP, 0),
			PlaceholderTTL:               max(s.opts.PushLimits.PlaceholderTTLSeconds, 0),

			MaxPRsBytes:          max(s.opts.PRsLimits.Bytes, 0),
			MaxPRsBytesPerIP:     max(s.opts.PRsLimits.BytesPerIP, 0),
			MaxPRsBytesPerPubkey: max(s.opts.PRsLimits.BytesPerPubkey, 0),
			MaxPRsRepos:          positive(s.opts.PRsLimits.Repos),
			MaxPRsReposPerIP:     positive(s.opts.PRsLimits.ReposPerIP),
			MaxPRsReposPerPubkey: positive(s.opts.PRsLimits.ReposPerPubkey),
			PRsTTL:               max(s.opts.PRsLimits.TTLSeconds, 0),
		},
	}
	if s.svc.Host != "" {
		doc.PublicURLs, doc.RelayURLs = s.svc.BaseURLs(), s.svc.RelayURLs()
	}
	return json.Marshal(doc)
}

func (s *Server) serveNIP11(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/nostr+json")
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(s.nip11Doc())
}

// iconURL is the configured icon, or the one this server draws itself.
func (s *Server) iconURL() string {
	if s.opts.IconURL != "" || s.opts.PublicURL == "" {
		return s.opts.IconURL
	}
	return strings.TrimSuffix(s.opts.PublicURL, "/") + "/icon.png"
}
