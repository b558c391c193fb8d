package main

import (
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/mcp"
	"github.com/llmproxy/llmproxy/mcpmock"
	"github.com/llmproxy/llmproxy/proxy"
)

// mcpSynopsis is the usage line of `llmproxy mcp`.
const mcpSynopsis = "record|replay --cassette FILE --name NAME [flags] -- SERVER-CMD [ARG]... | mock ..."

// mcpUsage is `llmproxy mcp -h`.
const mcpUsage = `llmproxy mcp records, replays or mocks an MCP server that speaks over stdio, in place of the command an agent runs.

Usage:
  llmproxy mcp record --cassette FILE --name NAME [flags] -- SERVER-CMD [ARG]...
                      runs SERVER-CMD and records the JSON-RPC between it and the client on stdin/stdout
  llmproxy mcp replay --cassette FILE --name NAME [flags] [-- SERVER-CMD [ARG]...]
                      runs no server; answers from the cassette (exit 3 if a request missed)
  llmproxy mcp mock --mcp SPEC [--mcp SPEC]...
                      serves presets as MCP tools over stdio; SPEC is a scenario file (its
                      fixtures answer tools/call), preset names (a,b), or presets (all)

The interactions are those of the MCP server NAME, as /mcp/NAME records them over streamable HTTP.
Run 'llmproxy mcp SUBCOMMAND -h' for a subcommand's flags. See docs/mcp.md.
`

// runMCP is `llmproxy mcp`, on the process's own stdin.
func runMCP(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runMCPOn(ctx, args, os.Stdin, stdout, stderr)
}

// mcpConfig is what `llmproxy mcp record|replay` is given.
type mcpConfig struct {
	mode        proxy.Mode
	cassette    string
	name        string
	overwrite   bool
	maxResponse int64
	timeout     time.Duration
	lockTimeout time.Duration
	onExhausted string
	logs        logFlags
	server      []string // SERVER-CMD and its arguments (record)
}

// runMCPOn runs `llmproxy mcp SUBCOMMAND` with the MCP client on stdin and
// stdout: record runs SERVER-CMD and records the newline-delimited
// JSON-RPC between them into the cassette as interactions of the MCP
// server NAME; replay runs no server and answers from the cassette. The
// messages go through a proxy in this process, exactly as streamable HTTP
// ones through /mcp/NAME do, so a stdio recording replays over HTTP and
// the other way round.
func runMCPOn(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, mcpUsage)
		return usagef("mcp: a subcommand is required")
	}
	sub, args := args[0], args[1:]
	switch sub {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, mcpUsage)
		return nil
	}
	if sub == "mock" {
		return runMCPMock(ctx, args, stdin, stdout, stderr)
	}
	c := mcpConfig{}
	switch sub {
	case "record":
		c.mode = proxy.ModeRecord
	case "replay":
		c.mode = proxy.ModeReplay
	default:
		return usagef("mcp: unknown subcommand %q: want record, replay or mock", sub)
	}
	if i := slices.Index(args, "--"); i >= 0 {
		args, c.server = args[:i], args[i+1:]
	}
	fs := newFlagSet("mcp "+sub, stdout)
	fs.StringVar(&c.cassette, "cassette", "", "cassette `file`")
	fs.StringVar(&c.name, "name", "", "the MCP server's `name`: its interactions are those of the route /mcp/NAME")
	fs.DurationVar(&c.lockTimeout, "lock-timeout", 5*time.Second, "how long to wait for another writer's lock")
	c.logs.register(fs)
	if c.mode == proxy.ModeRecord {
		fs.BoolVar(&c.overwrite, "overwrite", false, "start the cassette afresh instead of appending to it")
		sizeVar(fs, &c.maxResponse, "max-response", mcp.DefaultMaxLine, "largest message the server may write, a `size` (over it: the server is stopped, nothing of it recorded)")
		fs.DurationVar(&c.timeout, "upstream-timeout", 10*time.Minute, "how long the server may take to answer a request")
	} else {
		fs.StringVar(&c.onExhausted, "on-exhausted", "reject", "`policy` when a request's recordings are used up: reject, repeat-last or restart")
	}
	if err := parseCommand(fs, args, "cassette", "name"); err != nil {
		return err
	}
	if strings.ContainsAny(c.name, "/?#") {
		return usagef("mcp %s: --name %q: want a name without /, ? or #", sub, c.name)
	}
	switch {
	case c.mode == proxy.ModeRecord && len(c.server) == 0:
		return usagef("mcp record: give the server's command after --: llmproxy mcp record --cassette FILE --name NAME -- SERVER-CMD [ARG]...")
	case c.mode == proxy.ModeReplay && len(c.server) > 0:
		// The agent's configuration keeps the server's command; replay runs none.
	}
	return c.run(ctx, stdin, stdout, stderr)
}

