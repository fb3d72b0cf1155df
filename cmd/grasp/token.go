package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/nip98"
	"github.com/nbd-wtf/go-nostr/nip19"
)

// keyEnv names the variable --key defaults to, so CI keeps the key out of
// the command line (and out of ps).
const keyEnv = "GRASP_NOSTR_KEY"

// tokenCmd prints a NIP-98 token for a private repository (GRASP-08): what
// ngit signs itself, for plain git, agents and CI (issue 23 part 4). It is
// valid for a minute.
func tokenCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	keyArg := fs.String("key", "", "secret key: nsec1..., 64 hex, or @FILE holding one (default $"+keyEnv+")")
	rawURL := fs.String("url", "", "the repository URL (https://host/<npub>/<d>.git), or with --method the exact request URL")
	method := fs.String("method", "", "sign for this exact request URL and method (a per-request token); default: the repository's token, method GET, good for every request of one clone, fetch or push")
	format := fs.String("format", "header", "header: `Authorization: Nostr ...`; git: `http.extraHeader=...` for git -c; password: the base64 event alone (a credential helper's password)")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 || *rawURL == "" {
		fmt.Fprintln(stderr, "usage: grasp token [--key KEY|@FILE] --url URL [--method METHOD] [--format header|git|password]")
		return 2
	}
	sk, err := secretKey(*keyArg)
	if err != nil {
		fmt.Fprintf(stderr, "grasp token: %v\n", err)
		return 2
	}
	u, m := *rawURL, *method
	if m == "" {
		if u, err = nip98.CanonicalRepoURL(u); err != nil {
			fmt.Fprintf(stderr, "grasp token: %v\n", err)
			return 2
		}
		m = "GET"
	}
	tok, err := nip98.Token(sk, u, m, nil, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "grasp token: %v\n", err)
		return 1
	}
	switch *format {
	case "header":
		fmt.Fprintln(stdout, "Authorization: Nostr "+tok)
	case "git":
		fmt.Fprintln(stdout, "http.extraHeader=Authorization: Nostr "+tok)
	case "password":
		fmt.Fprintln(stdout, tok)
	default:
		fmt.Fprintf(stderr, "grasp token: --format must be header, git or password, not %q\n", *format)
		return 2
	}
	return 0
}

// secretKey reads the key: the argument, @FILE, or $GRASP_NOSTR_KEY; nsec
// or 64 hex.
func secretKey(arg string) (string, error) {
	if arg == "" {
		arg = os.Getenv(keyEnv)
		if arg == "" {
			return "", fmt.Errorf("no key: pass --key or set %s", keyEnv)
		}
	}
	if path, ok := strings.CutPrefix(arg, "@"); ok {
		b, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("read the key: %w", err)
		}
		arg = string(b)
	}
	arg = strings.TrimSpace(arg)
	if strings.HasPrefix(arg, "nsec1") {
		prefix, v, err := nip19.Decode(arg)
		if err != nil || prefix != "nsec" {
			return "", fmt.Errorf("the key is not a valid nsec")
		}
		return v.(string), nil
	}
	if !nip34.IsHex64(strings.ToLower(arg)) {
		return "", fmt.Errorf("the key must be an nsec or 64 hex digits")
	}
	return strings.ToLower(arg), nil
}
