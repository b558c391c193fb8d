package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/scenario"
	"github.com/llmproxy/llmproxy/view"
)

// runView serves the web view of one cassette, or of scenario files,
// read-only, until a signal.
func runView(ctx context.Context, args []string, stdout, stderr io.Writer, sig func() (<-chan os.Signal, func())) error {
	fs := newFlagSet("view", stdout)
	path := fs.String("cassette", "", "cassette `file` to show (opened read-only)")
	var scenarios listFlag
	fs.Var(&scenarios, "scenario", "scenario `file` to show as a graph (repeatable)")
	listen := fs.String("listen", "127.0.0.1:7878", "`addr`ess to listen on (port 0 picks a free port)")
	token := fs.String("admin-token", "", "`token` the browser must give once (required when listening beyond loopback)")
	var logs logFlags
	logs.register(fs)
	shutdownTimeout := fs.Duration("shutdown-timeout", 10*time.Second, "how long shutdown waits for pages being served")
	fromEnv, err := parseFlagsFrom(fs, args, nil)
	if err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if (*path == "") == (len(scenarios) == 0) {
		return usagef("llmproxy view: give one of --cassette and --scenario")
	}
	if err := checkExposure("--listen", *listen, *token); err != nil {
		return err
	}
	log, err := logs.logger(stderr, func(name string) string {
		if v, ok := fromEnv[name]; ok {
			return v
		}
		return "--" + name
	})
	if err != nil {
		return err
	}
	var src view.Source
	if *path != "" {
		c, err := cassette.Open(*path, cassette.Options{ReadOnly: true})
		if err != nil {
			return err
		}
		defer c.Close()
		src = view.CassetteSource{C: c}
	} else {
		all, err := scenario.LoadAll(scenarios...)
		if err != nil {
			return err
		}
		var graphs []view.Graph
		for k, s := range all {
			graphs = append(graphs, view.ScenarioGraph(s, scenarios[k], nil))
		}
		src = view.ScenarioSource{Graphs: graphs}
	}
	h, err := view.New(view.Options{Source: src, AdminToken: *token, Mode: "view", Logger: log})
	if err != nil {
		return err
	}
	home := view.Prefix
	if *path == "" {
		home += "scenario"
	}
	return serveView(ctx, h, home, *listen, *shutdownTimeout, log, stdout, sig)
}

// serveView listens, prints the listening line once the signal handlers
// are in place, and serves h until a signal or ctx ends; / leads to home.
func serveView(ctx context.Context, h *view.Handler, home, listen string, timeout time.Duration, log *slog.Logger,
	stdout io.Writer, sig func() (<-chan os.Signal, func())) error {
	ch, stop := sig()
	defer stop()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", listen, err)
	}
	mux := http.NewServeMux()
	mux.Handle(view.Prefix, h)
	mux.Handle(view.Prefix[:len(view.Prefix)-1], h)
	mux.Handle("GET /{$}", http.RedirectHandler(home, http.StatusSeeOther))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	hs.RegisterOnShutdown(h.Close)
	fmt.Fprintf(stdout, "llmproxy listening on http://%s\n", ln.Addr())
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serve %s: %w", ln.Addr(), err)
		}
	case <-ctx.Done():
		shutdown(hs, ch, timeout, log)
	case s := <-ch:
		log.Info("shutting down", "signal", s.String())
		shutdown(hs, ch, timeout, log)
	}
	return nil
}
