// Package docs holds the guides of this repository. The publishing guide is
// also embedded, so that a server links its visitors to the guide of the
// version it runs (core/pages serves it at /publishing); the other pages
// are read here. It owns no behaviour.
package docs

import _ "embed"

// Publishing is publishing.md: how to publish a repository to a grasp
// server, in ngit's order and without ngit.
//
//go:embed publishing.md
var Publishing []byte
