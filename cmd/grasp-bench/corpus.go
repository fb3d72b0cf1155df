package main

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/nbd-wtf/go-nostr"
)

// corpusVersion names the generator: a cached corpus file written by another
// version is regenerated, never reused.
const corpusVersion = 2

// benchPublicURL is the public URL every generated announcement lists. The
// servers under test are configured with it whatever port they listen on, so
// one pre-signed corpus serves every run.
const benchPublicURL = "http://grasp-bench.invalid"

// corpusHeader is the first line of a corpus file.
type corpusHeader struct {
	Version   int      `json:"version"`
	Events    int      `json:"events"`
	Seed      uint64   `json:"seed"`
	PublicURL string   `json:"public_url"`
	Start     int64    `json:"start"` // oldest created_at
	End       int64    `json:"end"`   // newest created_at
	Repos     []string `json:"repos"` // announcement addresses, in announcement order
}

// item is what the benchmark keeps of one pre-signed event in memory: 64
// bytes. The event's JSON stays in the corpus file and is read when it is
// sent (corpus.appendFrame): held as frames, a 5,000,000-event corpus took
// 12-18 GB of the benchmark's RAM (issue 27 part 6). What the ingest order,
// the query sets and the NIP-77 checks need is kept here.
type item struct {
	id        [32]byte
	off       int64 // where the event's JSON starts in the corpus file
	createdAt int64
	size      uint32 // its length in bytes
	// dep is the index of the last earlier event that must be answered
	// before this one is sent (its announcement, the state that releases
	// its repository, the issue it comments on); -1 if none. The generator
	// keeps dependencies far behind, so waiting is rare, but honouring them
	// makes the outcome independent of how connections interleave.
	dep    int32
	author uint32 // index in corpus.authors
	// repo is the event's `a` tag: an index in corpus.addrs, -1 if none
	// (corpus.moreAddrs has any further distinct ones).
	repo int32
	kind uint16
}

// idHex is the event id as the protocol writes it.
func (it *item) idHex() string { return hex.EncodeToString(it.id[:]) }

type corpus struct {
	hdr        corpusHeader
	items      []item
	eventBytes int64 // sum of the events' JSON sizes
	// file is the corpus file, open for reading the events' JSON
	// (os.File.ReadAt is safe from many goroutines); closed when the
	// corpus is garbage.
	file *os.File
	// authors are the distinct pubkeys (hex) and addrs the distinct `a`
	// tag values, in order of first appearance; moreAddrs maps an event to
	// its `a` values past the first (the generator writes one).
	authors   []string
	addrs     []string
	moreAddrs map[int32][]int32
	// dTags are the d tags of the announcements and states, by position.
	dTags map[int32]string
}

// pubkey is the hex pubkey of the event at i.
func (c *corpus) pubkey(i int) string { return c.authors[c.items[i].author] }

// dTag is the d tag of the announcement or state at i ("" for other kinds).
func (c *corpus) dTag(i int) string { return c.dTags[int32(i)] }

// aTags are the distinct `a` tag values of the event at i.
func (c *corpus) aTags(i int) []string {
	it := &c.items[i]
	if it.repo < 0 {
		return nil
	}
	out := []string{c.addrs[it.repo]}
	for _, a := range c.moreAddrs[int32(i)] {
		out = append(out, c.addrs[a])
	}
	return out
}

// frameHead and frameTail wrap an event's JSON into the EVENT message.
const frameHead, frameTail = `["EVENT",`, `]`

// appendFrame appends the ["EVENT",<event>] message of the event at i to
// buf, read from the corpus file.
func (c *corpus) appendFrame(buf []byte, i int) ([]byte, error) {
	buf = append(buf, frameHead...)
	buf, err := c.appendJSON(buf, i)
	return append(buf, frameTail...), err
}

