package proxy_test

import (
	"context"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/llmproxy/llmproxy/internal/mcptest"
	"github.com/llmproxy/llmproxy/proxy"
)

// mcpServer starts the test MCP server (internal/mcptest) over streamable
// HTTP, writing its files into a new directory, which it returns.
func mcpServer(t *testing.T, jsonAnswers bool) (srv *httptest.Server, dir string) {
	t.Helper()
	dir = t.TempDir()
	srv = httptest.NewServer(mcptest.Handler(dir, jsonAnswers))
	t.Cleanup(srv.Close)
	return srv, dir
}

// withMCP gives the proxy the MCP server NAME at URL.
func withMCP(name, raw string) func(*proxy.Config) {
	return func(c *proxy.Config) {
		u, err := url.Parse(raw)
		if err != nil {
			panic(err)
		}
		c.MCP = map[string]*url.URL{name: u}
	}
}

// mcpClient is the Go SDK's streamable client transport to the proxy's
// route of the MCP server notes.
func mcpClient(h *harness) *sdk.StreamableClientTransport {
	return &sdk.StreamableClientTransport{Endpoint: h.URL() + "/mcp/notes", MaxRetries: -1}
}

func TestMCPRecordReplayStreamableHTTP(t *testing.T) {
	for _, tc := range []struct {
		name        string
		jsonAnswers bool
	}{{"SSE answers", false}, {"JSON answers", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			srv, dir := mcpServer(t, tc.jsonAnswers)
			path := filepath.Join(t.TempDir(), "mcp.cassette")

			rec := startProxy(t, proxy.ModeRecord, path, "", withMCP("notes", srv.URL))
			recorded, err := mcptest.Play(ctx, mcpClient(rec), "a.txt", "hello")
			if err != nil {
				t.Fatalf("record: %v", err)
			}
			if b, err := os.ReadFile(filepath.Join(dir, "a.txt")); err != nil || string(b) != "hello" {
				t.Fatalf("record: the server wrote %q, %v; want hello", b, err)
			}
			if !slices.Contains(recorded.Tools, "write_note") {
				t.Fatalf("record: tools/list = %v", recorded.Tools)
			}
			rec.stop()
			if err := os.Remove(filepath.Join(dir, "a.txt")); err != nil {
				t.Fatal(err)
			}

			var misses []string
			rep := startProxy(t, proxy.ModeReplay, path, "", func(c *proxy.Config) {
				c.OnMiss = func(m string) { misses = append(misses, m) }
			})
			replayed, err := mcptest.Play(ctx, mcpClient(rep), "a.txt", "hello")
			if err != nil {
				t.Fatalf("replay: %v", err)
			}
			if replayed.Result != recorded.Result || !slices.Equal(replayed.Tools, recorded.Tools) {
				t.Errorf("replay answered %+v, recorded %+v", replayed, recorded)
			}
			if _, err := os.Stat(filepath.Join(dir, "a.txt")); !os.IsNotExist(err) {
				t.Errorf("replay: the file was written (stat: %v)", err)
			}
			if len(misses) > 0 {
				t.Errorf("replay missed: %q", misses)
			}
		})
	}
}

func TestMCPReplayMissNamesTheArgument(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, dir := mcpServer(t, false)
	path := filepath.Join(t.TempDir(), "mcp.cassette")
	rec := startProxy(t, proxy.ModeRecord, path, "", withMCP("notes", srv.URL))
	if _, err := mcptest.Play(ctx, mcpClient(rec), "a.txt", "hello"); err != nil {
		t.Fatalf("record: %v", err)
	}
	rec.stop()

	var misses []string
	rep := startProxy(t, proxy.ModeReplay, path, "", func(c *proxy.Config) {
		c.OnMiss = func(m string) { misses = append(misses, m) }
	})
	_, err := mcptest.Play(ctx, mcpClient(rep), "b.txt", "hello")
	if err == nil {
		t.Fatal("replay of a changed argument answered; want a miss")
	}
	for _, want := range []string{"params.arguments.path", "b.txt", "a.txt"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the client's error %q does not name %q", err, want)
		}
	}
	if len(misses) != 1 || !strings.Contains(misses[0], "params.arguments.path") {
		t.Errorf("OnMiss got %q; want one miss naming params.arguments.path", misses)
	}
	if _, err := os.Stat(filepath.Join(dir, "b.txt")); !os.IsNotExist(err) {
		t.Errorf("replay: the file was written (stat: %v)", err)
	}
	log, err := rep.p.Log(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range log {
		if e.Miss != "" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the log lists %d misses, want 1: %+v", n, log)
	}
}
