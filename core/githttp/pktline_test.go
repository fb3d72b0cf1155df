package githttp

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/outcome"
)

func TestReadPushCommands(t *testing.T) {
	X, Y := oid('1'), oid('2')
	body := pushBody("report-status side-band-64k agent=git/2.39", git.RefUpdate{Ref: "refs/heads/main", Old: git.ZeroOID, New: X}, git.RefUpdate{Ref: "refs/tags/v1", Old: Y, New: git.ZeroOID})
	pack := []byte("PACK\x00\x00\x00\x02rest")
	r := bytes.NewReader(append(append([]byte(nil), body...), pack...))
	cmds, raw, err := ReadPushCommands(r, 1<<20, 100)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(raw, body) {
		t.Fatalf("raw = %q, want %q", raw, body)
	}
	rest := make([]byte, 100)
	n, _ := r.Read(rest)
	if !bytes.Equal(rest[:n], pack) {
		t.Fatalf("pack was consumed: rest %q", rest[:n])
	}
	if len(cmds.Updates) != 2 || !cmds.Updates[1].IsDelete() || !cmds.Has("side-band-64k") || cmds.Caps["agent"] != "git/2.39" {
		t.Fatalf("cmds = %+v", cmds)
	}

	shallow := append(pktLine("shallow "+Y+"\n"), body...)
	cmds, _, err = ReadPushCommands(bytes.NewReader(shallow), 1<<20, 100)
	if err != nil || len(cmds.Shallow) != 1 || len(cmds.Updates) != 2 {
		t.Fatalf("shallow: %+v %v", cmds, err)
	}
}

func TestReadPushCommandsBadInput(t *testing.T) {
	X := oid('1')
	good := string(pktLine(git.ZeroOID + " " + X + " refs/heads/main\x00report-status\n"))
	many := strings.Repeat(string(pktLine(git.ZeroOID+" "+X+" refs/heads/x\n")), 20) + pktFlush
	for name, in := range map[string]string{
		"empty":           "",
		"truncated len":   "00",
		"non-hex len":     "zzzz",
		"len 1..3":        "0002",
		"len too long":    "fff0" + strings.Repeat("a", 100),
		"no flush":        good,
		"short payload":   "0040" + git.ZeroOID,
		"two fields":      string(pktLine(git.ZeroOID+" "+X+"\n")) + pktFlush,
		"bad oid":         string(pktLine(git.ZeroOID+" xyz refs/heads/main\n")) + pktFlush,
		"mixed oid sizes": string(pktLine(git.ZeroOID+" "+strings.Repeat("a", 64)+" refs/heads/main\n")) + pktFlush,
		"bad ref":         string(pktLine(git.ZeroOID+" "+X+" refs/heads/../x\n")) + pktFlush,
		"ref control chr": string(pktLine(git.ZeroOID+" "+X+" refs/heads/a\x01b\n")) + pktFlush,
		"not under refs":  string(pktLine(git.ZeroOID+" "+X+" HEAD\n")) + pktFlush,
		"too many":        many,
		"too big":         good + strings.Repeat(string(pktLine(git.ZeroOID+" "+X+" refs/heads/y\n")), 40) + pktFlush,
		"shallow only":    string(pktLine("shallow "+X+"\n")) + pktFlush,
	} {
		if _, _, err := ReadPushCommands(strings.NewReader(in), 2048, 10); err == nil || !strings.HasPrefix(err.Error(), "invalid:") {
			t.Errorf("%s: err = %v, want invalid:", name, err)
		}
	}
	if cmds, _, err := ReadPushCommands(strings.NewReader(pktFlush), 2048, 10); err != nil || len(cmds.Updates) != 0 {
		t.Errorf("flush only: %+v %v", cmds, err)
	}
}

// FuzzReadPushCommands: no input panics or reads past the command list,
// and whatever parses re-encodes to something that parses the same.
func FuzzReadPushCommands(f *testing.F) {
	X := oid('1')
	f.Add(pushBody("report-status side-band-64k", git.RefUpdate{Ref: "refs/heads/main", Old: git.ZeroOID, New: X}))
	f.Add(append(pktLine("shallow "+X+"\n"), pushBody("", git.RefUpdate{Ref: "refs/nostr/" + strings.Repeat("a", 64), Old: X, New: git.ZeroOID})...))
	f.Add([]byte("0000PACK"))
	f.Add([]byte("0004"))
	f.Add([]byte("ffff"))
	f.Fuzz(func(t *testing.T, in []byte) {
		cmds, raw, err := ReadPushCommands(bytes.NewReader(in), 4096, 16)
		if len(raw) > len(in) || !bytes.Equal(raw, in[:len(raw)]) {
			t.Fatalf("raw %q is not a prefix of the input", raw)
		}
		if err != nil {
			return
		}
		for _, u := range cmds.Updates {
			if git.CheckRefName(u.Ref) != nil || !nip34.IsObjectID(u.Old) || !nip34.IsObjectID(u.New) {
				t.Fatalf("accepted bad update %+v", u)
			}
		}
		again, _, err := ReadPushCommands(bytes.NewReader(encodePushCommands(cmds)), 1<<20, 16)
		if err != nil {
			t.Fatalf("re-encoded commands do not parse: %v", err)
		}
		if !reflect.DeepEqual(again.Updates, cmds.Updates) || !reflect.DeepEqual(again.Shallow, cmds.Shallow) || len(again.Caps) != len(cmds.Caps) {
			t.Fatalf("round trip: %+v != %+v", again, cmds)
		}
	})
}

// A command list git's protocol cannot carry is refused as a typed
// invalid: outcome (issue 28 part 1), whatever the malformation.
func TestReadPushCommandsRefusalsAreTyped(t *testing.T) {
	for name, in := range map[string]string{
		"bad length": "zzzz",
		"bad ref":    string(pktLine(git.ZeroOID+" "+oid('1')+" refs/heads/a..b\n")) + pktFlush,
		"truncated":  "00",
	} {
		_, _, err := ReadPushCommands(strings.NewReader(in), 2048, 10)
		if r, ok := outcome.Of(err); !ok || r.Kind != outcome.Invalid || strings.HasPrefix(r.Msg, "invalid") {
			t.Errorf("%s: %v is %+v (typed %v), want an invalid: outcome", name, err, r, ok)
		}
	}
}
