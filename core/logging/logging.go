// Package logging builds the process's root hclog.Logger from the [log]
// section of the config. Packages never build their own root logger: they
// take one in their constructor and callers hand them a named sub-logger
// (root.Named("relay")), so every line says which package wrote it.
package logging

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// Levels are the accepted level names, most verbose first.
var Levels = []string{"trace", "debug", "info", "warn", "error"}

// Formats are the accepted output formats.
var Formats = []string{"text", "json"}

// New returns a root logger writing to w (os.Stderr when nil) at level, in
// format "text" (human readable) or "json" (one object per line, for log
// shippers). Level and format names are case-insensitive.
func New(level, format string, w io.Writer) (hclog.Logger, error) {
	lvl, err := ParseLevel(level)
	if err != nil {
		return nil, err
	}
	var json bool
	switch strings.ToLower(strings.TrimSpace(format)) {
	case "text", "":
	case "json":
		json = true
	default:
		return nil, fmt.Errorf("log format %q: want one of %s", format, strings.Join(Formats, ", "))
	}
	if w == nil {
		w = os.Stderr
	}
	return hclog.New(&hclog.LoggerOptions{
		Name:       "grasp",
		Level:      lvl,
		Output:     w,
		JSONFormat: json,
		TimeFormat: "2006-01-02T15:04:05.000Z07:00",
		// Colour codes would end up in files and journald.
		Color: hclog.ColorOff,
	}), nil
}

// ParseLevel maps a level name to hclog's level; an empty name means info.
func ParseLevel(level string) (hclog.Level, error) {
	name := strings.ToLower(strings.TrimSpace(level))
	if name == "" {
		return hclog.Info, nil
	}
	for _, l := range Levels {
		if l == name {
			return hclog.LevelFromString(name), nil
		}
	}
	return hclog.NoLevel, fmt.Errorf("log level %q: want one of %s", level, strings.Join(Levels, ", "))
}
