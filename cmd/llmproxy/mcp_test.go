package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/mcptest"
)

// actAsMCPServer is the test binary as a stdio MCP server: mcp-stdio=DIR
// is the test server (internal/mcptest) writing into DIR; mcp-garbage
// answers every line with a line that is not JSON; mcp-exit exits 4 at its
// first line; mcp-silent reads and never answers.
func actAsMCPServer(role, arg string) (int, bool) {
	switch role {
	case "mcp-stdio":
		if err := mcptest.RunStdio(context.Background(), arg); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1, true
		}
		return 0, true
	case "mcp-garbage", "mcp-exit", "mcp-silent", "mcp-huge":
		buf := make([]byte, 1<<16)
		for {
			if _, err := os.Stdin.Read(buf); err != nil {
				return 0, true
			}
			switch role {
			case "mcp-garbage":
				fmt.Println("this is not JSON-RPC")
			case "mcp-exit":
				return 4, true
			case "mcp-huge":
				fmt.Println(`{"jsonrpc":"2.0","id":1,"result":{"x":"` + strings.Repeat("x", 2<<20) + `"}}`)
			}
		}
	}
	return 0, false
}

// mcpRun is one `llmproxy mcp` run with an MCP client on its stdio.
type mcpRun struct {
	client *sdk.IOTransport
	done   chan error
	stderr *bytes.Buffer
}

// startMCP runs `llmproxy mcp ARGS...` in the test's process, with the
// test binary in the child role as SERVER-CMD where args hold "--".
func startMCP(t *testing.T, ctx context.Context, role string, args ...string) *mcpRun {
	t.Helper()
	if role != "" {
		t.Setenv(childRole, role)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	r := &mcpRun{client: &sdk.IOTransport{Reader: outR, Writer: inW}, done: make(chan error, 1), stderr: &bytes.Buffer{}}
	go func() {
		err := runMCPOn(ctx, args, inR, outW, syncWriter(r.stderr))
		inR.CloseWithError(io.EOF)
		outW.Close()
		r.done <- err
	}()
	return r
}

// wait is the run's error once it ended.
func (r *mcpRun) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-r.done:
		return err
	case <-time.After(time.Minute):
		t.Fatal("llmproxy mcp did not end")
		return nil
	}
}

func TestMCPStdioRecordReplay(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	path := filepath.Join(t.TempDir(), "stdio.cassette")

	rec := startMCP(t, ctx, "mcp-stdio="+dir, "record", "--cassette", path, "--name", "notes", "--", self(t))
	recorded, err := mcptest.Play(ctx, rec.client, "a.txt", "hello")
	if err != nil {
		t.Fatalf("record: %v (stderr: %s)", err, rec.stderr)
	}
	if err := rec.wait(t); err != nil {
		t.Fatalf("record: %v (stderr: %s)", err, rec.stderr)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "a.txt")); err != nil || string(b) != "hello" {
		t.Fatalf("record: the server wrote %q, %v", b, err)
	}
	os.Remove(filepath.Join(dir, "a.txt"))

	// Replay keeps the server's command in its arguments, as an agent's
	// configuration would, and runs none.
	rep := startMCP(t, ctx, "exit=9", "replay", "--cassette", path, "--name", "notes", "--", self(t))
	replayed, err := mcptest.Play(ctx, rep.client, "a.txt", "hello")
	if err != nil {
		t.Fatalf("replay: %v (stderr: %s)", err, rep.stderr)
	}
	if err := rep.wait(t); err != nil {
		t.Fatalf("replay: %v (stderr: %s)", err, rep.stderr)
	}
	if replayed.Result != recorded.Result || !slices.Equal(replayed.Tools, recorded.Tools) {
		t.Errorf("replay answered %+v, recorded %+v", replayed, recorded)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.txt")); !os.IsNotExist(err) {
		t.Errorf("replay wrote the file (stat: %v)", err)
	}

	// A changed argument is a miss naming the path, and exit 3.
	miss := startMCP(t, ctx, "", "replay", "--cassette", path, "--name", "notes")
	_, err = mcptest.Play(ctx, miss.client, "b.txt", "hello")
	if err == nil || !strings.Contains(err.Error(), "params.arguments.path") {
		t.Errorf("replay of a changed argument: %v; want a miss naming params.arguments.path", err)
	}
	var ee *exitError
	if err := miss.wait(t); err == nil || !asExit(err, &ee) || ee.code != 3 || !strings.Contains(ee.msg, "params.arguments.path") {
		t.Errorf("the run ended with %v; want exit 3 listing the miss", err)
	}
}