// run serves the client on stdin and stdout until stdin ends (or, in
// record, the server goes).
func (c *mcpConfig) run(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) error {
	log, err := c.logs.logger(stderr, func(n string) string { return "--" + n })
	if err != nil {
		return err
	}
	cs, err := cassette.Open(c.cassette, cassette.Options{ReadOnly: c.mode == proxy.ModeReplay, LockTimeout: c.lockTimeout, Version: version, Overwrite: c.overwrite})
	if err != nil {
		return err
	}
	defer cs.Close()
	out := mcp.NewLines(stdout)
	var misses missList
	cfg := proxy.Config{Mode: c.mode, Cassette: cs, Logger: log, Version: version, OnMiss: misses.add, MaxResponse: c.maxResponse, UpstreamTimeout: c.timeout}
	var child *mcp.Child
	if c.mode == proxy.ModeRecord {
		cmd := exec.CommandContext(ctx, c.server[0], c.server[1:]...)
		cmd.Stderr = stderr
		if child, err = mcp.StartChild(cmd, int(c.maxResponse), func(msg []byte) { _ = out.Write(msg) }); err != nil {
			return err
		}
		defer child.Close(5 * time.Second)
		cfg.Transport = child
		cfg.MCP = map[string]*url.URL{c.name: {Scheme: "http", Host: "stdio.invalid"}}
	} else {
		if cfg.OnExhausted, err = proxy.ParseExhausted(c.onExhausted); err != nil {
			return usagef("--on-exhausted %q: want reject, repeat-last or restart", c.onExhausted)
		}
		cfg.Transport = refuse{}
	}
	srv, err := proxy.New(cfg)
	if err != nil {
		return err
	}
	serveCtx, stop := context.WithCancel(ctx)
	defer stop()
	if child != nil {
		go func() {
			select {
			case <-child.Done():
				stop()
			case <-serveCtx.Done():
			}
		}()
	}
	b := &mcp.Bridge{Handler: srv, Path: "/" + proxy.MCPPrefix + "/" + c.name, MaxLine: int(c.maxResponse)}
	err = b.Serve(serveCtx, stdin, out)
	srv.Close() // writes what was recorded
	if child != nil {
		_ = child.Close(5 * time.Second)
		if fail := child.Failure(); fail != nil && ctx.Err() == nil {
			return fail
		}
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	if msgs, n := misses.list(); n > 0 {
		return &exitError{code: 3, msg: fmt.Sprintf("mcp replay: %d request(s) missed cassette %s:\n  %s", n, c.cassette, strings.Join(msgs, "\n  "))}
	}
	return nil
}

// parseMCPServers reads --mcp NAME=URL values (from names where they came
// from).
func parseMCPServers(from string, values []string) (map[string]*url.URL, error) {
	out := map[string]*url.URL{}
	for _, v := range values {
		name, raw, ok := strings.Cut(v, "=")
		if !ok || name == "" || strings.ContainsAny(name, "/?#") {
			return nil, usagef("%s %q: want NAME=URL, a name without /, ? or #", from, v)
		}
		u, err := proxy.ParseUpstreamURL(raw)
		if err != nil {
			return nil, usagef("%s %q: want NAME=URL with an http(s) URL", from, v)
		}
		out[name] = u
	}
	return out, nil
}

// refuse is the transport of a replay: it never connects anywhere.
type refuse struct{}

func (refuse) RoundTrip(r *http.Request) (*http.Response, error) {
	return nil, fmt.Errorf("replay forwards nothing (%s %s)", r.Method, r.URL.Path)
}

// runMCPMock is `llmproxy mcp mock`: an MCP server on stdin and stdout
// whose tools are presets and whose answers are fixtures (package
// mcpmock).
func runMCPMock(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("mcp mock", stdout)
	var specs listFlag
	var name string
	fs.Var(&specs, "mcp", "what to serve: `SPEC`, a scenario file (its fixtures answer tools/call), preset names (a,b) or presets (all) (repeatable)")
	fs.StringVar(&name, "name", "llmproxy-mock", "the server's `name` in initialize")
	if err := parseFlags(fs, args, nil); err != nil {
		return err
	}
	specs = append(specs, fs.Args()...)
	if len(specs) == 0 {
		return usagef("mcp mock: give what to serve: --mcp SPEC (a scenario file, preset names, or presets)")
	}
	src, err := mcpMockSource(specs)
	if err != nil {
		return err
	}
	rc := readCloser{stdin}
	return mcpmock.Run(ctx, name, src, &sdk.IOTransport{Reader: rc, Writer: nopWriteCloser{stdout}})
}

// mcpMockSource merges the sources specs name.
func mcpMockSource(specs []string) (mcpmock.Source, error) {
	var src mcpmock.Source
	seen := map[string]bool{}
	for _, spec := range specs {
		s, err := mcpmock.Parse(spec)
		if err != nil {
			return src, usagef("%v", err)
		}
		for _, d := range s.Tools {
			if !seen[d.Name()] {
				seen[d.Name()] = true
				src.Tools = append(src.Tools, d)
			}
		}
		src.Fixtures = append(src.Fixtures, s.Fixtures...)
	}
	return src, nil
}

// mcpMockHandlers reads mock's --mcp NAME=SPEC values.
func mcpMockHandlers(from string, values []string) (map[string]http.Handler, error) {
	out := map[string]http.Handler{}
	for _, v := range values {
		name, spec, ok := strings.Cut(v, "=")
		if !ok || name == "" || strings.ContainsAny(name, "/?#") {
			return nil, usagef("%s %q: want NAME=SPEC, a name without /, ? or #", from, v)
		}
		src, err := mcpMockSource([]string{spec})
		if err != nil {
			return nil, usagef("%s %q: %v", from, v, err)
		}
		out[name] = mcpmock.Handler(name, src)
	}
	return out, nil
}

type readCloser struct{ io.Reader }

func (readCloser) Close() error { return nil }

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
