package main

import (
	"fmt"
	"io"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/refresh"
)

// checkRefresh refuses the flag combinations --refresh does not take.
func (c *serveConfig) checkRefresh() error {
	switch {
	case c.prune && !c.refresh:
		return usagef("%s: --prune drops what a --refresh run did not use; give --refresh too (or use llmproxy prune on a run's report)", c.source("prune"))
	case !c.refresh:
		return nil
	case c.cassetteDir != "":
		return usagef("%s: refreshes one --cassette; it does not take --cassette-dir", c.source("refresh"))
	case c.overwrite:
		return usagef("%s: --overwrite starts the cassette afresh, --refresh keeps what still matches; give one", c.source("refresh"))
	}
	return nil
}

// startRefresh opens the cassette of a --refresh run: the server replays
// from and records into a scratch copy, in auto mode (record --refresh is
// auto --refresh), each recording stored before its response ends, so
// that every recording is in the copy once the server has stopped.
func (c *serveConfig) startRefresh(cfg proxy.Config) (proxy.Config, func(), error) {
	run, err := refresh.Start(c.cassette, cassette.Options{LockTimeout: c.lockTimeout, Version: version})
	if err != nil {
		return cfg, nil, err
	}
	c.refreshing = run
	cfg.Cassette, cfg.Mode, cfg.Sync = run.Scratch, proxy.ModeAuto, true
	return cfg, func() {
		if err := run.Close(); err != nil {
			cfg.Logger.Error("closing cassette", "cassette", c.cassette, "err", err)
		}
	}, nil
}

// finishRefresh applies the refresh once the server stopped serving, and
// writes its summary on stderr.
func (c *serveConfig) finishRefresh(srv *proxy.Server, stderr io.Writer) error {
	run := c.refreshing
	unused, err := srv.AllUnused()
	if err != nil {
		return fmt.Errorf("refresh %s: %w", run.Path(), err)
	}
	left := map[uint64]bool{}
	for _, s := range unused[run.Scratch.Path()] {
		left[s.ID] = true
	}
	plan, err := run.Finish(func(id uint64) bool { return !left[id] }, c.prune, srv.Indexer(), cassette.Options{LockTimeout: c.lockTimeout, Version: version})
	if err != nil {
		return err
	}
	plan.Summary(stderr, run.Path())
	return nil
}
