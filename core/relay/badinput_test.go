package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// Bad inputs of relays.md §5, groups 1-6, as far as they reach khatru and
// this package. Raw framing limits beyond khatru's read limit, subscription
// counts and slow readers belong to the websocket front.

var smallLimits = config.Limits{
	MaxEventBytes: 4000, MaxContentBytes: 1000, MaxEventTags: 50, MaxTagValueBytes: 100,
	CreatedAtLowerLimit: config.Duration(24 * time.Hour), MaxFiltersPerReq: 5, MaxFilterItems: 10, MaxTagsPerFilter: 2,
	MaxMessageBytes: 64 << 10,
}

type expect string

const (
	expNotice  expect = "NOTICE"
	expOKFalse expect = "OK false"
	expOKTrue  expect = "OK true"
	expClosed  expect = "CLOSED"
	expEOSE    expect = "EOSE" // answered normally
	expNothing expect = "nothing"
	expError   expect = "a clean error" // NOTICE, CLOSED or OK false
)

type badCase struct {
	name  string
	frame string
	want  expect
	// reason, when set, must prefix the OK/CLOSED message.
	reason string
	binary bool
}

// run sends each frame, then a probe REQ, and reads until it has seen both
// the expected answer and the probe's EOSE: the relay must answer cleanly
// and keep serving the same connection.
func runBadCases(t *testing.T, c *client, cases []badCase) {
	t.Helper()
	for i, bc := range cases {
		if bc.binary {
			ctx, cancel := contextWithWait(t)
			if err := c.c.Write(ctx, websocket.MessageBinary, []byte(bc.frame)); err != nil {
				t.Fatalf("%s: write: %v", bc.name, err)
			}
			cancel()
		} else {
			c.send(bc.frame)
		}
		probe := "probe" + strconv.Itoa(i)
		c.send(`["REQ",` + strconv.Quote(probe) + `,{"limit":1}]`)
		var got []string
		answered := bc.want == expNothing
		probed := false
		c.readUntil(func(m []json.RawMessage) bool {
			switch l := label(m); {
			case l == "EOSE" && str(m, 1) == probe:
				probed = true
			case l == "EVENT" && str(m, 1) == probe:
			case l == "NOTICE":
				got = append(got, "NOTICE "+str(m, 1))
				answered = answered || bc.want == expNotice || bc.want == expError
			case l == "OK" && len(m) > 2:
				ok := string(m[2]) == "true"
				got = append(got, fmt.Sprintf("OK %v %s", ok, str(m, 3)))
				if (bc.want == expOKFalse && !ok) || (bc.want == expOKTrue && ok) {
					answered = strings.HasPrefix(str(m, 3), bc.reason)
				}
				answered = answered || (bc.want == expError && !ok)
			case l == "CLOSED":
				got = append(got, "CLOSED "+str(m, 2))
				if bc.want == expClosed {
					answered = strings.HasPrefix(str(m, 2), bc.reason)
				}
				answered = answered || bc.want == expError
			case l == "EOSE":
				got = append(got, "EOSE")
				answered = answered || bc.want == expEOSE
			}
			if !answered && probed && len(got) > 0 {
				// A wrong answer arrived: stop waiting and report it.
				return true
			}
			return answered && probed
		})
		if !answered {
			t.Errorf("%s: want %s %q, got %q", bc.name, bc.want, bc.reason, got)
		}
	}
}

func contextWithWait(t testing.TB) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), testwait.Limit(t))
}

// eventually polls cond for state that khatru changes asynchronously (its
// context cancellations run on their own goroutines).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, what, cond)
}

func eventJSON(t *testing.T, evt *nostr.Event, mutate func(m map[string]any)) string {
	t.Helper()
	b, _ := json.Marshal(evt)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if mutate != nil {
		mutate(m)
	}
	out, _ := json.Marshal([]any{"EVENT", m})
	return string(out)
}

func rawEvent(t *testing.T, k key, kind int, created int64, tags nostr.Tags, content string) string {
	return eventJSON(t, k.event(t, kind, created, tags, content), nil)
}

