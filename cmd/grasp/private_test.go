package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip42"

	"github.com/grasp-dev/grasp/internal/testwait"
)

// GRASP-08 with the real binary and stock git (issue 23 parts 3 and 4).

// signedIn dials in and authenticates as k: a REQ for k's kind-10318 list
// brings the challenge (also where nothing is private yet).
func signedIn(t *testing.T, ctx context.Context, in instance, k key) *wsClient {
	t.Helper()
	w, err := dialRelay(ctx, in.Relay())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.close)
	if err := w.send(ctx, &nostr.ReqEnvelope{SubscriptionID: "hello", Filters: nostr.Filters{{Kinds: []int{10318}, Authors: []string{k.PK}}}}); err != nil {
		t.Fatal(err)
	}
	for {
		env, err := w.next(ctx)
		if err != nil {
			t.Fatalf("waiting for the challenge: %v", err)
		}
		if a, ok := env.(*nostr.AuthEnvelope); ok && a.Challenge != nil {
			evt := nip42.CreateUnsignedAuthEvent(*a.Challenge, k.PK, in.Relay())
			if err := evt.Sign(k.SK); err != nil {
				t.Fatal(err)
			}
			if err := w.send(ctx, &nostr.AuthEnvelope{Event: evt}); err != nil {
				t.Fatal(err)
			}
			for {
				env, err := w.next(ctx)
				if err != nil {
					t.Fatalf("waiting for the AUTH OK: %v", err)
				}
				if ok, isOK := env.(*nostr.OKEnvelope); isOK && ok.EventID == evt.ID {
					if !ok.OK {
						t.Fatalf("AUTH refused: %s", ok.Reason)
					}
					return w
				}
			}
		}
	}
}