// appendJSON appends the event at i's JSON, as the corpus file holds it.
func (c *corpus) appendJSON(buf []byte, i int) ([]byte, error) {
	it := &c.items[i]
	n := len(buf)
	buf = slices.Grow(buf, int(it.size))[:n+int(it.size)]
	if _, err := c.file.ReadAt(buf[n:], it.off); err != nil {
		return buf[:n], fmt.Errorf("read corpus event %d: %w", i, err)
	}
	return buf, nil
}

// event decodes the event at i from the corpus file, checking it is the
// event the index says.
func (c *corpus) event(i int) (*nostr.Event, error) {
	raw, err := c.appendJSON(nil, i)
	if err != nil {
		return nil, err
	}
	evt := &nostr.Event{}
	if err := evt.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("corpus event %d: %w", i, err)
	}
	if evt.ID != c.items[i].idHex() {
		return nil, fmt.Errorf("corpus event %d: read %s, the index says %s (was the file changed?)", i, evt.ID, c.items[i].idHex())
	}
	return evt, nil
}

// avgEventBytes is the mean JSON size of an event.
func (c *corpus) avgEventBytes() float64 {
	if len(c.items) == 0 {
		return 0
	}
	return float64(c.eventBytes) / float64(len(c.items))
}

// corpusPath is where the corpus of n events with seed is cached in dir.
func corpusPath(dir string, n int, seed uint64) string {
	return filepath.Join(dir, fmt.Sprintf("corpus-v%d-n%d-s%d.jsonl", corpusVersion, n, seed))
}

// loadOrGenerate reads the cached corpus, generating (and caching) it first
// if it is missing or was written by another generator version.
func loadOrGenerate(dir string, n int, seed uint64, logf func(string, ...any)) (*corpus, error) {
	path := corpusPath(dir, n, seed)
	c, err := loadCorpus(path)
	if err == nil && c.hdr.Version == corpusVersion && c.hdr.Events == n && c.hdr.Seed == seed && c.hdr.PublicURL == benchPublicURL {
		return c, nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		logf("corpus %s unusable (%v): regenerating", path, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("corpus dir: %w", err)
	}
	start := time.Now()
	logf("generating and signing %d events into %s", n, path)
	if err := generateFile(path, n, seed, time.Now()); err != nil {
		return nil, err
	}
	logf("corpus generated in %s", time.Since(start).Round(time.Second))
	return loadCorpus(path)
}

// ---- generation ----------------------------------------------------------

type benchKey struct{ sk, pk string }

// deriveKeys makes n secret keys from seed, so a corpus is reproducible.
func deriveKeys(seed uint64, n int) []benchKey {
	keys := make([]benchKey, n)
	for i := range keys {
		var in [24]byte
		copy(in[:8], "grasp-bk")
		binary.BigEndian.PutUint64(in[8:], seed)
		binary.BigEndian.PutUint64(in[16:], uint64(i))
		sum := sha256.Sum256(in[:])
		sk := hex.EncodeToString(sum[:])
		pk, err := nostr.GetPublicKey(sk)
		if err != nil {
			panic(fmt.Sprintf("derive key %d: %v", i, err)) // a hash outside the curve order: never in practice
		}
		keys[i] = benchKey{sk, pk}
	}
	return keys
}

// seedCommit is the one commit of a generated repository: an empty tree
// with a fixed author and time, so its id is known when the corpus is
// signed and the benchmark can push the very object the state names. It
// returns the commit id and the object's body (git hash-object -t commit).
func seedCommit(ownerPK, d string) (oid string, body []byte) {
	body = fmt.Appendf(nil, "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor Bench <bench@example.com> 1700000000 +0000\ncommitter Bench <bench@example.com> 1700000000 +0000\n\ninitial commit of %s/%s\n", ownerPK, d)
	h := sha1.New()
	fmt.Fprintf(h, "commit %d\x00", len(body))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil)), body
}

type genRepo struct {
	owner    int
	d, addr  string
	euc      string
	annPos   int
	statePos int
}