func TestBadInputsGetCleanErrors(t *testing.T) {
	tr := startRelay(t, Options{Limits: smallLimits})
	a := newKey(t)
	now := time.Now().Unix()
	valid := a.event(t, 1, now, nil, "valid")

	t.Run("framing", func(t *testing.T) {
		runBadCases(t, connect(t, tr.ws), []badCase{
			{name: "not json", frame: "not json", want: expNotice},
			{name: "truncated", frame: `["REQ","x",{"kinds":[1]`, want: expNotice},
			{name: "empty", frame: "", want: expNotice},
			{name: "newline", frame: "\n", want: expNotice},
			{name: "deep nesting", frame: strings.Repeat("[", 30000) + strings.Repeat("]", 30000), want: expNotice},
			{name: "binary garbage", frame: "\x00\x01\xff", want: expNotice, binary: true},
			{name: "huge number kind", frame: `["EVENT",{"kind":1e400}]`, want: expNotice},
			{name: "invalid utf-8", frame: "[\"REQ\",\"x\xff\",{}]", want: expClosed, reason: "invalid:"},
		})
	})

	t.Run("verbs", func(t *testing.T) {
		runBadCases(t, connect(t, tr.ws), []badCase{
			{name: "unknown verb", frame: `["FOO","bar"]`, want: expNotice},
			{name: "EVENT without event", frame: `["EVENT"]`, want: expNotice},
			{name: "REQ alone", frame: `["REQ"]`, want: expNotice},
			{name: "CLOSE alone", frame: `["CLOSE"]`, want: expNotice},
			{name: "numeric sub id", frame: `["REQ",5,{}]`, want: expError},
			// The gate answers a REQ without a usable id with NOTICE: there is
			// no id to CLOSE (before issue 9 this ran khatru without the gate).
			{name: "empty sub id", frame: `["REQ","",{}]`, want: expNotice},
			{name: "sub id of 65 chars", frame: `["REQ","` + strings.Repeat("s", 65) + `",{}]`, want: expClosed, reason: "invalid:"},
			{name: "long sub id with limit 0", frame: `["REQ","` + strings.Repeat("s", 65) + `",{"limit":0}]`, want: expClosed, reason: "invalid:"},
			{name: "CLOSE of unknown sub", frame: `["CLOSE","never-opened"]`, want: expNothing},
		})
	})

	t.Run("event fields", func(t *testing.T) {
		set := func(k string, v any) func(map[string]any) { return func(m map[string]any) { m[k] = v } }
		runBadCases(t, connect(t, tr.ws), []badCase{
			{name: "uppercase id", frame: eventJSON(t, valid, set("id", strings.ToUpper(valid.ID))), want: expOKFalse, reason: "invalid:"},
			{name: "short id", frame: eventJSON(t, valid, set("id", valid.ID[:63])), want: expOKFalse, reason: "invalid:"},
			{name: "pubkey not a point", frame: eventJSON(t, valid, set("pubkey", strings.Repeat("f", 64))), want: expOKFalse},
			{name: "zero sig", frame: eventJSON(t, valid, set("sig", strings.Repeat("0", 128))), want: expOKFalse, reason: "invalid:"},
			{name: "short sig", frame: eventJSON(t, valid, set("sig", valid.Sig[:126])), want: expOKFalse},
			{name: "other key's sig", frame: eventJSON(t, valid, set("sig", newKey(t).event(t, 1, now, nil, "valid").Sig)), want: expOKFalse},
			{name: "kind as string", frame: eventJSON(t, valid, set("kind", "1")), want: expNotice},
			{name: "tags not an array", frame: eventJSON(t, valid, set("tags", "x")), want: expNotice},
			{name: "tag element not a string", frame: eventJSON(t, valid, set("tags", []any{[]any{"t", 5}})), want: expNotice},
			{name: "content not a string", frame: eventJSON(t, valid, set("content", 5)), want: expNotice},
			{name: "created_at as float", frame: eventJSON(t, valid, set("created_at", 1.5)), want: expNotice},
			{name: "negative kind", frame: rawEvent(t, a, -1, now, nil, "neg"), want: expOKFalse, reason: "invalid:"},
			{name: "kind above 65535", frame: rawEvent(t, a, 70000, now, nil, "big"), want: expOKFalse, reason: "invalid:"},
			{name: "created_at before 1970", frame: rawEvent(t, a, 1, -100, nil, "old"), want: expOKFalse, reason: "invalid:"},
			{name: "created_at too old", frame: rawEvent(t, a, 1, now-3*86400, nil, "old"), want: expOKFalse, reason: "invalid: created_at"},
			{name: "created_at far future", frame: rawEvent(t, a, 1, now+86400*365, nil, "future"), want: expOKFalse, reason: "invalid: created_at"},
			{name: "created_at above 2^32", frame: rawEvent(t, a, 1, 1<<33, nil, "far"), want: expOKFalse, reason: "invalid:"},
			{name: "empty tag", frame: rawEvent(t, a, 1, now, nostr.Tags{{}}, "empty tag"), want: expOKTrue},
			{name: "extra field", frame: eventJSON(t, a.event(t, 1, now, nil, "extra"), set("extra", "x")), want: expError},
			{name: "ephemeral", frame: rawEvent(t, a, 20001, now, nil, "eph"), want: expOKFalse, reason: "blocked:"},
		})
	})

	t.Run("sizes", func(t *testing.T) {
		many := func(n, size int) nostr.Tags {
			tags := make(nostr.Tags, n)
			for i := range tags {
				tags[i] = nostr.Tag{"t", strings.Repeat("x", size)}
			}
			return tags
		}
		runBadCases(t, connect(t, tr.ws), []badCase{
			{name: "too many tags", frame: rawEvent(t, a, 1, now, many(51, 1), "tags"), want: expOKFalse, reason: "invalid: too many tags"},
			{name: "tag value too large", frame: rawEvent(t, a, 1, now, many(1, 101), "tag"), want: expOKFalse, reason: "invalid: tag value"},
			{name: "content too large", frame: rawEvent(t, a, 1, now, nil, strings.Repeat("c", 1001)), want: expOKFalse, reason: "invalid: content"},
			{name: "event too large", frame: rawEvent(t, a, 1, now, many(40, 99), "big"), want: expOKFalse, reason: "invalid: event too large"},
			{name: "large list under the limits", frame: rawEvent(t, a, 3, now, many(45, 64), ""), want: expOKTrue},
			{name: "kind 5 over the limits deletes nothing", frame: rawEvent(t, a, 5, now, append(many(50, 1), nostr.Tag{"e", valid.ID}), ""), want: expOKFalse},
		})
		// A frame above MaxMessageBytes ends that connection (close 1009);
		// the relay keeps serving others.
		c := connect(t, tr.ws)
		ctx, cancel := contextWithWait(t)
		defer cancel()
		// The relay may cut the connection before the write completes.
		werr := c.c.Write(ctx, websocket.MessageText, []byte(`["EVENT",`+strings.Repeat(" ", 70<<10)+`{}]`))
		if _, _, err := c.c.Read(ctx); err == nil {
			t.Error("oversized frame: the connection must be closed")
		} else if werr == nil && websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
			t.Errorf("oversized frame: want close 1009, got %v", err)
		}
		runBadCases(t, connect(t, tr.ws), []badCase{{name: "after oversized frame", frame: `["REQ","x",{}]`, want: expEOSE}})
	})

	t.Run("filters", func(t *testing.T) {
		hex := strings.Repeat("a", 64)
		tooMany := make([]string, 11)
		for i := range tooMany {
			tooMany[i] = strconv.Quote(fmt.Sprintf("%064x", i))
		}
		runBadCases(t, connect(t, tr.ws), []badCase{
			{name: "too many filters", frame: `["REQ","f",{},{},{},{},{},{}]`, want: expClosed, reason: "blocked: too many filters"},
			{name: "too many limit-0 filters", frame: `["REQ","f0",{"limit":0},{"limit":0},{"limit":0},{"limit":0},{"limit":0},{"limit":0}]`, want: expClosed, reason: "blocked:"},
			{name: "too many ids", frame: `["REQ","f",{"ids":[` + strings.Join(tooMany, ",") + `]}]`, want: expClosed, reason: "blocked:"},
			{name: "id prefix", frame: `["REQ","f",{"ids":["abcd"]}]`, want: expClosed, reason: "invalid:"},
			{name: "non-hex id", frame: `["REQ","f",{"ids":["` + strings.Repeat("z", 64) + `"]}]`, want: expClosed, reason: "invalid:"},
			{name: "non-hex author", frame: `["REQ","f",{"authors":["` + strings.ToUpper(hex) + `"]}]`, want: expClosed, reason: "invalid:"},
			{name: "negative limit", frame: `["REQ","f",{"limit":-5}]`, want: expEOSE},
			{name: "huge limit", frame: `["REQ","f",{"limit":100000000000}]`, want: expEOSE},
			{name: "float limit", frame: `["REQ","f",{"limit":1.5}]`, want: expNotice},
			{name: "since after until", frame: `["REQ","f",{"since":200,"until":100}]`, want: expClosed, reason: "invalid:"},
			{name: "unknown keys", frame: `["REQ","f",{"foo":"bar","kinds":[1]}]`, want: expEOSE},
			{name: "multi-letter tag", frame: `["REQ","f",{"#tt":["x"]}]`, want: expClosed, reason: "invalid:"},
			{name: "too many tag filters", frame: `["REQ","f",{"#a":["x"],"#b":["y"],"#c":["z"]}]`, want: expClosed, reason: "blocked:"},
			{name: "search", frame: `["REQ","f",{"search":"x"}]`, want: expClosed, reason: "blocked:"},
			{name: "negative kind", frame: `["REQ","f",{"kinds":[-1]}]`, want: expClosed, reason: "invalid:"},
			{name: "empty filter", frame: `["REQ","f",{}]`, want: expEOSE},
			// NIP-45: a refused COUNT is CLOSED with the reason, like a REQ
			// (khatru, without the gate, sent a NOTICE).
			{name: "COUNT with a bad filter", frame: `["COUNT","n",{"ids":["abcd"]}]`, want: expClosed, reason: "invalid:"},
		})
	})
}

