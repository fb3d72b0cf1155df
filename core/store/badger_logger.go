package store

import (
	"fmt"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// badgerLogger routes badger's printf-style logs into hclog. Badger logs
// routine table and compaction events at INFO; they go to DEBUG here so an
// operator's INFO log stays about the relay.
type badgerLogger struct{ l hclog.Logger }

func msg(format string, args []any) string {
	return strings.TrimSpace(fmt.Sprintf(format, args...))
}

func (b badgerLogger) Errorf(format string, args ...any)   { b.l.Error(msg(format, args)) }
func (b badgerLogger) Warningf(format string, args ...any) { b.l.Warn(msg(format, args)) }

// Badger calls Debugf on every write, so format only when it will be logged.
func (b badgerLogger) Infof(format string, args ...any) {
	if b.l.IsDebug() {
		b.l.Debug(msg(format, args))
	}
}

func (b badgerLogger) Debugf(format string, args ...any) {
	if b.l.IsTrace() {
		b.l.Trace(msg(format, args))
	}
}
