package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Duration is a time.Duration written in TOML as a string: Go syntax
// ("500ms", "1h30m") plus a leading whole-days part ("7d", "1d12h"), because
// the seeds' longer timers are stated in days.
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// ParseDuration parses the forms Duration accepts.
func ParseDuration(s string) (Duration, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return 0, fmt.Errorf("empty duration, want e.g. \"15m\", \"500ms\" or \"7d\"")
	}
	neg := false
	rest := in
	if rest[0] == '-' || rest[0] == '+' {
		neg = rest[0] == '-'
		rest = rest[1:]
	}
	var total time.Duration
	if i := strings.IndexByte(rest, 'd'); i >= 0 {
		days, err := strconv.ParseUint(rest[:i], 10, 32)
		if err != nil {
			return 0, fmt.Errorf("invalid duration %q: days must be a whole number before \"d\"", s)
		}
		if days > uint64(maxDays) {
			return 0, fmt.Errorf("invalid duration %q: too long", s)
		}
		total = time.Duration(days) * day
		rest = rest[i+1:]
	}
	if rest != "" {
		part, err := time.ParseDuration(rest)
		if err != nil || part < 0 {
			return 0, fmt.Errorf("invalid duration %q, want e.g. \"15m\", \"500ms\" or \"7d\"", s)
		}
		if part > time.Duration(1<<63-1)-total {
			return 0, fmt.Errorf("invalid duration %q: too long", s)
		}
		total += part
	}
	if neg {
		total = -total
	}
	return Duration(total), nil
}

// maxDays keeps days*24h inside int64 nanoseconds.
const maxDays = int64(1<<63-1) / int64(day)

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// MarshalText implements encoding.TextMarshaler with the shortest form that
// ParseDuration reads back exactly ("7d", "1h30m", "500ms", "0s").
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// String formats like MarshalText.
func (d Duration) String() string {
	v := time.Duration(d)
	if v == 0 {
		return "0s"
	}
	var b strings.Builder
	u := uint64(v)
	if v < 0 {
		b.WriteByte('-')
		u = uint64(-v)
	}
	units := []struct {
		name string
		size uint64
	}{
		{"d", uint64(day)},
		{"h", uint64(time.Hour)},
		{"m", uint64(time.Minute)},
		{"s", uint64(time.Second)},
		{"ms", uint64(time.Millisecond)},
		{"us", uint64(time.Microsecond)},
		{"ns", 1},
	}
	for _, un := range units {
		if n := u / un.size; n > 0 {
			b.WriteString(strconv.FormatUint(n, 10))
			b.WriteString(un.name)
			u -= n * un.size
		}
	}
	return b.String()
}