type genRoot struct {
	id, author   string // author pubkey
	kind, repo   int
	authorKey    int // index in builder.keys
	pos          int
	lastReply    string // newest comment in its thread, "" if none
	lastAuthor   string
	lastReplyPos int
}

// builder lays out the corpus: repositories announced at a steady pace
// through the stream, each announcement followed by the state that names
// its one commit; issues and patches for announced repositories; comments
// and statuses on earlier issues and patches, preferably farDist positions
// behind so that pipelined publishing rarely waits for them. The benchmark
// publishes a segment's announcements and states (and pushes their commits)
// before the rest of it, as repositories exist before their activity.
type builder struct {
	rng        *rand.Rand
	keys       []benchKey
	svc        nip34.Service
	n          int
	start      int64
	step       float64
	farDist    int
	repos      []genRepo
	stateQueue []int // repos announced, state not yet emitted
	released   []int // repos whose state was emitted, in that order
	roots      []genRoot
}

// plan fixes keys, repositories and their positions before any event is
// built, so the header can be written first.
func plan(n int, seed uint64, now time.Time) (*builder, corpusHeader, error) {
	svc, err := nip34.ParseService(benchPublicURL)
	if err != nil {
		return nil, corpusHeader{}, err
	}
	end := now.Add(-time.Hour).Unix() // well inside every created_at bound
	start := end - 365*24*3600
	b := &builder{
		rng:     rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		keys:    deriveKeys(seed, max(10, min(2000, n/100))),
		svc:     svc,
		n:       n,
		start:   start,
		step:    float64(end-start) / float64(max(1, n)),
		farDist: max(8, min(2048, n/8)),
	}
	nRepos := max(2, min(1000, n/400))
	span := max(1, n-2)
	hdr := corpusHeader{Version: corpusVersion, Events: n, Seed: seed, PublicURL: benchPublicURL, Start: start, End: end}
	for j := range nRepos {
		owner := b.rng.IntN(len(b.keys))
		d := fmt.Sprintf("%s-%s-%d", pick(b.rng, words), pick(b.rng, words), j)
		r := genRepo{owner: owner, d: d, addr: fmt.Sprintf("%d:%s:%s", nip34.KindAnnouncement, b.keys[owner].pk, d)}
		r.euc, _ = seedCommit(b.keys[owner].pk, d)
		r.annPos = j * span / nRepos
		r.statePos = r.annPos + 1
		b.repos = append(b.repos, r)
		hdr.Repos = append(hdr.Repos, r.addr)
	}
	return b, hdr, nil
}

func (b *builder) at(i int) int64 {
	return b.start + int64(float64(i)*b.step) + b.rng.Int64N(max(1, int64(b.step)))
}

// next builds the unsigned event at position i (positions are visited in
// order, each once) with its pubkey and id set, and returns its author's
// secret key.
func (b *builder) next(i int, nextAnn *int) (*nostr.Event, string) {
	ts := nostr.Timestamp(b.at(i))
	// a state that is due, then an announcement that is due, else activity
	if len(b.stateQueue) > 0 && b.repos[b.stateQueue[0]].statePos <= i {
		j := b.stateQueue[0]
		b.stateQueue = b.stateQueue[1:]
		b.released = append(b.released, j)
		r := &b.repos[j]
		r.statePos = i
		return b.finish(&nostr.Event{Kind: nip34.KindState, CreatedAt: ts, Tags: nostr.Tags{
			{"d", r.d}, {"refs/heads/main", r.euc}, {"HEAD", "ref: refs/heads/main"},
		}}, r.owner)
	}
	if *nextAnn < len(b.repos) && b.repos[*nextAnn].annPos <= i {
		j := *nextAnn
		*nextAnn++
		r := &b.repos[j]
		r.annPos = i
		b.stateQueue = append(b.stateQueue, j)
		owner := b.keys[r.owner].pk
		return b.finish(&nostr.Event{Kind: nip34.KindAnnouncement, CreatedAt: ts, Tags: nostr.Tags{
			{"d", r.d}, {"name", r.d}, {"description", sentence(b.rng)},
			{"clone", b.svc.CloneURL(owner, r.d)}, {"relays", b.svc.RelayURL()},
			{"r", r.euc, "euc"}, {"alt", "git repository: " + r.d},
		}}, r.owner)
	}
	if len(b.released) == 0 {
		// The plan puts the first state at position 1, right after the
		// first announcement, so there is always a repository.
		panic("corpus plan: activity before any repository")
	}
	author := b.rng.IntN(len(b.keys))
	roll := b.rng.IntN(100)
	switch {
	case roll < 25 || len(b.roots) == 0 && roll < 60:
		return b.patch(i, ts, author)
	case roll < 40 || len(b.roots) == 0:
		return b.issue(i, ts, author)
	case roll < 85:
		return b.comment(i, ts, author)
	}
	return b.status(i, ts, author)
}

