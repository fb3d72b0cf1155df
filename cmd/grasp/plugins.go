package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/fiatjaf/eventstore"
	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/outcome"
	"github.com/grasp-dev/grasp/core/server"
	"github.com/grasp-dev/grasp/plugins"
	"github.com/hashicorp/go-hclog"
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
)

// storeCounter gives plugins grasp.store.count/exists; without a store
// (check-config, plugin test) counting fails cleanly.
type storeCounter struct{ st eventstore.Store }

func (c storeCounter) Count(ctx context.Context, f nostr.Filter) (int64, error) {
	if c.st == nil {
		return 0, outcome.Errorf(outcome.Error, "the event store is not open in this command")
	}
	counter, ok := c.st.(eventstore.Counter)
	if !ok {
		return 0, outcome.Errorf(outcome.Error, "the event store cannot count")
	}
	return counter.CountEvents(ctx, f)
}

// buildPlugins loads the plugins the config names, reading the open store
// and reporting into the process registry; none configured gives a nil host
// and no extensions.
func buildPlugins(cfg config.Config, st eventstore.Store, e env.Env) (*plugins.Host, server.Extensions, error) {
	if !hasPlugins(cfg) {
		return nil, server.Extensions{}, nil
	}
	host, err := plugins.New(pluginOptions(cfg, storeCounter{st}, e.Log.Named("plugins"), e.Metrics))
	if err != nil {
		return nil, server.Extensions{}, err
	}
	return host, server.Extensions{Accept: host, AcceptNames: pluginNames(cfg), Tuner: host, Selector: host}, nil
}

// reloadOnSignal makes SIGHUP (and, with plugins.watch, a changed file)
// re-read the config, swap the plugin set (keeping the running one if
// anything fails) and give the server the reloadable settings
// (grasp.private_members), until ctx ends.
func reloadOnSignal(ctx context.Context, cfg config.Config, path string, host *plugins.Host, srv *server.Server, st eventstore.Store, e env.Env) {
	log := e.Log
	reload := func() {
		if path == "" {
			log.Info("reload: nothing to reload (no config file)")
			return
		}
		next, err := config.Load(path)
		if err != nil {
			log.Error("reload: config rejected; keeping the running set", "error", err)
			return
		}
		if keys := config.RestartNeeded(cfg, next); len(keys) > 0 {
			log.Warn("reload: these settings change only on restart", "keys", keys)
		}
		// first: a removed member must lose access even if the plugins
		// are refused
		srv.Reload(next)
		log.Info("reload: private members applied", "members", len(next.Grasp.PrivateMembers))
		if host != nil {
			if err := host.Reload(pluginOptions(next, storeCounter{st}, log.Named("plugins"), nil)); err != nil {
				log.Error("reload: plugins rejected; keeping the running set", "error", err)
				return
			}
			log.Info("reload: plugins swapped")
		}
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	if host != nil && cfg.Plugins.Watch && path != "" {
		go host.Watch(ctx, append(host.Current().Files(), path), reload)
	}
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				reload()
			}
		}
	}()
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
	return plugins.Check(pluginOptions(cfg, storeCounter{}, hclog.NewNullLogger(), nil))
}

// testPlugins runs the kind chain of cfg's plugins over r, printing one
// result per line and every plugin failure; see pluginTest for the status.
func testPlugins(ctx context.Context, cfg config.Config, kind plugins.Kind, r io.Reader, stdout, stderr io.Writer) int {
	t, err := plugins.NewTester(pluginOptions(cfg, storeCounter{}, hclog.NewNullLogger(), nil))
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return 1
	}
	if t.Count(kind) == 0 {
		fmt.Fprintf(stderr, "grasp plugin test: no [[plugins.%s]] configured: nothing to test\n", kind)
		return 1
	}
	res, err := t.Run(ctx, kind, r, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return 1
	}
	if !res.OK() {
		fmt.Fprintf(stderr, "grasp plugin test: %d of %d lines: %d invalid, %d with a failing plugin\n", res.Invalid+res.Failed, res.Lines, res.Invalid, res.Failed)
		return 1
	}
	return 0
}
