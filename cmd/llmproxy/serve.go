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
	"github.com/llmproxy/llmproxy/refresh"
)

// serveConfig is what record, replay and auto are given.
type serveConfig struct {
	mode            proxy.Mode
	cassette        string
	cassetteDir     string
	listen          string
	upstreams       listFlag
	mcpServers      listFlag
	ignore          listFlag
	rules           string
	onExhausted     string
	pace            string
	latency         time.Duration
	maxBody         int64
	maxBodyTotal    int64
	maxResponse     int64
	sync            bool
	upstreamTimeout time.Duration
	readTimeout     time.Duration
	idleTimeout     time.Duration
	redactHeaders   listFlag
	redactJSON      listFlag
	adminToken      string
	allowOrigins    listFlag
	maxOpen         int
	logs            logFlags
	lockTimeout     time.Duration
	failOnUnused    bool
	shutdownTimeout time.Duration
	killGrace       time.Duration
	report          string
	overwrite       bool
	refresh         bool
	prune           bool
	// refreshing is the refresh under way (--refresh), once the cassette
	// is open.
	refreshing *refresh.Run
	maxAge     ageFlag
	strictAge  bool
	faults     faultFlags
	// fromEnv holds the flags set from the environment, each with its
	// variable, for error messages.
	fromEnv map[string]string
}

// flags returns the FlagSet of c.mode's command: the flags every serving
// command takes, the upstream timeout where requests are forwarded (record,
// auto), and the replay flags where recordings are served (replay, auto).
func (c *serveConfig) flags(name string, help io.Writer) *flag.FlagSet {
	fs := newFlagSet(name, help)
	fs.StringVar(&c.cassette, "cassette", "", "cassette `file`")
	fs.StringVar(&c.cassetteDir, "cassette-dir", "", "`dir`ectory of cassettes chosen per request by the X-Llmproxy-Cassette header")
	fs.IntVar(&c.maxOpen, "max-open-cassettes", proxy.DefaultMaxOpenCassettes, "with --cassette-dir, how many cassettes stay open (the least recently used is closed, and reopened on demand)")
	fs.StringVar(&c.listen, "listen", "127.0.0.1:7878", "`addr`ess to listen on (port 0 picks a free port)")
	fs.Var(&c.upstreams, "upstream", "default upstream `URL`, or NAME=URL to add or override a named one (repeatable)")
	fs.Var(&c.ignore, "ignore", "gjson `path` left out of body matching (repeatable)")
	fs.StringVar(&c.rules, "rules", "", "JSON `file` of match rules: ignore, ignore_by_kind, ignore_query, headers (merged with --ignore)")
	sizeVar(fs, &c.maxBody, "max-body", proxy.DefaultMaxBody, "largest request body, a `size` in bytes or with a unit: KB, MB, GB (1000s), KiB, MiB, GiB (1024s) (over it: 413)")
	sizeVar(fs, &c.maxBodyTotal, "max-body-total", 0, "largest total of request bodies in flight, a `size`, 0 for 4 × --max-body (over it: 503)")
	fs.Var(&c.redactHeaders, "redact-header", "extra request header `name` to redact (repeatable)")
	fs.Var(&c.redactJSON, "redact-json", "gjson `path` in request bodies to redact (repeatable)")
	fs.StringVar(&c.adminToken, "admin-token", "", "`token` required for /_llmproxy/ (required when listening beyond loopback)")
	fs.Var(&c.allowOrigins, "allow-origin", "browser `origin` (scheme://host[:port], or *) allowed beside loopback ones (repeatable)")
	c.logs.register(fs)
	fs.DurationVar(&c.lockTimeout, "lock-timeout", 5*time.Second, "how long to wait for another writer's lock")
	fs.DurationVar(&c.readTimeout, "read-timeout", proxy.DefaultReadTimeout, "how long a client may take to send a request body (over it: 408)")
	fs.DurationVar(&c.idleTimeout, "idle-timeout", 2*time.Minute, "how long an idle keep-alive connection stays open")
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long shutdown waits for requests in flight")
	reportFlag(fs, &c.report)
	fs.DurationVar(&c.killGrace, "kill-grace", DefaultKillGrace, "under -- CMD: how long CMD has to exit after SIGINT or SIGTERM, which go to its whole process group, before the group is killed")
	if c.mode == proxy.ModeRecord {
		fs.BoolVar(&c.overwrite, "overwrite", false, "start the cassette afresh instead of appending to it; the old interactions stay until the first new one is written")
	}
	if c.mode != proxy.ModeReplay {
		fs.BoolVar(&c.refresh, "refresh", false, "replay what matches and record what does not; when the run ends, drop the recorded turns each re-recorded conversation superseded, in one atomic rewrite (a killed run leaves the cassette as it was)")
		fs.BoolVar(&c.prune, "prune", false, "with --refresh: also drop the interactions no request used")
		fs.Var(&c.mcpServers, "mcp", "MCP server NAME=`URL` (its streamable HTTP endpoint), reached at /mcp/NAME (repeatable)")
		fs.DurationVar(&c.upstreamTimeout, "upstream-timeout", 10*time.Minute, "how long the upstream may stay silent")
		fs.BoolVar(&c.sync, "sync", false, "end each recorded response only once its interaction is on disk (a kill -9 then loses none)")
		sizeVar(fs, &c.maxResponse, "max-response", proxy.DefaultMaxResponse, "largest response recorded, decoded, a `size` (over it: the response is cut, nothing recorded)")
	}
	if c.mode != proxy.ModeRecord {
		fs.StringVar(&c.onExhausted, "on-exhausted", "reject", "`policy` when a request's recordings are used up: reject, repeat-last or restart")
		fs.StringVar(&c.pace, "pace", "instant", "replay `timing`: instant or recorded")
		fs.DurationVar(&c.latency, "latency", 0, "fixed delay before the first byte of a replayed response")
		fs.BoolVar(&c.failOnUnused, "fail-on-unused", false, "at shutdown, exit 3 and list the interactions never served")
		fs.Var(&c.maxAge, "max-age", "warn at startup about interactions recorded longer ago than this `age` (90d, 36h, 90m, 1d12h)")
		fs.BoolVar(&c.strictAge, "strict-age", false, "with --max-age, fail at startup instead of warning, naming the old interactions")
		c.faults.register(fs)
	}
	return fs
}