// finish sets the author and the id (signing later recomputes both, equal).
func (b *builder) finish(evt *nostr.Event, author int) (*nostr.Event, string) {
	evt.PubKey = b.keys[author].pk
	evt.ID = evt.GetID()
	return evt, b.keys[author].sk
}

// farCount returns how many of the first n entries (ordered by position)
// lie at least dist behind i, or n when none does yet.
func farCount(n int, posOf func(int) int, i, dist int) int {
	lo, hi := 0, n // first index whose position is > i-dist
	for lo < hi {
		m := (lo + hi) / 2
		if posOf(m) <= i-dist {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return n
	}
	return lo
}

// pickRepo prefers recent repositories: activity clusters on live projects.
func (b *builder) pickRepo() int {
	n := len(b.released)
	if b.rng.IntN(2) == 0 {
		return b.released[n-1-b.rng.IntN(min(n, 10))]
	}
	return b.released[b.rng.IntN(n)]
}

// pickRoot prefers issues and patches far behind i, mostly recent ones.
func (b *builder) pickRoot(i int) int {
	n := farCount(len(b.roots), func(k int) int { return b.roots[k].pos }, i, b.farDist)
	if b.rng.IntN(10) < 6 {
		return n - 1 - b.rng.IntN(min(n, 50))
	}
	return b.rng.IntN(n)
}

func (b *builder) patch(i int, ts nostr.Timestamp, author int) (*nostr.Event, string) {
	j := b.pickRepo()
	r := b.repos[j]
	commit, parent := hexID(b.rng, 40), hexID(b.rng, 40)
	name := pick(b.rng, firstNames)
	subject := sentence(b.rng)
	size := logNormal(b.rng, 2000, 0.9, 300, 40000)
	evt, sk := b.finish(&nostr.Event{Kind: nip34.KindPatch, CreatedAt: ts, Content: formatPatch(b.rng, size, commit, name, int64(ts), subject), Tags: nostr.Tags{
		{"a", r.addr}, {"r", r.euc}, {"p", b.keys[r.owner].pk}, {"t", "root"},
		{"commit", commit}, {"r", commit}, {"parent-commit", parent},
		{"committer", name, strings.ToLower(name) + "@example.com", strconv.FormatInt(int64(ts), 10), "0"},
		{"alt", "git patch: " + subject},
	}}, author)
	b.roots = append(b.roots, genRoot{id: evt.ID, kind: evt.Kind, author: evt.PubKey, authorKey: author, repo: j, pos: i})
	return evt, sk
}

func (b *builder) issue(i int, ts nostr.Timestamp, author int) (*nostr.Event, string) {
	j := b.pickRepo()
	r := b.repos[j]
	subject := sentence(b.rng)
	tags := nostr.Tags{{"a", r.addr}, {"p", b.keys[r.owner].pk}, {"subject", subject}}
	for range b.rng.IntN(3) {
		tags = append(tags, nostr.Tag{"t", pick(b.rng, words)})
	}
	tags = append(tags, nostr.Tag{"alt", "git issue: " + subject})
	evt, sk := b.finish(&nostr.Event{Kind: nip34.KindIssue, CreatedAt: ts, Tags: tags,
		Content: prose(b.rng, logNormal(b.rng, 700, 0.8, 40, 12000))}, author)
	b.roots = append(b.roots, genRoot{id: evt.ID, kind: evt.Kind, author: evt.PubKey, authorKey: author, repo: j, pos: i})
	return evt, sk
}

// comment is a NIP-22 reply on an issue or patch, or on the newest comment
// of its thread.
func (b *builder) comment(i int, ts nostr.Timestamp, author int) (*nostr.Event, string) {
	rt := &b.roots[b.pickRoot(i)]
	parent, parentAuthor, parentKind := rt.id, rt.author, rt.kind
	if rt.lastReply != "" && rt.lastReplyPos <= i-b.farDist && b.rng.IntN(2) == 0 {
		parent, parentAuthor, parentKind = rt.lastReply, rt.lastAuthor, nip34.KindComment
	}
	evt, sk := b.finish(&nostr.Event{Kind: nip34.KindComment, CreatedAt: ts,
		Content: prose(b.rng, logNormal(b.rng, 300, 0.9, 10, 8000)),
		Tags: nostr.Tags{
			{"E", rt.id, "", rt.author}, {"K", strconv.Itoa(rt.kind)}, {"P", rt.author},
			{"e", parent, "", parentAuthor}, {"k", strconv.Itoa(parentKind)}, {"p", parentAuthor},
		}}, author)
	rt.lastReply, rt.lastAuthor, rt.lastReplyPos = evt.ID, evt.PubKey, i
	return evt, sk
}

// status is a NIP-34 status (open, applied/merged, closed, draft) of an
// issue or patch, by the root's author or the repository's owner: a status
// counts only from its root's author or a maintainer (issue 25 part 1), and
// a server refuses the rest.
func (b *builder) status(i int, ts nostr.Timestamp, _ int) (*nostr.Event, string) {
	rt := b.roots[b.pickRoot(i)]
	r := b.repos[rt.repo]
	author := rt.authorKey
	if b.rng.IntN(2) == 0 {
		author = r.owner
	}
	kinds := []int{nip34.KindStatusOpen, nip34.KindStatusMerged, nip34.KindStatusMerged, nip34.KindStatusClosed, nip34.KindStatusClosed, nip34.KindStatusDraft}
	content := ""
	if b.rng.IntN(3) == 0 {
		content = sentence(b.rng)
	}
	return b.finish(&nostr.Event{Kind: kinds[b.rng.IntN(len(kinds))], CreatedAt: ts, Content: content, Tags: nostr.Tags{
		{"e", rt.id, "", "root"}, {"a", r.addr}, {"p", b.keys[r.owner].pk}, {"p", rt.author}, {"r", r.euc},
	}}, author)
}

// generateFile builds and signs the corpus and writes it to path (through a
// temporary file, so an interrupted run leaves no half corpus behind).
// Signing runs on every core: it is most of the cost.
func generateFile(path string, n int, seed uint64, now time.Time) error {
	b, hdr, err := plan(n, seed, now)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("create corpus: %w", err)
	}
	defer os.Remove(tmp)
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	head, _ := json.Marshal(hdr)
	w.Write(append(head, '\n'))

	const batch = 2048
	workers := runtime.GOMAXPROCS(0)
	evts := make([]*nostr.Event, 0, batch)
	sks := make([]string, 0, batch)
	nextAnn := 0
	for off := 0; off < n; off += batch {
		evts, sks = evts[:0], sks[:0]
		for i := off; i < min(n, off+batch); i++ {
			e, sk := b.next(i, &nextAnn)
			evts, sks = append(evts, e), append(sks, sk)
		}
		errs := make([]error, workers)
		var wg sync.WaitGroup
		for wk := range workers {
			wg.Go(func() {
				for k := wk; k < len(evts); k += workers {
					id := evts[k].ID
					if err := evts[k].Sign(sks[k]); err != nil {
						errs[wk] = fmt.Errorf("sign event %d: %w", off+k, err)
						return
					}
					if evts[k].ID != id {
						errs[wk] = fmt.Errorf("event %d: signed id %s differs from the planned %s", off+k, evts[k].ID, id)
						return
					}
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		for _, e := range evts {
			line, err := e.MarshalJSON()
			if err != nil {
				return fmt.Errorf("encode event: %w", err)
			}
			w.Write(append(line, '\n'))
		}
	}
	if nextAnn != len(b.repos) || len(b.stateQueue) != 0 {
		return fmt.Errorf("corpus plan: %d of %d announcements and all but %d states placed", nextAnn, len(b.repos), len(b.stateQueue))
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write corpus: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write corpus: %w", err)
	}
	return os.Rename(tmp, path)
}

// loadCorpus reads a corpus file and works out each event's dependency.
func loadCorpus(path string) (*corpus, error) { return loadCorpusHead(path, 0) }

// loadCorpusHead reads the first limit events of a corpus file (0: all),
// keeping of each what item holds; the file stays open for the events'
// JSON.
func loadCorpusHead(path string, limit int) (*corpus, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	c, err := indexCorpus(f, limit)
	if err != nil {
		f.Close()
		return nil, err
	}
	c.file = f
	runtime.AddCleanup(c, func(f *os.File) { f.Close() }, f)
	return c, nil
}

// indexCorpus reads the corpus in f and works out each event's dependency.
func indexCorpus(f *os.File, limit int) (*corpus, error) {
	r := bufio.NewReaderSize(f, 1<<20)
	head, err := r.ReadBytes('\n')
	if err != nil {
		return nil, fmt.Errorf("read corpus header: %w", err)
	}
	c := &corpus{moreAddrs: map[int32][]int32{}, dTags: map[int32]string{}}
	if err := json.Unmarshal(head, &c.hdr); err != nil {
		return nil, fmt.Errorf("corpus header: %w", err)
	}
	if c.hdr.Events <= 0 || c.hdr.Events > 100_000_000 {
		return nil, fmt.Errorf("corpus header: %d events", c.hdr.Events)
	}
	want := c.hdr.Events
	if limit > 0 {
		want = min(want, limit)
	}
	c.items = make([]item, 0, want)
	// Only while loading: ids to positions (deps), interned pubkeys and
	// addresses.
	idPos := make(map[[32]byte]int32, want)
	authorIdx := map[string]uint32{}
	addrIdx := map[string]int32{}
	repoPos := map[string]int32{} // address -> its announcement, then the state releasing it
	off := int64(len(head))
	for i := 0; limit == 0 || i < limit; i++ {
		line, err := r.ReadBytes('\n')
		if err == io.EOF && len(line) == 0 {
			break
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("read corpus: %w", err)
		}
		lineOff := off
		off += int64(len(line))
		line = bytes.TrimSuffix(line, []byte{'\n'})
		var evt nostr.Event
		if err := evt.UnmarshalJSON(line); err != nil {
			return nil, fmt.Errorf("corpus line %d: %w", i+2, err)
		}
		if i >= math.MaxInt32 || len(line) > math.MaxUint32 || evt.Kind < 0 || evt.Kind > math.MaxUint16 ||
			!nip34.IsHex64(evt.ID) || !nip34.IsHex64(evt.PubKey) {
			return nil, fmt.Errorf("corpus line %d: an event this benchmark cannot index (kind %d, id %q, pubkey %q, %d bytes)", i+2, evt.Kind, evt.ID, evt.PubKey, len(line))
		}
		it := item{off: lineOff, size: uint32(len(line)), kind: uint16(evt.Kind), createdAt: int64(evt.CreatedAt), dep: -1, repo: -1}
		hex.Decode(it.id[:], []byte(evt.ID))
		a, ok := authorIdx[evt.PubKey]
		if !ok {
			a = uint32(len(c.authors))
			authorIdx[evt.PubKey] = a
			c.authors = append(c.authors, evt.PubKey)
		}
		it.author = a
		for _, t := range evt.Tags {
			if len(t) < 2 {
				continue
			}
			var p int32
			var ok bool
			switch t[0] {
			case "a", "A":
				p, ok = repoPos[t[1]]
			case "e", "E", "q":
				var id [32]byte
				if nip34.IsHex64(t[1]) {
					hex.Decode(id[:], []byte(t[1]))
					p, ok = idPos[id]
				}
			}
			if ok {
				it.dep = max(it.dep, p)
			}
			if t[0] == "a" {
				c.addA(&it, int32(i), t[1], addrIdx)
			}
		}
		switch evt.Kind {
		case nip34.KindAnnouncement, nip34.KindState:
			d := evt.Tags.GetD()
			addr := fmt.Sprintf("%d:%s:%s", nip34.KindAnnouncement, evt.PubKey, d)
			if p, ok := repoPos[addr]; ok && evt.Kind == nip34.KindState {
				it.dep = max(it.dep, p)
			}
			repoPos[addr] = int32(i)
			c.dTags[int32(i)] = d
		}
		idPos[it.id] = int32(i)
		c.eventBytes += int64(len(line))
		c.items = append(c.items, it)
	}
	if limit == 0 && len(c.items) != c.hdr.Events {
		return nil, fmt.Errorf("corpus has %d events, its header says %d", len(c.items), c.hdr.Events)
	}
	return c, nil
}

// addA records addr as one of the `a` tags of the event at i.
func (c *corpus) addA(it *item, i int32, addr string, addrIdx map[string]int32) {
	k, ok := addrIdx[addr]
	if !ok {
		k = int32(len(c.addrs))
		addrIdx[addr] = k
		c.addrs = append(c.addrs, addr)
	}
	switch {
	case it.repo < 0:
		it.repo = k
	case it.repo != k && !slices.Contains(c.moreAddrs[i], k):
		c.moreAddrs[i] = append(c.moreAddrs[i], k)
	}
}

// kindCounts tallies the corpus by kind, for the report.
func (c *corpus) kindCounts() map[int]int {
	out := map[int]int{}
	for _, it := range c.items {
		out[int(it.kind)]++
	}
	return out
}

// sortedKinds lists (kind, count) pairs by kind.
func sortedKinds(m map[int]int) [][2]int {
	out := make([][2]int, 0, len(m))
	for k, v := range m {
		out = append(out, [2]int{k, v})
	}
	slices.SortFunc(out, func(a, b [2]int) int { return a[0] - b[0] })
	return out
}

// split divides the events at positions [from, to) into the announcements
// and states of the repositories they introduce, and everything else.
func (c *corpus) split(from, to int) (anns, states, activity []int) {
	for i := from; i < to; i++ {
		switch c.items[i].kind {
		case nip34.KindAnnouncement:
			anns = append(anns, i)
		case nip34.KindState:
			states = append(states, i)
		default:
			activity = append(activity, i)
		}
	}
	return anns, states, activity
}

// boundary is the first size >= n at which no announcement is stored
// without the state that follows it, so that every prefix the scale curve
// measures has all its repositories released.
func (c *corpus) boundary(n int) int {
	open := map[string]bool{}
	for i, it := range c.items {
		if i >= n && len(open) == 0 {
			return i
		}
		if it.kind == nip34.KindAnnouncement || it.kind == nip34.KindState {
			key := c.pubkey(i) + ":" + c.dTag(i)
			if it.kind == nip34.KindAnnouncement {
				open[key] = true
			} else {
				delete(open, key)
			}
		}
	}
	return len(c.items)
}
