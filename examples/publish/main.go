// Command publish puts a local git repository on a GRASP server without
// ngit, in the order ngit uses: the announcement (kind 30617), a wait for
// the server to create the bare repository, the signed state (kind 30618),
// then the git push that the state authorises. With -pr it proposes a
// branch the way ngit sends a PR: the commits go to refs/nostr/<event id>
// first, then the PR event (kind 1618) is signed and published.
//
// It is the tested example of docs/publishing.md: that guide's commands and
// sample output are run and compared by this package's test, so what the
// guide shows is what the server answers. It speaks plain NIP-01 over a
// WebSocket and runs git, so each step is visible; it is a teaching tool,
// not a replacement for ngit (no maintainers, no merges, one server).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "publish:", err)
		os.Exit(1)
	}
}

// polls bounds the waits for the server, one poll every 500 ms: 2 minutes.
const polls = 240

// KeyEnv names the environment variable holding the secret key (nsec or
// hex): a key on the command line would end up in the shell's history.
const KeyEnv = "NOSTR_SECRET_KEY"

type options struct {
	server, dir, d, name, description, pr string
	newKey, npub                          bool
}

func parse(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("publish", flag.ContinueOnError)
	fs.StringVar(&o.server, "server", "", "the GRASP server's public URL, e.g. https://git.example.org")
	fs.StringVar(&o.dir, "dir", ".", "the local git repository to publish")
	fs.StringVar(&o.d, "d", "", "the repository's identifier (its 'd' tag; the path is /<npub>/<d>.git)")
	fs.StringVar(&o.name, "name", "", "the repository's name (default: the identifier)")
	fs.StringVar(&o.description, "description", "", "one line about the repository")
	fs.StringVar(&o.pr, "pr", "", "propose this local branch as a PR to the published repository instead of publishing")
	fs.BoolVar(&o.newKey, "new-key", false, "print a new secret key (nsec) and exit")
	fs.BoolVar(&o.npub, "npub", false, "print the npub of "+KeyEnv+" and exit")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.newKey || o.npub {
		return o, nil
	}
	if o.server == "" || o.d == "" {
		return o, errors.New("-server and -d are required")
	}
	if o.name == "" {
		o.name = o.d
	}
	return o, nil
}

func run(ctx context.Context, args []string, getenv func(string) string, out io.Writer) error {
	o, err := parse(args)
	if err != nil {
		return err
	}
	if o.newKey {
		nsec, err := nip19.EncodePrivateKey(nostr.GeneratePrivateKey())
		if err != nil {
			return err
		}
		fmt.Fprintln(out, nsec)
		return nil
	}
	sk, err := secretKey(getenv(KeyEnv))
	if err != nil {
		return err
	}
	pk, _ := nostr.GetPublicKey(sk)
	npub, _ := nip19.EncodePublicKey(pk)
	if o.npub {
		fmt.Fprintln(out, npub)
		return nil
	}
	srv, err := serverOf(o.server)
	if err != nil {
		return err
	}
	clone := srv.base + "/" + npub + "/" + url.PathEscape(o.d) + ".git"
	fmt.Fprintf(out, "relay %s, repository %s\n", srv.relay, clone)
	p := publisher{sk: sk, pk: pk, relay: srv.relay, clone: clone, dir: o.dir, out: out}
	if o.pr != "" {
		return p.proposal(ctx, o)
	}
	return p.publish(ctx, o)
}

// secretKey reads an nsec or a 64-hex key.
func secretKey(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", fmt.Errorf("set %s to your secret key (nsec1... or hex); -new-key prints a new one", KeyEnv)
	}
	if strings.HasPrefix(s, "nsec1") {
		_, v, err := nip19.Decode(s)
		if err != nil {
			return "", fmt.Errorf("%s: %w", KeyEnv, err)
		}
		return v.(string), nil
	}
	if !nostr.IsValid32ByteHex(s) {
		return "", fmt.Errorf("%s is neither an nsec nor 64 hex digits", KeyEnv)
	}
	return s, nil
}

type server struct{ base, relay string }

