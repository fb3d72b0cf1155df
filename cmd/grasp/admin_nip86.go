package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr/nip19"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/nip86"
)

// `grasp admin <method> [params]`: the NIP-86 methods (issue 25 part 3) as
// a thin client of the running relay's public endpoint, signed with an
// operator key (relay.pubkey or relay.admin_pubkeys) read from
// --key-file or GRASP_ADMIN_KEY (nsec or hex). The relay is
// server.public_url's, or --relay.

const nip86Usage = `  grasp admin METHOD [--config FILE] [--relay URL] [--key-file FILE] [PARAM...]
                                       a NIP-86 call to the running relay, signed with an operator key
                                       (--key-file or $GRASP_ADMIN_KEY, nsec or hex); METHOD is one of
                                       supportedmethods, banpubkey PUBKEY [REASON], unbanpubkey, listbannedpubkeys,
                                       allowpubkey, unallowpubkey, listallowedpubkeys, banevent ID [REASON],
                                       unbanevent, allowevent, unallowevent, listbannedevents, listallowedevents,
                                       allowkind KIND, disallowkind KIND, listallowedkinds, listdisallowedkinds,
                                       blockip IP|CIDR [REASON], unblockip, listblockedips, changerelayname NAME,
                                       changerelaydescription TEXT, changerelayicon URL
`

// isNIP86Verb reports whether an admin verb is a NIP-86 method.
func isNIP86Verb(v string) bool { return slices.Contains(nip86.Methods, v) }

func adminNIP86(method string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("admin "+method, flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "path to grasp.toml")
	relay := fs.String("relay", "", "the relay's URL (default: server.public_url's)")
	keyFile := fs.String("key-file", "", "file holding the operator's secret key (nsec or hex); default $GRASP_ADMIN_KEY")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	url := *relay
	if url == "" {
		cfg, err := loadConfigFile(*path)
		if err != nil {
			fmt.Fprintf(stderr, "%v\n", err)
			return 1
		}
		url = cfg.RelayURL()
	}
	sk, err := operatorKey(*keyFile)
	if err != nil {
		fmt.Fprintf(stderr, "grasp admin %s: %v\n", method, err)
		return 1
	}
	var params []any
	for _, p := range fs.Args() {
		if method == "allowkind" || method == "disallowkind" {
			if n, err := strconv.Atoi(p); err == nil {
				params = append(params, n)
				continue
			}
		}
		if method != "changerelayname" && method != "changerelaydescription" && strings.HasPrefix(p, "npub1") {
			if hex, ok := nip34.PubkeyHex(p); ok {
				p = hex
			}
		}
		params = append(params, p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := nip86.Call(ctx, nil, url, sk, method, params...)
	if err != nil {
		fmt.Fprintf(stderr, "grasp admin %s: %v\n", method, err)
		return 1
	}
	fmt.Fprintln(stdout, string(res))
	return 0
}

// operatorKey reads the operator's secret key as hex.
func operatorKey(file string) (string, error) {
	raw := os.Getenv("GRASP_ADMIN_KEY")
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("read the key file: %w", err)
		}
		raw = string(b)
	}
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", fmt.Errorf("no operator key: give --key-file or set GRASP_ADMIN_KEY (nsec or hex)")
	}
	if strings.HasPrefix(raw, "nsec1") {
		_, v, err := nip19.Decode(raw)
		if err != nil {
			return "", fmt.Errorf("the operator key is not a valid nsec: %w", err)
		}
		s, _ := v.(string)
		return s, nil
	}
	if !nip34.IsHex64(strings.ToLower(raw)) {
		return "", fmt.Errorf("the operator key is neither an nsec nor 64 hex characters")
	}
	return strings.ToLower(raw), nil
}