func asExit(err error, ee **exitError) bool {
	e, ok := err.(*exitError)
	*ee = e
	return ok
}

// TestMCPStdioBadServers: a server that writes garbage, exits, never
// answers or writes a message over --max-response gives the client a JSON-RPC error saying so (no hang) and records
// nothing.
func TestMCPStdioBadServers(t *testing.T) {
	for _, tc := range []struct{ role, want string }{
		{"mcp-garbage", "is not valid JSON"},
		{"mcp-exit", "exited (exit status 4)"},
		{"mcp-silent", ""},
		{"mcp-huge", "longer than the limit"},
	} {
		t.Run(tc.role, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			path := filepath.Join(t.TempDir(), "bad.cassette")
			run := startMCP(t, ctx, tc.role, "record", "--cassette", path, "--name", "notes", "--upstream-timeout", "300ms", "--max-response", "1MiB", "--", self(t))
			if _, err := mcptest.Connect(ctx, run.client); err == nil {
				t.Errorf("connect succeeded; want an error")
			}
			run.client.Writer.Close()
			err := run.wait(t)
			if tc.want != "" && (err == nil || !strings.Contains(err.Error(), "MCP server") || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("the run ended with %v; want an error naming the MCP server and saying %q", err, tc.want)
			}
			c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if n, _ := c.Len(); n != 0 {
				t.Errorf("%d interactions recorded, want none", n)
			}
		})
	}
}

// TestMCPStdioBadInput: a client line that is not one JSON-RPC message
// gets a JSON-RPC error and the bridge goes on.
func TestMCPStdioBadInput(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "empty.cassette")
	c, err := cassette.Open(path, cassette.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	var out bytes.Buffer
	in := strings.NewReader("{not json\n[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n")
	err = runMCPOn(ctx, []string{"replay", "--cassette", path, "--name", "notes"}, in, &out, io.Discard)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "-32700") || !strings.Contains(lines[1], "batch") ||
		!strings.Contains(lines[2], `"id":2`) || !strings.Contains(lines[2], "-32001") {
		t.Errorf("answers:\n%s\nwant a parse error, a batch error and a miss for id 2", out.String())
	}
	var ee *exitError
	if !asExit(err, &ee) || ee.code != 3 {
		t.Errorf("the run ended with %v; want exit 3 (the ping missed)", err)
	}
}

// TestMCPStdioMock: `llmproxy mcp mock` serves a scenario's fixtures over
// stdio; an unknown preset is a usage error.
func TestMCPStdioMock(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := startMCP(t, ctx, "", "mock", "--mcp", "../../docs/scenarios/weather.yaml")
	cs, err := mcptest.Connect(ctx, run.client)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "weather", Arguments: map[string]any{"location": "Paris", "unit": "celsius"}})
	if err != nil || res.IsError || !strings.Contains(mcptest.ResultText(res), "sunny") {
		t.Errorf("tools/call: %v %+v; want the fixture's result", err, res)
	}
	cs.Close()
	if err := run.wait(t); err != nil {
		t.Errorf("mcp mock ended with %v", err)
	}
	var out, errOut bytes.Buffer
	err = runMCPOn(ctx, []string{"mock", "--mcp", "no_such_preset"}, strings.NewReader(""), &out, &errOut)
	if _, ok := err.(*usageError); !ok || !strings.Contains(err.Error(), "no_such_preset") {
		t.Errorf("mcp mock --mcp no_such_preset: %v; want a usage error naming it", err)
	}
}