// serverOf derives the relay URL from the server's URL as ngit does: the
// same host and path, wss:// for https:// and ws:// for http://.
func serverOf(raw string) (server, error) {
	u, err := url.Parse(strings.TrimRight(raw, "/"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return server{}, fmt.Errorf("-server %q: want https://host[/path] (or http:// for a test server)", raw)
	}
	ws := *u
	ws.Scheme = map[string]string{"https": "wss", "http": "ws"}[u.Scheme]
	return server{base: u.String(), relay: ws.String()}, nil
}

type publisher struct {
	sk, pk, relay, clone, dir string
	out                       io.Writer
}

// publish announces the repository, waits for its bare repository, signs
// the state of the local branches and tags, and pushes them.
func (p publisher) publish(ctx context.Context, o options) error {
	root, err := p.git(ctx, "rev-list", "--max-parents=0", "HEAD")
	if err != nil {
		return err
	}
	earliest := strings.Fields(root)
	sort.Strings(earliest)
	ann := &nostr.Event{Kind: 30617, CreatedAt: nostr.Now(), Tags: nostr.Tags{
		{"d", o.d}, {"name", o.name},
		{"clone", p.clone}, {"relays", p.relay},
		// the earliest unique commit: clients group forks by it
		{"r", earliest[0], "euc"},
	}}
	if o.description != "" {
		ann.Tags = append(ann.Tags, nostr.Tag{"description", o.description})
	}
	msg, err := p.send(ctx, ann)
	if err != nil {
		return fmt.Errorf("announcement: %w", err)
	}
	fmt.Fprintf(p.out, "1. announcement (kind 30617) %s: OK true %q\n", ann.ID, msg)

	// The server creates the bare repository with the announcement, even
	// while it is held; ngit polls for it before pushing.
	status, err := p.waitForRepository(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(p.out, "2. GET %s/info/refs?service=git-upload-pack: %d\n", p.clone, status)

	refs, head, err := p.localRefs(ctx)
	if err != nil {
		return err
	}
	st := &nostr.Event{Kind: 30618, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"d", o.d}}}
	names := make([]string, 0, len(refs))
	for ref := range refs {
		names = append(names, ref)
	}
	sort.Strings(names)
	for _, ref := range names {
		st.Tags = append(st.Tags, nostr.Tag{ref, refs[ref]})
	}
	st.Tags = append(st.Tags, nostr.Tag{"HEAD", "ref: " + head})
	if msg, err = p.send(ctx, st); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	fmt.Fprintf(p.out, "3. state (kind 30618) %s naming %s, HEAD %s: OK true %q\n", st.ID, strings.Join(names, " "), head, msg)

	// The push must leave the server's refs equal to the state: every
	// branch and tag, and a branch deleted locally deleted there (ngit
	// force-pushes for the same reason).
	if _, err := p.git(ctx, "push", "--force", "--prune", p.clone, "refs/heads/*:refs/heads/*", "refs/tags/*:refs/tags/*"); err != nil {
		return fmt.Errorf("push: %w", err)
	}
	fmt.Fprintf(p.out, "4. git push %s: %s\n", p.clone, strings.Join(names, " "))

	n, err := p.servedSoon(ctx, ann.ID, st.ID)
	if err != nil {
		return err
	}
	fmt.Fprintf(p.out, "5. served by the relay: %d of 2 (announcement and state left purgatory)\n", n)
	if n != 2 {
		return errors.New("the announcement and state are not served after the push")
	}
	return nil
}

// proposal sends branch o.pr as a PR (kind 1618) to the repository o.d of
// this key, git first: the event id is known before it is signed, the tip
// goes to refs/nostr/<id>, and the signed event follows.
func (p publisher) proposal(ctx context.Context, o options) error {
	tip, err := p.git(ctx, "rev-parse", "--verify", "refs/heads/"+o.pr+"^{commit}")
	if err != nil {
		return err
	}
	root, err := p.git(ctx, "rev-list", "--max-parents=0", tip)
	if err != nil {
		return err
	}
	earliest := strings.Fields(root)
	sort.Strings(earliest)
	subject, err := p.git(ctx, "log", "-1", "--format=%s", tip)
	if err != nil {
		return err
	}
	pr := &nostr.Event{Kind: 1618, CreatedAt: nostr.Now(), PubKey: p.pk, Content: "Proposed from branch " + o.pr + ".", Tags: nostr.Tags{
		{"a", "30617:" + p.pk + ":" + o.d}, {"p", p.pk},
		{"subject", subject}, {"branch-name", o.pr},
		{"r", earliest[0]}, {"c", tip}, {"clone", p.clone},
	}}
	pr.ID = pr.GetID()
	fmt.Fprintf(p.out, "1. PR (kind 1618) %s, tip %s, not signed yet\n", pr.ID, tip)
	if _, err := p.git(ctx, "push", p.clone, tip+":refs/nostr/"+pr.ID); err != nil {
		return fmt.Errorf("push: %w", err)
	}
	fmt.Fprintf(p.out, "2. git push %s %s:refs/nostr/%s\n", p.clone, tip, pr.ID)
	msg, err := p.send(ctx, pr)
	if err != nil {
		return fmt.Errorf("PR: %w", err)
	}
	fmt.Fprintf(p.out, "3. PR signed and published: OK true %q\n", msg)
	n, err := p.servedSoon(ctx, pr.ID)
	if err != nil {
		return err
	}
	fmt.Fprintf(p.out, "4. served by the relay: %d of 1\n", n)
	if n != 1 {
		return errors.New("the PR is not served")
	}
	return nil
}

