package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/match"
	"github.com/llmproxy/llmproxy/proxy"
)

// serveConfig is what record, replay and auto are given.
type serveConfig struct {
	mode            proxy.Mode
	cassette        string
	cassetteDir     string
	listen          string
	upstreams       listFlag
	ignore          listFlag
	rules           string
	onExhausted     string
	pace            string
	latency         time.Duration
	maxBody         int64
	upstreamTimeout time.Duration
	redactHeaders   listFlag
	redactJSON      listFlag
	adminToken      string
	logFormat       string
	lockTimeout     time.Duration
	failOnUnused    bool
	shutdownTimeout time.Duration
}

func (c *serveConfig) flags(name string, stderr io.Writer) *flag.FlagSet {
	fs := newFlagSet(name, stderr)
	fs.StringVar(&c.cassette, "cassette", "", "cassette `file`")
	fs.StringVar(&c.cassetteDir, "cassette-dir", "", "`dir`ectory of cassettes chosen per request by the X-Llmproxy-Cassette header")
	fs.StringVar(&c.listen, "listen", "127.0.0.1:7878", "`addr`ess to listen on (port 0 picks a free port)")
	fs.Var(&c.upstreams, "upstream", "default upstream `URL`, or NAME=URL to add or override a named one (repeatable)")
	fs.Var(&c.ignore, "ignore", "gjson `path` left out of body matching (repeatable)")
	fs.StringVar(&c.rules, "rules", "", "JSON `file` of match rules: ignore, ignore_by_kind, ignore_query, headers (merged with --ignore)")
	fs.StringVar(&c.onExhausted, "on-exhausted", "reject", "when a request's recordings are used up: reject, repeat-last or restart")
	fs.StringVar(&c.pace, "pace", "instant", "replay timing: instant or recorded")
	fs.DurationVar(&c.latency, "latency", 0, "fixed delay before the first byte of a replayed response")
	fs.Int64Var(&c.maxBody, "max-body", proxy.DefaultMaxBody, "largest request body in `bytes` (over it: 413)")
	fs.DurationVar(&c.upstreamTimeout, "upstream-timeout", 10*time.Minute, "how long the upstream may stay silent")
	fs.Var(&c.redactHeaders, "redact-header", "extra request header `name` to redact (repeatable)")
	fs.Var(&c.redactJSON, "redact-json", "gjson `path` in request bodies to redact (repeatable)")
	fs.StringVar(&c.adminToken, "admin-token", "", "`token` required for /_llmproxy/ (required when listening beyond loopback)")
	fs.StringVar(&c.logFormat, "log-format", "text", "log format: text or json")
	fs.DurationVar(&c.lockTimeout, "lock-timeout", 5*time.Second, "how long to wait for another writer's lock")
	fs.BoolVar(&c.failOnUnused, "fail-on-unused", false, "at shutdown, exit 3 and list the interactions never served")
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long shutdown waits for requests in flight")
	return fs
}

// runServe runs record, replay or auto until a signal or a fatal error.
func runServe(ctx context.Context, name string, args []string, stdout, stderr io.Writer, sig func() (<-chan os.Signal, func())) error {
	var c serveConfig
	mode, err := proxy.ParseMode(name)
	if err != nil {
		return usagef("%v", err)
	}
	c.mode = mode
	fs := c.flags(name, stderr)
	if err := parseFlags(fs, args, nil); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if (c.cassette == "") == (c.cassetteDir == "") {
		return usagef("llmproxy %s: give exactly one of --cassette and --cassette-dir", name)
	}
	// Usage mistakes are reported before any file is opened or created.
	if err := checkExposure(c.listen, c.adminToken); err != nil {
		return err
	}
	cfg, cleanup, err := c.proxyConfig(stderr)
	if err != nil {
		return err
	}
	defer cleanup()
	srv, err := proxy.New(cfg)
	if err != nil {
		return err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", c.listen, err)
	}
	fmt.Fprintf(stdout, "llmproxy listening on http://%s\n", ln.Addr())
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 30 * time.Second, ErrorLog: slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn)}
	hs.RegisterOnShutdown(srv.EndLiveViews)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	ch, stop := sig()
	defer stop()
	select {
	case err := <-served:
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serve %s: %w", ln.Addr(), err)
		}
	case <-ctx.Done():
		shutdown(hs, ch, c.shutdownTimeout, cfg.Logger)
	case s := <-ch:
		cfg.Logger.Info("shutting down", "signal", s.String())
		shutdown(hs, ch, c.shutdownTimeout, cfg.Logger)
	}
	if c.failOnUnused {
		unused, err := srv.AllUnused()
		if err != nil {
			return err
		}
		if len(unused) > 0 {
			return &exitError{code: 3, msg: describeUnused(unused)}
		}
	}
	return nil
}