// keyFile writes k's secret key to a file for `grasp token --key @FILE`.
func keyFile(t *testing.T, k key) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(p, []byte(k.SK+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// graspToken runs `grasp token` and returns its one line of output.
func graspToken(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := runGrasp(t, t.TempDir(), nil, nil, append([]string{"token"}, args...)...)
	if code != 0 {
		t.Fatalf("grasp token %v: exit %d: %s", args, code, errOut)
	}
	return strings.TrimSpace(out)
}

// privateRepo publishes owner's private announcement and its state at
// tip on in, through a connection authenticated as owner.
func privateRepo(t *testing.T, ctx context.Context, in instance, owner key, d, tip string) *wsClient {
	t.Helper()
	w := signedIn(t, ctx, in, owner)
	ann := owner.sign(t, 30617, nostr.Tags{{"d", d}, {"clone", cloneURL(in, owner, d)}, {"relays", in.Relay()}, {"private", "true"}}, "", 0)
	for _, evt := range []*nostr.Event{ann, state(t, owner, d, tip, 0)} {
		if ok, msg, err := w.publish(ctx, evt); err != nil || !ok {
			t.Fatalf("kind %d: %v %q", evt.Kind, err, msg)
		}
	}
	return w
}

// Part 4: stock git pushes more than 1 MiB to a private repository through
// a credential helper. git answers the 401 by asking the helper, which runs
// `grasp token --format password` (HTTP Basic, any user name); above
// http.postBuffer git first sends its credential probe (a POST of "0000"),
// which the server admits without a token and without looking the
// repository up. The pushed tip is then served to the owner, and a clone
// without the helper is refused.
func TestG08_StockGitThroughACredentialHelperPushesOver1MiB(t *testing.T) {
	in := newInstance(t, "[grasp]\nprivate_repositories = true\n")
	startServer(t, in)
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Limit(t))
	defer cancel()
	owner := newKey(t)
	r := newGitRepo(t)
	big := make([]byte, 3<<20) // incompressible: the pack stays above 1 MiB
	rand.Read(big)
	if err := os.WriteFile(filepath.Join(r.dir, "big.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	r.must(t, "add", "big.bin")
	tip := r.commit(t, "three MiB of secrets")
	privateRepo(t, ctx, in, owner, "vault", tip)
	url := cloneURL(in, owner, "vault")

	helper := filepath.Join(t.TempDir(), "git-credential-grasp")
	script := fmt.Sprintf("#!/bin/sh\ntest \"$1\" = get || exit 0\necho username=nostr\nprintf 'password='\n%s=1 exec %q token --key @%s --url %q --format password\n",
		childEnv, os.Args[0], keyFile(t, owner), url)
	if err := os.WriteFile(helper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	withHelper := []string{"-c", "credential.helper=" + helper, "-c", "http.postBuffer=65536"}
	if out, err := r.git("push", url, "main:refs/heads/main"); err == nil {
		t.Fatalf("a push without credentials was accepted:\n%s", out)
	}
	out, err := r.git(append(withHelper, "push", "--porcelain", url, "main:refs/heads/main")...)
	if err != nil {
		t.Fatalf("push through the credential helper: %v\n%s", err, out)
	}
	if refs, err := r.git(append(withHelper, "ls-remote", url)...); err != nil || !strings.Contains(refs, tip+"\trefs/heads/main") {
		t.Fatalf("ls-remote through the helper: %v\n%s", err, refs)
	}
	if out, err := r.git("clone", "-q", url, filepath.Join(t.TempDir(), "c")); err == nil {
		t.Fatalf("a clone without credentials succeeded:\n%s", out)
	}
	// the probe, exactly as git sends it: an empty 200, the same for a
	// repository that does not exist (no existence oracle)
	for _, u := range []string{url, cloneURL(in, newKey(t), "nothing-here")} {
		req, _ := http.NewRequest(http.MethodPost, u+"/git-receive-pack", strings.NewReader("0000"))
		req.Header.Set("Content-Type", "application/x-git-receive-pack-request")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || len(body) != 0 {
			t.Fatalf("probe to %s: %d %q, want an empty 200", u, resp.StatusCode, body)
		}
	}
	// anything else without a token is refused
	req, _ := http.NewRequest(http.MethodPost, url+"/git-receive-pack", strings.NewReader("0001"))
	req.Header.Set("Content-Type", "application/x-git-receive-pack-request")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a receive-pack POST that is not the probe: %d, want 401", resp.StatusCode)
	}
}

// `grasp token`: the repository's token (u the canonical root, method
// GET), a per-request token (--method), the three formats, a key from a
// file or the environment; a bad key or URL is a usage error.
func TestGraspTokenPrintsAShortLivedNIP98Token(t *testing.T) {
	k := newKey(t)
	decode := func(t *testing.T, b64 string) nostr.Event {
		t.Helper()
		raw, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			t.Fatal(err)
		}
		var evt nostr.Event
		if err := json.Unmarshal(raw, &evt); err != nil {
			t.Fatal(err)
		}
		if ok, _ := evt.CheckSignature(); !ok || evt.PubKey != k.PK || evt.Kind != 27235 {
			t.Fatalf("token event: kind %d by %s, signature ok %v", evt.Kind, evt.PubKey, ok)
		}
		if d := time.Since(evt.CreatedAt.Time()); d < -time.Minute || d > time.Minute {
			t.Fatalf("token dated %v from now", d)
		}
		return evt
	}
	file := keyFile(t, k)
	hdr := graspToken(t, "--key", "@"+file, "--url", "https://user@git.example.com/npub1x/vault.git/?x=1#f")
	b64, ok := strings.CutPrefix(hdr, "Authorization: Nostr ")
	if !ok {
		t.Fatalf("header format: %q", hdr)
	}
	evt := decode(t, b64)
	if tagValue(evt, "u") != "https://git.example.com/npub1x/vault.git" || tagValue(evt, "method") != "GET" {
		t.Fatalf("repository token tags: %v", evt.Tags)
	}
	gitForm := graspToken(t, "--key", k.SK, "--url", "https://git.example.com/npub1x/vault.git", "--format", "git")
	if !strings.HasPrefix(gitForm, "http.extraHeader=Authorization: Nostr ") {
		t.Fatalf("git format: %q", gitForm)
	}
	code, out, _ := runGrasp(t, t.TempDir(), nil, []string{keyEnv + "=" + k.SK}, "token", "--url", "https://git.example.com/npub1x/vault.git/git-upload-pack",
		"--method", "post", "--format", "password")
	if code != 0 {
		t.Fatalf("key from the environment: exit %d", code)
	}
	evt = decode(t, strings.TrimSpace(out))
	if tagValue(evt, "u") != "https://git.example.com/npub1x/vault.git/git-upload-pack" || tagValue(evt, "method") != "POST" {
		t.Fatalf("per-request token tags: %v", evt.Tags)
	}
	for name, args := range map[string][]string{
		"bad key":    {"--key", "nope", "--url", "https://git.example.com/x.git"},
		"no url":     {"--key", k.SK},
		"ftp url":    {"--key", k.SK, "--url", "ftp://git.example.com/x.git"},
		"bad format": {"--key", k.SK, "--url", "https://git.example.com/x.git", "--format", "xml"},
	} {
		if code, _, _ := runGrasp(t, t.TempDir(), nil, []string{keyEnv + "="}, append([]string{"token"}, args...)...); code != 2 {
			t.Errorf("%s: exit %d, want 2", name, code)
		}
	}
}

// Part 3: SIGHUP applies grasp.private_members. A member removed from the
// file loses, at once and without a restart, its open subscription naming
// a private repository (CLOSED restricted:) and git access (403), while
// the owner keeps both (positive control).
func TestG08_SIGHUPRemovesAMemberAtOnce(t *testing.T) {
	staff := newKey(t)
	in := newInstance(t, fmt.Sprintf("[grasp]\nprivate_repositories = true\nprivate_members = [%q]\n", staff.Npub))
	p := startServer(t, in)
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Limit(t))
	defer cancel()
	owner := newKey(t)
	r := newGitRepo(t)
	tip := r.commit(t, "secret")
	privateRepo(t, ctx, in, owner, "vault", tip)
	url := cloneURL(in, owner, "vault")
	coord := "30617:" + owner.PK + ":vault"
	sw := signedIn(t, ctx, in, staff)
	if err := sw.send(ctx, &nostr.ReqEnvelope{SubscriptionID: "repo", Filters: nostr.Filters{{Tags: nostr.TagMap{"a": {coord}}}}}); err != nil {
		t.Fatal(err)
	}
	waitFor := func(what string, match func(nostr.Envelope) bool) nostr.Envelope {
		t.Helper()
		for {
			env, err := sw.next(ctx)
			if err != nil {
				t.Fatalf("waiting for %s: %v", what, err)
			}
			if match(env) {
				return env
			}
		}
	}
	waitFor("EOSE", func(env nostr.Envelope) bool { e, ok := env.(*nostr.EOSEEnvelope); return ok && string(*e) == "repo" })
	infoRefs := func(k key) int {
		tok := graspToken(t, "--key", k.SK, "--url", url)
		code, _, _ := httpGet(t, url+"/info/refs?service=git-upload-pack", map[string]string{"Authorization": strings.TrimPrefix(tok, "Authorization: ")})
		return code
	}
	if code := infoRefs(staff); code != http.StatusOK {
		t.Fatalf("the member's token before the reload: %d", code)
	}
	in.writeConfig(t, "[grasp]\nprivate_repositories = true\nprivate_members = []\n")
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	env := waitFor("CLOSED", func(env nostr.Envelope) bool {
		e, ok := env.(*nostr.ClosedEnvelope)
		return ok && e.SubscriptionID == "repo"
	})
	if reason := env.(*nostr.ClosedEnvelope).Reason; !strings.HasPrefix(reason, "restricted:") {
		t.Fatalf("the removed member's subscription: CLOSED %q, want restricted:", reason)
	}
	if code := infoRefs(staff); code != http.StatusForbidden {
		t.Fatalf("the removed member's token after the reload: %d, want 403", code)
	}
	if code := infoRefs(owner); code != http.StatusOK {
		t.Fatalf("the owner's token after the reload: %d", code)
	}
}

func tagValue(evt nostr.Event, name string) string {
	if t := evt.Tags.Find(name); t != nil {
		return t[1]
	}
	return ""
}
