package main

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/fiatjaf/eventstore"
	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/plugins"
	"github.com/hashicorp/go-hclog"
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
)

// storeCounter gives plugins grasp.store.count/exists. The plugin host is
// built before the server opens its store, so the store is set afterwards;
// until then (check-config, plugin test) counting fails cleanly.
type storeCounter struct {
	st atomic.Pointer[eventstore.Store]
}

func (c *storeCounter) set(s eventstore.Store) { c.st.Store(&s) }

func (c *storeCounter) Count(ctx context.Context, f nostr.Filter) (int64, error) {
	p := c.st.Load()
	if p == nil {
		return 0, fmt.Errorf("error: the event store is not open in this command")
	}
	counter, ok := (*p).(eventstore.Counter)
	if !ok {
		return 0, fmt.Errorf("error: the event store cannot count")
	}
	return counter.CountEvents(ctx, f)
}

func specs(ps []config.Plugin) []plugins.Spec {
	out := make([]plugins.Spec, len(ps))
	for i, p := range ps {
		out[i] = plugins.Spec{Name: p.Name, File: p.File, Timeout: p.Timeout.D(), OnError: p.OnError, Config: p.Config}
	}
	return out
}

// pluginOptions maps [plugins] of grasp.toml onto the plugin host.
func pluginOptions(cfg config.Config, st plugins.Store, log hclog.Logger, reg prometheus.Registerer) plugins.Options {
	return plugins.Options{
		Dir:            cfg.Plugins.Dir,
		PoolSize:       cfg.Plugins.PoolSize,
		Domain:         cfg.Host(),
		Accept:         specs(cfg.Plugins.Accept),
		RelaySelection: specs(cfg.Plugins.RelaySelection),
		Throttle:       specs(cfg.Plugins.Throttle),
		Store:          st,
		Clock:          clock.New(),
		Logger:         log,
		Registerer:     reg,
		MaxCallStack:   cfg.Plugins.MaxCallStack,
	}
}

func hasPlugins(cfg config.Config) bool {
	p := cfg.Plugins
	return len(p.Accept)+len(p.RelaySelection)+len(p.Throttle) > 0
}

func pluginNames(cfg config.Config) []string {
	var names []string
	for _, p := range cfg.Plugins.Accept {
		names = append(names, p.Name)
	}
	return names
}

// checkPlugins compiles and warms every plugin and checks its exports.
func checkPlugins(cfg config.Config) error {
	if !hasPlugins(cfg) {
		return nil
	}
	return plugins.Check(pluginOptions(cfg, &storeCounter{}, hclog.NewNullLogger(), nil))
}

// testPlugins prints the accept chain's verdict for each event on r.
func testPlugins(ctx context.Context, cfg config.Config, r io.Reader, w io.Writer) error {
	set, err := plugins.NewSet(pluginOptions(cfg, &storeCounter{}, hclog.NewNullLogger(), nil))
	if err != nil {
		return err
	}
	return plugins.TestEvents(ctx, set, r, w)
}
