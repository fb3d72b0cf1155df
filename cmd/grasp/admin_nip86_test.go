package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 25 part 3: `grasp admin <method>` is a thin NIP-86 client of the
// running server, signed with an operator key from $GRASP_ADMIN_KEY or a
// key file: a ban takes effect at once (the banned key's event is
// refused), lists read back, kinds are disallowed and listed, every change
// is in the server's log at info with the key that made it, and a key that
// is not the operator's is refused.
func TestAdminNIP86Verbs(t *testing.T) {
	op, banned := newKey(t), newKey(t)
	in := newInstance(t, fmt.Sprintf("[relay]\npubkey = %q\n", op.Npub))
	p := startServer(t, in)
	keyEnv := []string{"GRASP_ADMIN_KEY=" + op.SK}

	code, out, errOut := runGrasp(t, t.TempDir(), nil, keyEnv, "admin", "banpubkey", "--config", in.Config, banned.Npub, "spam")
	if code != 0 || strings.TrimSpace(out) != "true" {
		t.Fatalf("admin banpubkey = %d %q %q", code, out, errOut)
	}
	evt, err := banned.build(1621, nil, "x", 0)
	if err != nil {
		t.Fatal(err)
	}
	if ok, msg := publishOK(t, in.Relay(), evt); ok || !strings.HasPrefix(msg, "blocked:") {
		t.Fatalf("the banned key's event: %v %q", ok, msg)
	}
	code, out, _ = runGrasp(t, t.TempDir(), nil, keyEnv, "admin", "listbannedpubkeys", "--config", in.Config)
	if code != 0 || !strings.Contains(out, banned.PK) || !strings.Contains(out, "spam") {
		t.Fatalf("admin listbannedpubkeys = %d %q", code, out)
	}
	keyFile := filepath.Join(t.TempDir(), "op.key")
	if err := os.WriteFile(keyFile, []byte(op.SK+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runGrasp(t, t.TempDir(), nil, nil, "admin", "disallowkind", "--config", in.Config, "--key-file", keyFile, "9806"); code != 0 {
		t.Fatalf("admin disallowkind = %d %q", code, errOut)
	}
	if code, out, _ := runGrasp(t, t.TempDir(), nil, keyEnv, "admin", "listdisallowedkinds", "--relay", in.Relay()); code != 0 || strings.TrimSpace(out) != `[9806]` {
		t.Fatalf("admin listdisallowedkinds = %d %q", code, out)
	}
	p.waitLog(t, func(m logLine) bool {
		return m.Msg() == "NIP-86 change" && m.Str("method") == "banpubkey" && m.Str("by") == op.Npub && m["@level"] == "info"
	})

	// Not the operator's key; no key at all.
	if code, _, errOut := runGrasp(t, t.TempDir(), nil, []string{"GRASP_ADMIN_KEY=" + banned.SK}, "admin", "unbanpubkey", "--config", in.Config, banned.PK); code != 1 || !strings.Contains(errOut, "restricted:") {
		t.Fatalf("a non-operator key: %d %q", code, errOut)
	}
	if code, _, errOut := runGrasp(t, t.TempDir(), nil, []string{"GRASP_ADMIN_KEY="}, "admin", "listbannedpubkeys", "--config", in.Config); code != 1 || !strings.Contains(errOut, "no operator key") {
		t.Fatalf("no key: %d %q", code, errOut)
	}
}
