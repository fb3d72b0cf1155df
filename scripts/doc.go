// Package scripts ships the stock JavaScript plugins (accept policies, relay
// selection, throttle tuning) as files operators copy into their plugin
// directory, and embeds them so the binary can write them out. The tests run
// each file through the real plugin host.
package scripts

import "embed"

// FS holds every stock plugin file, by base name.
//
//go:embed *.js
var FS embed.FS
