package config

import (
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
)

func TestParseDuration(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
	}{
		{"15m", 15 * time.Minute},
		{"500ms", 500 * time.Millisecond},
		{"7d", 7 * 24 * time.Hour},
		{"24h", 24 * time.Hour},
		{"1d12h", 36 * time.Hour},
		{"1h30m", 90 * time.Minute},
		{"0s", 0},
		{"0d", 0},
		{" 5s ", 5 * time.Second},
		{"-5m", -5 * time.Minute},
		{"1095d", 1095 * 24 * time.Hour},
	}
	for _, tc := range cases {
		got, err := ParseDuration(tc.in)
		if err != nil || got.D() != tc.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tc.in, got.D(), err, tc.want)
		}
	}
}

func TestParseDurationRejects(t *testing.T) {
	for _, in := range []string{"", "5", "d", "1.5d", "5x", "1d-5m", "d5h", "3 minutes", "99999999999d", "106751d23h47m16s854775808ns"} {
		if got, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error", in, got.D())
		}
	}
}

func TestDurationStringRoundTrips(t *testing.T) {
	cases := map[time.Duration]string{
		0:                                  "0s",
		500 * time.Millisecond:             "500ms",
		15 * time.Minute:                   "15m",
		90 * time.Minute:                   "1h30m",
		7 * 24 * time.Hour:                 "7d",
		36*time.Hour + 2*time.Second:       "1d12h2s",
		1500 * time.Microsecond:            "1ms500us",
		-65 * time.Second:                  "-1m5s",
		time.Duration(1<<63 - 1):           "106751d23h47m16s854ms775us807ns",
		time.Nanosecond + time.Microsecond: "1us1ns",
	}
	for d, want := range cases {
		got := Duration(d).String()
		if got != want {
			t.Errorf("Duration(%v).String() = %q, want %q", d, got, want)
			continue
		}
		back, err := ParseDuration(got)
		if err != nil || back.D() != d {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", got, back.D(), err, d)
		}
	}
}

func TestDurationEncodesAndDecodesAsTOMLString(t *testing.T) {
	type doc struct {
		Window Duration `toml:"window"`
	}
	var b strings.Builder
	if err := toml.NewEncoder(&b).Encode(doc{Window: Duration(25 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(b.String()); got != `window = "1d1h"` {
		t.Fatalf("encoded %q", got)
	}
	var back doc
	if _, err := toml.Decode(b.String(), &back); err != nil || back.Window.D() != 25*time.Hour {
		t.Fatalf("decoded %v, %v", back.Window.D(), err)
	}
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"15m", "7d", "1d12h", "500ms", "-3s", "0s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			return
		}
		back, err := ParseDuration(d.String())
		if err != nil || back != d {
			t.Fatalf("%q parsed to %v, formatted %q, reparsed %v, %v", s, d.D(), d.String(), back.D(), err)
		}
	})
}