// commandsWithFlag names the serving commands other than except that take
// --name.
func commandsWithFlag(name, except string) []string {
	var out []string
	for _, m := range []proxy.Mode{proxy.ModeRecord, proxy.ModeReplay, proxy.ModeAuto} {
		if m.String() == except {
			continue
		}
		c := serveConfig{mode: m}
		if c.flags(m.String(), io.Discard).Lookup(name) != nil {
			out = append(out, m.String())
		}
	}
	return out
}

// source names a flag as the user gave it: its environment variable when
// its value came from there, else --name.
func (c *serveConfig) source(name string) string {
	if v, ok := c.fromEnv[name]; ok {
		return v
	}
	return "--" + name
}

// runServe runs record, replay or auto until a signal or a fatal error, or,
// given `-- CMD [ARG]...`, until CMD exits.
func runServe(ctx context.Context, name string, args []string, stdout, stderr io.Writer, sig func() (<-chan os.Signal, func())) error {
	var c serveConfig
	mode, err := proxy.ParseMode(name)
	if err != nil {
		return usagef("%v", err)
	}
	c.mode = mode
	args, cr, err := splitCommand(name, args)
	if err != nil {
		return err
	}
	fs := c.flags(name, stdout)
	if c.fromEnv, err = parseFlagsFrom(fs, args, nil); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if cr != nil {
		c.listen = cr.listen(fs, c.listen)
		stderr = syncWriter(stderr) // the proxy's log and CMD's stderr
	}
	stderr, flushLog := c.logs.batched(stderr)
	defer flushLog()
	c.logs.underCommand(fs, cr)
	if c.killGrace <= 0 {
		return usagef("%s %s: must be positive", c.source("kill-grace"), c.killGrace)
	}
	if cr != nil {
		cr.grace = c.killGrace
	}
	if (c.cassette == "") == (c.cassetteDir == "") {
		return usagef("%s: give exactly one of --cassette and --cassette-dir (or %s, %s)", name, envName("cassette"), envName("cassette-dir"))
	}
	// Usage mistakes are reported before any file is opened or created.
	if err := checkExposure(c.source("listen"), c.listen, c.adminToken); err != nil {
		return err
	}
	if err := c.checkRefresh(); err != nil {
		return err
	}
	cfg, cleanup, err := c.proxyConfig(stderr)
	if err != nil {
		return err
	}
	defer cleanup()
	var rl *runLog
	if cr != nil {
		rl = &cr.log
	} else if c.report != "" {
		rl = &runLog{}
	}
	if rl != nil {
		cfg.OnMiss, cfg.OnFailure = rl.misses.add, rl.failures.add
	}
	srv, err := proxy.New(cfg)
	if err != nil {
		return err
	}
	defer srv.Close()
	hs := c.httpServer(srv, cfg.Logger)
	hs.RegisterOnShutdown(srv.EndLiveViews)
	sv := listener{server: hs, logger: cfg.Logger, listen: c.listen, listenFrom: c.source("listen"),
		shutdownTimeout: c.shutdownTimeout, cr: cr, report: reportWriter(name, c.report, cr, rl, srv)}
	if c.failOnUnused {
		sv.unused = func() (string, error) { return unusedReport(srv) }
	}
	if c.refreshing != nil {
		sv.after = func() error { return c.finishRefresh(srv, stderr) }
	}
	return sv.run(ctx, stdout, stderr, sig)
}