// send signs evt, publishes it and returns the relay's OK message; an OK
// false is an error carrying the message (its prefix says why: invalid:,
// restricted:, blocked:, rate-limited:, error:).
func (p publisher) send(ctx context.Context, evt *nostr.Event) (string, error) {
	if err := evt.Sign(p.sk); err != nil {
		return "", err
	}
	c, err := p.dial(ctx)
	if err != nil {
		return "", err
	}
	defer c.CloseNow()
	if err := writeJSON(ctx, c, []any{"EVENT", evt}); err != nil {
		return "", err
	}
	for {
		v, err := readJSON(ctx, c)
		if err != nil {
			return "", err
		}
		if len(v) == 4 && v[0] == "OK" && v[1] == evt.ID {
			ok, _ := v[2].(bool)
			msg, _ := v[3].(string)
			if !ok {
				return "", fmt.Errorf("OK false %q", msg)
			}
			return msg, nil
		}
	}
}

// servedSoon waits (polls) for the relay to serve every one of ids: the
// push releases what purgatory held for it, and that may finish just after
// git reports the push done.
func (p publisher) servedSoon(ctx context.Context, ids ...string) (int, error) {
	for i := 0; ; i++ {
		n, err := p.served(ctx, ids...)
		if err != nil || n == len(ids) || i == polls {
			return n, err
		}
		select {
		case <-ctx.Done():
			return n, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// served counts how many of ids the relay serves (REQ by ids until EOSE).
func (p publisher) served(ctx context.Context, ids ...string) (int, error) {
	c, err := p.dial(ctx)
	if err != nil {
		return 0, err
	}
	defer c.CloseNow()
	if err := writeJSON(ctx, c, []any{"REQ", "served", nostr.Filter{IDs: ids}}); err != nil {
		return 0, err
	}
	n := 0
	for {
		v, err := readJSON(ctx, c)
		if err != nil {
			return 0, err
		}
		switch {
		case len(v) >= 2 && v[0] == "EVENT" && v[1] == "served":
			n++
		case len(v) >= 2 && v[0] == "EOSE":
			return n, nil
		case len(v) >= 3 && v[0] == "CLOSED":
			return 0, fmt.Errorf("REQ closed: %v", v[2])
		}
	}
}

func (p publisher) dial(ctx context.Context) (*websocket.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, p.relay, nil)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", p.relay, err)
	}
	c.SetReadLimit(1 << 20)
	return c, nil
}

func writeJSON(ctx context.Context, c *websocket.Conn, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.Write(ctx, websocket.MessageText, b)
}

// readJSON reads one message; a relay silent for a minute is an error.
func readJSON(ctx context.Context, c *websocket.Conn) ([]any, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, b, err := c.Read(ctx)
	if err != nil {
		return nil, err
	}
	var v []any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("relay sent %.200q: %w", b, err)
	}
	return v, nil
}

// waitForRepository polls the clone URL as ngit does (ngit for 15 s, here
// for polls, so a busy server is not taken for a broken one): the server
// creates the bare repository when it accepts the announcement.
func (p publisher) waitForRepository(ctx context.Context) (int, error) {
	u := p.clone + "/info/refs?service=git-upload-pack"
	var last error
	for range polls {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return 0, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return resp.StatusCode, nil
			}
			err = fmt.Errorf("GET %s: %s", u, resp.Status)
		}
		last = err
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return 0, fmt.Errorf("the server did not create the repository: %w", last)
}

// localRefs are the branches and tags a state names: refs/heads/* and
// refs/tags/* with their object ids, plus refs/tags/<t>^{} with the commit
// of an annotated tag (ngit's form); head is the branch HEAD names.
func (p publisher) localRefs(ctx context.Context) (map[string]string, string, error) {
	list, err := p.git(ctx, "for-each-ref", "--format=%(refname) %(objectname) %(*objectname)", "refs/heads", "refs/tags")
	if err != nil {
		return nil, "", err
	}
	refs := map[string]string{}
	for _, line := range strings.Split(list, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		refs[f[0]] = f[1]
		if len(f) == 3 {
			refs[f[0]+"^{}"] = f[2]
		}
	}
	if len(refs) == 0 {
		return nil, "", errors.New("the repository has no branch to publish")
	}
	head, err := p.git(ctx, "symbolic-ref", "HEAD")
	if err != nil {
		return nil, "", err
	}
	if _, ok := refs[head]; !ok {
		return nil, "", fmt.Errorf("HEAD names %s, which has no commit", head)
	}
	return refs, head, nil
}

// git runs git in the repository and returns its trimmed output; an error
// carries what git printed.
func (p publisher) git(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", p.dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(b)), nil
}
