package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/llmproxy/llmproxy/fixture"
	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/scenario"
)

// mockConfig is what mock is given.
type mockConfig struct {
	scenarios       listFlag
	mapSpecs        listFlag
	mcpMocks        listFlag
	listen          string
	pace            string
	failOnUnused    bool
	adminToken      string
	maxBody         int64
	logs            logFlags
	shutdownTimeout time.Duration
	killGrace       time.Duration
	report          string
	readTimeout     time.Duration
	idleTimeout     time.Duration
	faults          faultFlags
	fromEnv         map[string]string
}

func (c *mockConfig) flags(help io.Writer) *flag.FlagSet {
	fs := newFlagSet("mock", help)
	fs.Var(&c.scenarios, "scenario", "scenario `file` (YAML or JSON) to serve (repeatable; X-Llmproxy-Scenario picks one per request)")
	fs.Var(&c.mcpMocks, "mcp", "serve an MCP server at /mcp/NAME: `NAME=SPEC`, SPEC a scenario file (its fixtures answer tools/call), preset names (a,b) or presets (all) (repeatable)")
	fs.Var(&c.mapSpecs, "map", "call a preset by the application's function name: `TOOL=PRESET` (repeatable; as: in the file wins)")
	fs.StringVar(&c.listen, "listen", "127.0.0.1:7878", "`addr`ess to listen on (port 0 picks a free port)")
	fs.StringVar(&c.pace, "pace", "scripted", "`timing`: scripted (the scenario's delays and stream intervals) or instant (none)")
	fs.BoolVar(&c.failOnUnused, "fail-on-unused", false, "at shutdown, exit 3 and list the steps no conversation reached")
	fs.StringVar(&c.adminToken, "admin-token", "", "`token` required for /_llmproxy/ (required when listening beyond loopback)")
	sizeVar(fs, &c.maxBody, "max-body", proxy.DefaultMaxBody, "largest request body, a `size` in bytes or with a unit: KB, MB, GB (1000s), KiB, MiB, GiB (1024s) (over it: 413)")
	c.logs.register(fs)
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long shutdown waits for requests in flight")
	reportFlag(fs, &c.report)
	fs.DurationVar(&c.killGrace, "kill-grace", DefaultKillGrace, "under -- CMD: how long CMD has to exit after SIGINT or SIGTERM, which go to its whole process group, before the group is killed")
	fs.DurationVar(&c.readTimeout, "read-timeout", proxy.DefaultReadTimeout, "how long a client may take to send a request body (over it: 408)")
	fs.DurationVar(&c.idleTimeout, "idle-timeout", 2*time.Minute, "how long an idle keep-alive connection stays open")
	c.faults.register(fs)
	return fs
}

// source names a flag as the user gave it.
func (c *mockConfig) source(name string) string {
	if v, ok := c.fromEnv[name]; ok {
		return v
	}
	return "--" + name
}