// listener is a handler to serve until a signal, ctx's end or, with a
// commandRun, CMD's exit: what every serving command shares once its
// handler is built.
type listener struct {
	server          *http.Server // its handler set, not yet serving
	logger          *slog.Logger
	listen          string
	listenFrom      string // --listen or its variable, for errors
	shutdownTimeout time.Duration
	cr              *commandRun
	// unused, when not nil (--fail-on-unused), lists what was never
	// served, or "" when everything was.
	unused func() (string, error)
	// report, when not nil (-- CMD, --report), writes the report of the
	// run once it ended, and returns its path.
	report reportFunc
	// after, when not nil (--refresh), runs once the server has stopped
	// serving, before the report.
	after func() error
}

// run listens, prints the listening line and serves. The signal handlers
// are in place before the listening line: a signal sent the moment after it
// is a clean shutdown, not the default action.
func (sv listener) run(ctx context.Context, stdout, stderr io.Writer, sig func() (<-chan os.Signal, func())) error {
	ch, stop := sig()
	defer stop()
	ln, err := net.Listen("tcp", sv.listen)
	if err != nil {
		return fmt.Errorf("%s %s: %w", sv.listenFrom, sv.listen, err)
	}
	hs := sv.server
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	listening := stdout
	if sv.cr != nil {
		listening = stderr // CMD's stdout is CMD's alone
	}
	fmt.Fprintf(listening, "llmproxy listening on http://%s\n", ln.Addr())

	var afterErr error
	stopped := func() {
		if sv.after != nil {
			afterErr = sv.after()
		}
	}
	if sv.cr != nil {
		err := sv.cr.serveWhile(ctx, "http://"+ln.Addr().String(), ch, stdout, stderr,
			func() { shutdown(hs, ch, sv.shutdownTimeout, sv.logger); stopped() }, sv.unused, sv.report)
		if afterErr != nil {
			return afterErr
		}
		return err
	}
	select {
	case err := <-served:
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serve %s: %w", ln.Addr(), err)
		}
	case <-ctx.Done():
		shutdown(hs, ch, sv.shutdownTimeout, sv.logger)
	case s := <-ch:
		sv.logger.Info("shutting down", "signal", s.String())
		shutdown(hs, ch, sv.shutdownTimeout, sv.logger)
	}
	if stopped(); afterErr != nil {
		return afterErr
	}
	if sv.report != nil {
		closing, err := sv.report(nil)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "llmproxy: %s\n", strings.Join(closing, "\nllmproxy: "))
	}
	if sv.unused != nil {
		report, err := sv.unused()
		if err != nil {
			return err
		}
		if report != "" {
			return &exitError{code: 3, msg: report}
		}
	}
	return nil
}

// httpServer is the HTTP server in front of h. It bounds the request
// headers (30 s) and an idle connection (--idle-timeout); the body is
// bounded by the proxy (--read-timeout). There is no WriteTimeout: a long
// streamed response must never be cut for taking long.
func (c *serveConfig) httpServer(h http.Handler, log *slog.Logger) *http.Server {
	return newHTTPServer(h, c.idleTimeout, log)
}

// newHTTPServer is the HTTP server of every serving command, in front of h
// (see proxy.HTTPServer).
func newHTTPServer(h http.Handler, idle time.Duration, log *slog.Logger) *http.Server {
	return proxy.HTTPServer(h, idle, slog.NewLogLogger(log.Handler(), slog.LevelWarn))
}

// unusedReport lists the interactions srv never served, or is "" when it
// served them all.
func unusedReport(srv *proxy.Server) (string, error) {
	unused, err := srv.AllUnused()
	if err != nil || len(unused) == 0 {
		return "", err
	}
	return describeUnused(unused), nil
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

func describeUnused(unused map[string][]cassette.Summary) string {
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
			fmt.Fprintf(&b, "\n  %s: interaction %d %s %s", name, s.ID, s.Method, cassette.ProxyPath(s.Upstream, s.Path))
		}
	}
	return b.String()
}

// checkExposure refuses to serve /_llmproxy/ beyond loopback without a
// token. from names where listen came from (--listen or its variable).
func checkExposure(from, listen, token string) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return usagef("%s %q: %v", from, listen, err)
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
	return usagef("%s %s is not a loopback address: set --admin-token to protect /_llmproxy/", from, listen)
}