func TestSubscriptionReplacementAndChurn(t *testing.T) {
	tr := startRelay(t, Options{})
	a, b := newKey(t), newKey(t)
	sub := connect(t, tr.ws)
	sub.send(fmt.Sprintf(`["REQ","s",{"authors":[%q]}]`, a.PK))
	sub.readUntil(func(m []json.RawMessage) bool { return label(m) == "EOSE" })
	// NIP-01: same id replaces the subscription.
	sub.send(fmt.Sprintf(`["REQ","s",{"authors":[%q]}]`, b.PK))
	sub.readUntil(func(m []json.RawMessage) bool { return label(m) == "EOSE" })

	pub := connect(t, tr.ws)
	fromA := a.event(t, 1, time.Now().Unix(), nil, "a")
	fromB := b.event(t, 1, time.Now().Unix(), nil, "b")
	mustPublish(t, pub, fromA)
	mustPublish(t, pub, fromB)
	if got := nextEvent(t, sub); got != fromB.ID {
		t.Fatalf("replaced subscription still receives the old filter's events (%s)", got)
	}

	// Churn: bounded REQ/CLOSE loop; every closed REQ leaves the registry.
	churn := connect(t, tr.ws)
	// khatru handles each frame on its own goroutine, so a CLOSE sent right
	// behind its REQ can be handled first and the REQ then stays open (in
	// khatru and here); the client waits for EOSE as a real one would.
	for i := range 200 {
		id := "c" + strconv.Itoa(i)
		churn.send(`["REQ","` + id + `",{"kinds":[1],"limit":1}]`)
		churn.readUntil(func(m []json.RawMessage) bool { return label(m) == "EOSE" && str(m, 1) == id })
		churn.send(`["CLOSE","` + id + `"]`)
	}
	runBadCases(t, churn, []badCase{{name: "after churn", frame: `["REQ","x",{}]`, want: expEOSE}})
	churn.send(`["CLOSE","x"]`)
	churn.send(`["CLOSE","probe0"]`)
	// Only the replaced subscription "s" stays.
	eventually(t, "closed subscriptions leave the registry", func() bool { return tr.srv.gate.Subscriptions() == 1 })
	sub.c.CloseNow()
	eventually(t, "a disconnect empties the registry", func() bool { return tr.srv.gate.Subscriptions() == 0 })
}