// runMock serves scenario files until a signal, or, given `-- CMD
// [ARG]...`, until CMD exits. A file that does not load serves nothing: its
// problems are listed as FILE:LINE: message and the exit status is 1.
func runMock(ctx context.Context, args []string, stdout, stderr io.Writer, sig func() (<-chan os.Signal, func())) error {
	var c mockConfig
	args, cr, err := splitCommand("mock", args)
	if err != nil {
		return err
	}
	fs := c.flags(stdout)
	if c.fromEnv, err = parseFlagsFrom(fs, args, nil); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	c.logs.underCommand(fs, cr)
	if c.killGrace <= 0 {
		return usagef("%s %s: must be positive", c.source("kill-grace"), c.killGrace)
	}
	if cr != nil {
		cr.grace = c.killGrace
	}
	if cr != nil {
		c.listen = cr.listen(fs, c.listen)
		stderr = syncWriter(stderr)
	}
	stderr, flushLog := c.logs.batched(stderr)
	defer flushLog()
	mapping, err := fixture.ParseMapping(c.mapSpecs)
	if err != nil {
		return usagef("mock: --map: %v", err)
	}
	cfg := proxy.Config{Mode: proxy.ModeMock, MaxBody: c.maxBody, ReadTimeout: c.readTimeout, AdminToken: c.adminToken, Version: version}
	switch c.pace {
	case "scripted":
		cfg.Pace = proxy.PaceScripted
	case "instant":
		cfg.Pace = proxy.PaceInstant
	default:
		return usagef("%s %q: want scripted or instant", c.source("pace"), c.pace)
	}
	if err := c.faults.apply(&cfg, c.source("fault")); err != nil {
		return err
	}
	if c.maxBody <= 0 {
		return usagef("%s %s: must be positive", c.source("max-body"), formatSize(c.maxBody))
	}
	if c.readTimeout <= 0 {
		return usagef("%s %s: must be positive", c.source("read-timeout"), c.readTimeout)
	}
	if c.idleTimeout <= 0 {
		return usagef("%s %s: must be positive", c.source("idle-timeout"), c.idleTimeout)
	}
	if cfg.Logger, err = c.logs.logger(stderr, c.source); err != nil {
		return err
	}
	if err := checkExposure(c.source("listen"), c.listen, c.adminToken); err != nil {
		return err
	}
	// Without --scenario, mock serves nothing until the API loads a
	// scenario (PUT /_llmproxy/session, POST /_llmproxy/scenarios).
	if len(c.scenarios) > 0 {
		if cfg.Scenarios, cfg.ScenarioFiles, err = loadEngines(c.scenarios, mapping); err != nil {
			return err
		}
	}
	cfg.ToolNames = mapping
	if cfg.MCPMocks, err = mcpMockHandlers(c.source("mcp"), c.mcpMocks); err != nil {
		return err
	}
	var rl *runLog
	if cr != nil {
		rl = &cr.log
	} else if c.report != "" {
		rl = &runLog{}
	}
	if rl != nil {
		cfg.OnMiss = rl.misses.add
	}
	srv, err := proxy.New(cfg)
	if err != nil {
		return err
	}
	defer srv.Close()
	hs := newHTTPServer(srv, c.idleTimeout, cfg.Logger)
	hs.RegisterOnShutdown(srv.EndLiveViews)
	sv := listener{server: hs, logger: cfg.Logger, listen: c.listen, listenFrom: c.source("listen"),
		shutdownTimeout: c.shutdownTimeout, cr: cr, report: reportWriter("mock", c.report, cr, rl, srv)}
	if c.failOnUnused {
		sv.unused = func() (string, error) { return unusedSteps(srv.UnusedSteps()), nil }
	}
	return sv.run(ctx, stdout, stderr, sig)
}

// loadEngines loads scenario files as scenario check does, names their
// preset calls by mapping (--map TOOL=PRESET), and returns their engines and
// files by scenario name; every problem of every file is listed, FILE:LINE:
// message, in an exit-1 error.
func loadEngines(files []string, mapping map[string]string) (engines map[string]*scenario.Engine, paths map[string]string, err error) {
	all, err := scenario.LoadAll(files...)
	var list scenario.ErrorList
	if errors.As(err, &list) {
		lines := make([]string, len(list))
		for n, e := range list {
			lines[n] = e.Error()
		}
		return nil, nil, &exitError{code: 1, msg: fmt.Sprintf("mock: %s, nothing served:\n%s", plural(len(list), "problem"), strings.Join(lines, "\n"))}
	} else if err != nil {
		return nil, nil, err
	}
	engines = map[string]*scenario.Engine{} // LoadAll refuses two files of one name
	paths = map[string]string{}
	for n, s := range all {
		if err := s.NameTools(mapping); err != nil {
			return nil, nil, usagef("mock: --map: %s: %v", files[n], err)
		}
		e, err := scenario.NewEngine(s)
		if err != nil {
			return nil, nil, fmt.Errorf("mock: %s: %w", files[n], err)
		}
		engines[s.Name] = e
		paths[s.Name] = files[n]
	}
	return engines, paths, nil
}

// unusedSteps describes the steps never reached, by scenario, or is ""
// when every step was.
func unusedSteps(unused map[string][]string) string {
	if len(unused) == 0 {
		return ""
	}
	var b strings.Builder
	n := 0
	for _, steps := range unused {
		n += len(steps)
	}
	fmt.Fprintf(&b, "--fail-on-unused: %s never reached:", plural(n, "step"))
	names := make([]string, 0, len(unused))
	for name := range unused {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		fmt.Fprintf(&b, "\n  scenario %s: %s", name, strings.Join(unused[name], ", "))
	}
	return b.String()
}