// proxyConfig turns flags into a proxy.Config and opens the cassette.
func (c *serveConfig) proxyConfig(stderr io.Writer) (proxy.Config, func(), error) {
	cfg := proxy.Config{
		Mode: c.mode, CassetteDir: c.cassetteDir, Latency: c.latency, MaxBody: c.maxBody,
		MaxBodyTotal: c.maxBodyTotal, MaxResponse: c.maxResponse, Sync: c.sync,
		UpstreamTimeout: c.upstreamTimeout, ReadTimeout: c.readTimeout, AdminToken: c.adminToken, Version: version,
		Overwrite: c.overwrite, LockTimeout: c.lockTimeout,
		AllowOrigins: c.allowOrigins, MaxOpenCassettes: c.maxOpen,
	}
	var err error
	if cfg.Logger, err = c.logs.logger(stderr, c.source); err != nil {
		return cfg, nil, err
	}
	if c.mode != proxy.ModeRecord {
		if err := c.faults.apply(&cfg, c.source("fault")); err != nil {
			return cfg, nil, err
		}
		if cfg.OnExhausted, err = proxy.ParseExhausted(c.onExhausted); err != nil {
			return cfg, nil, usagef("%s %q: want reject, repeat-last or restart", c.source("on-exhausted"), c.onExhausted)
		}
		if cfg.Pace, err = proxy.ParsePace(c.pace); err != nil {
			return cfg, nil, usagef("%s %q: want instant or recorded", c.source("pace"), c.pace)
		}
	}
	if c.maxBody <= 0 {
		return cfg, nil, usagef("%s %s: must be positive", c.source("max-body"), formatSize(c.maxBody))
	}
	if c.mode != proxy.ModeReplay && c.maxResponse <= 0 {
		return cfg, nil, usagef("%s %s: must be positive", c.source("max-response"), formatSize(c.maxResponse))
	}
	for name, d := range map[string]time.Duration{"read-timeout": c.readTimeout, "idle-timeout": c.idleTimeout} {
		if d <= 0 {
			return cfg, nil, usagef("%s %s: must be positive", c.source(name), d)
		}
	}
	if c.latency < 0 {
		return cfg, nil, usagef("%s %s: must not be negative", c.source("latency"), c.latency)
	}
	if c.strictAge && c.maxAge.d == 0 {
		return cfg, nil, usagef("%s: needs --max-age", c.source("strict-age"))
	}
	if cfg.Upstreams, cfg.Default, err = parseUpstreams(c.source("upstream"), c.upstreams); err != nil {
		return cfg, nil, err
	}
	if cfg.MCP, err = parseMCPServers(c.source("mcp"), c.mcpServers); err != nil {
		return cfg, nil, err
	}
	if cfg.Redactor, err = cassette.NewRedactor(c.redactHeaders, c.redactJSON); err != nil {
		return cfg, nil, usagef("%v", err)
	}
	rules := match.Rules{Ignore: c.ignore}
	if c.rules != "" {
		fileRules, err := match.LoadRules(c.rules)
		var re *match.RulesError
		if errors.As(err, &re) {
			return cfg, nil, usagef("%s %s: %s", c.source("rules"), re.File, re.Problem)
		} else if err != nil {
			return cfg, nil, usagef("%s %s: %v", c.source("rules"), c.rules, err)
		}
		rules = match.MergeRules(fileRules, rules)
	}
	if cfg.Indexer, err = cassette.NewIndexer(rules, cfg.Redactor); err != nil {
		return cfg, nil, usagef("%v", err)
	}
	cleanup := func() {}
	if c.refresh {
		return c.startRefresh(cfg)
	}
	if c.cassette != "" {
		cs, err := cassette.Open(c.cassette, cassette.Options{ReadOnly: c.mode == proxy.ModeReplay, LockTimeout: c.lockTimeout, Version: version, Overwrite: c.overwrite})
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
		return cfg, nil, fmt.Errorf("%s %s: not a directory", c.source("cassette-dir"), c.cassetteDir)
	}
	if c.maxAge.d > 0 {
		if err := checkAges(cfg.Cassette, c.cassetteDir, c.maxAge.d, c.strictAge, c.source("max-age"), time.Now(), stderr); err != nil {
			cleanup()
			return cfg, nil, err
		}
	}
	return cfg, cleanup, nil
}

// parseUpstreams reads --upstream values (from names where they came from):
// a bare URL sets the default, and NAME=URL adds or overrides a named
// upstream.
func parseUpstreams(from string, values []string) (map[string]*url.URL, *url.URL, error) {
	ups := proxy.DefaultUpstreams()
	var def *url.URL
	for _, v := range values {
		name, raw, named := strings.Cut(v, "=")
		if !named || strings.Contains(name, "://") {
			name, raw, named = "", v, false
		}
		u, err := proxy.ParseUpstreamURL(raw)
		if err != nil {
			return nil, nil, usagef("%s %q: want URL or NAME=URL with an http(s) URL", from, v)
		}
		if named {
			if err := proxy.CheckUpstreamName(name); err != nil {
				return nil, nil, usagef("%s %q: bad name %q", from, v, name)
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