// shutdown drains requests in flight for at most timeout; a second signal
// cuts it short.
func shutdown(hs *http.Server, ch <-chan os.Signal, timeout time.Duration, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- hs.Shutdown(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			log.Warn("shutdown did not drain every request", "err", err)
			hs.Close()
		}
	case <-ch:
		log.Warn("second signal: closing connections now")
		hs.Close()
		<-done
	}
}

func describeUnused(unused map[string][]proxy.Summary) string {
	names := make([]string, 0, len(unused))
	n := 0
	for name, u := range unused {
		names = append(names, name)
		n += len(u)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "--fail-on-unused: %d interaction(s) never served:", n)
	for _, name := range names {
		for _, s := range unused[name] {
			fmt.Fprintf(&b, "\n  %s: interaction %d %s %s", name, s.ID, s.Method, s.Path)
		}
	}
	return b.String()
}

// checkExposure refuses to serve /_llmproxy/ beyond loopback without a token.
func checkExposure(listen, token string) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return usagef("--listen %q: %v", listen, err)
	}
	if token != "" {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return usagef("--listen %s is not a loopback address: set --admin-token to protect /_llmproxy/", listen)
}

// proxyConfig turns flags into a proxy.Config and opens the cassette.
func (c *serveConfig) proxyConfig(stderr io.Writer) (proxy.Config, func(), error) {
	cfg := proxy.Config{
		Mode: c.mode, CassetteDir: c.cassetteDir, Latency: c.latency, MaxBody: c.maxBody,
		UpstreamTimeout: c.upstreamTimeout, AdminToken: c.adminToken, Version: version,
	}
	var err error
	if cfg.Logger, err = newLogger(c.logFormat, stderr); err != nil {
		return cfg, nil, err
	}
	if cfg.OnExhausted, err = proxy.ParseExhausted(c.onExhausted); err != nil {
		return cfg, nil, usagef("--%v", err)
	}
	if cfg.Pace, err = proxy.ParsePace(c.pace); err != nil {
		return cfg, nil, usagef("--%v", err)
	}
	if c.maxBody <= 0 {
		return cfg, nil, usagef("--max-body %d: must be positive", c.maxBody)
	}
	if c.latency < 0 {
		return cfg, nil, usagef("--latency %s: must not be negative", c.latency)
	}
	if cfg.Upstreams, cfg.Default, err = parseUpstreams(c.upstreams); err != nil {
		return cfg, nil, err
	}
	if cfg.Redactor, err = cassette.NewRedactor(c.redactHeaders, c.redactJSON); err != nil {
		return cfg, nil, usagef("%v", err)
	}
	rules := match.Rules{Ignore: c.ignore}
	if c.rules != "" {
		fileRules, err := proxy.LoadRules(c.rules)
		var re *proxy.RulesError
		if errors.As(err, &re) {
			return cfg, nil, usagef("--rules %s: %s", re.File, re.Problem)
		} else if err != nil {
			return cfg, nil, usagef("--rules %s: %v", c.rules, err)
		}
		rules = proxy.MergeRules(fileRules, rules)
	}
	if cfg.Matcher, err = proxy.NewMatcher(rules, cfg.Redactor); err != nil {
		return cfg, nil, usagef("%v", err)
	}
	cleanup := func() {}
	if c.cassette != "" {
		cs, err := cassette.Open(c.cassette, cassette.Options{ReadOnly: c.mode == proxy.ModeReplay, LockTimeout: c.lockTimeout, Version: version})
		if err != nil {
			return cfg, nil, err
		}
		cfg.Cassette = cs
		cleanup = func() {
			if err := cs.Close(); err != nil {
				cfg.Logger.Error("closing cassette", "cassette", c.cassette, "err", err)
			}
		}
	} else if st, err := os.Stat(c.cassetteDir); err != nil || !st.IsDir() {
		return cfg, nil, fmt.Errorf("--cassette-dir %s: not a directory", c.cassetteDir)
	}
	return cfg, cleanup, nil
}

// parseUpstreams reads --upstream values: a bare URL sets the default, and
// NAME=URL adds or overrides a named upstream.
func parseUpstreams(values []string) (map[string]*url.URL, *url.URL, error) {
	ups := proxy.DefaultUpstreams()
	var def *url.URL
	for _, v := range values {
		name, raw, named := strings.Cut(v, "=")
		if !named || strings.Contains(name, "://") {
			name, raw, named = "", v, false
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, nil, usagef("--upstream %q: want URL or NAME=URL with an http(s) URL", v)
		}
		if named {
			if name == "" || strings.ContainsAny(name, "/?#") || strings.HasPrefix(name, "_") {
				return nil, nil, usagef("--upstream %q: bad name %q", v, name)
			}
			ups[name] = u
		} else {
			def = u
		}
	}
	if def == nil {
		def = ups["openai"]
	}
	return ups, def, nil
}

func newLogger(format string, w io.Writer) (*slog.Logger, error) {
	switch format {
	case "text", "":
		return slog.New(slog.NewTextHandler(w, nil)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, nil)), nil
	}
	return nil, usagef("--log-format %q: want text or json", format)
}
