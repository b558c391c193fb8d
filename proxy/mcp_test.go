package proxy_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/mcptest"
	"github.com/llmproxy/llmproxy/mcpmock"
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
	// On the wire the miss is a JSON-RPC error with the request's id under
	// HTTP 200, as a server answers a request it accepted: clients (the npm
	// SDK's) read a 4xx as a transport failure and lose the code and data.
	status, h, body := postMCP(t, rep, `{"jsonrpc":"2.0","id":"call-7","method":"tools/call","params":{"name":"write_note","arguments":{"path":"c.txt","text":"hello"}}}`, nil)
	if status != http.StatusOK || h.Get(proxy.MissHeader) != "1" || !strings.Contains(body, `"id":"call-7"`) ||
		!strings.Contains(body, `"code":-32001`) || !strings.Contains(body, `"path":"params.arguments.path"`) {
		t.Errorf("a missed tools/call: %d (%s %q) %s; want 200, the miss header and a JSON-RPC error -32001 with the live id and the path in data", status, proxy.MissHeader, h.Get(proxy.MissHeader), body)
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
	if n != 2 {
		t.Errorf("the log lists %d misses, want 2: %+v", n, log)
	}
}

// recordNotes records one session of mcptest.Play through a proxy into a
// new cassette, whose path it returns.
func recordNotes(t *testing.T, jsonAnswers bool) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, _ := mcpServer(t, jsonAnswers)
	path := filepath.Join(t.TempDir(), "mcp.cassette")
	rec := startProxy(t, proxy.ModeRecord, path, "", withMCP("notes", srv.URL))
	if _, err := mcptest.Play(ctx, mcpClient(rec), "a.txt", "hello"); err != nil {
		t.Fatalf("record: %v", err)
	}
	rec.stop()
	return path
}

// postMCP posts a JSON-RPC body to the proxy's route of the server notes
// with headers, and returns the status, the headers and the body.
func postMCP(t *testing.T, h *harness, body string, header map[string]string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.URL()+"/mcp/notes", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// TestMCPReplayIgnoresRunParts: the JSON-RPC id (as a number or a
// string), the session id, the protocol version and the progress token
// differ from the recording's and the request still matches; the answer
// carries the live id and a session id of the proxy's own.
func TestMCPReplayIgnoresRunParts(t *testing.T) {
	for _, tc := range []struct {
		name        string
		jsonAnswers bool
	}{{"SSE answers", false}, {"JSON answers", true}} {
		t.Run(tc.name, func(t *testing.T) {
			path := recordNotes(t, tc.jsonAnswers)
			var misses []string
			rep := startProxy(t, proxy.ModeReplay, path, "", func(c *proxy.Config) {
				c.OnMiss = func(m string) { misses = append(misses, m) }
			})
			status, h, body := postMCP(t, rep, `{"jsonrpc":"2.0","id":"init-x","method":"initialize","params":{"clientInfo":{"name":"test-client","version":"1.0.0"},"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true}}}}`, nil)
			if status != http.StatusOK || !strings.Contains(body, `"id":"init-x"`) || strings.Contains(body, `"id":2`) {
				t.Errorf("initialize: %d %s; want 200 with the live id \"init-x\"", status, body)
			}
			session := h.Get(proxy.MCPSessionHeader)
			if !strings.HasPrefix(session, "llmproxy-") {
				t.Errorf("initialize: session id %q is not the proxy's own", session)
			}
			status, _, body = postMCP(t, rep, `{"jsonrpc":"2.0","id":977,"method":"tools/call","params":{"_meta":{"progressToken":"tok-9"},"name":"write_note","arguments":{"text":"hello","path":"a.txt"}}}`,
				map[string]string{proxy.MCPSessionHeader: "other-session", proxy.MCPVersionHeader: "2025-03-26"})
			if status != http.StatusOK || !strings.Contains(body, `"id":977`) || !strings.Contains(body, `"bytes":5`) {
				t.Errorf("tools/call: %d %s; want 200, the live id 977 and the recorded result", status, body)
			}
			if len(misses) > 0 {
				t.Errorf("missed: %q", misses)
			}
			log, err := rep.p.Log(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if e := log[len(log)-1]; len(e.ToolCalls) != 1 || e.ToolCalls[0].Name != "write_note" {
				t.Errorf("the log's last entry lists tool calls %+v; want the MCP call write_note", e.ToolCalls)
			}
		})
	}
}

// TestMCPBadInput: what is not one JSON-RPC message is a JSON-RPC error
// naming the problem, in record (nothing forwarded, nothing recorded) and
// in replay; an unrecorded notification is accepted, not a miss; a method
// the route does not answer is 405.
func TestMCPBadInput(t *testing.T) {
	path := recordNotes(t, true)
	for _, mode := range []proxy.Mode{proxy.ModeRecord, proxy.ModeReplay} {
		t.Run(mode.String(), func(t *testing.T) {
			forwarded := 0
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { forwarded++ }))
			defer up.Close()
			copyPath := filepath.Join(t.TempDir(), "copy.cassette")
			b, _ := os.ReadFile(path)
			if err := os.WriteFile(copyPath, b, 0o600); err != nil {
				t.Fatal(err)
			}
			h := startProxy(t, mode, copyPath, "", withMCP("notes", up.URL))
			for _, tc := range []struct{ name, body, want string }{
				{"malformed", `{"jsonrpc":"2.0","id":1,"method":`, `"code":-32700`},
				{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, "batch"},
				{"not JSON-RPC", `{"id":1,"method":"ping"}`, "jsonrpc"},
				{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, "id is"},
				{"no method", `{"jsonrpc":"2.0","id":1}`, "no method"},
			} {
				status, _, body := postMCP(t, h, tc.body, nil)
				if status != http.StatusBadRequest || !strings.Contains(body, `"jsonrpc":"2.0"`) || !strings.Contains(body, tc.want) {
					t.Errorf("%s: %d %s; want 400, a JSON-RPC error saying %q", tc.name, status, body, tc.want)
				}
			}
			if forwarded != 0 {
				t.Errorf("%d bad requests were forwarded", forwarded)
			}
			if mode == proxy.ModeReplay {
				status, _, body := postMCP(t, h, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`, nil)
				if status != http.StatusAccepted {
					t.Errorf("unrecorded notification: %d %s; want 202", status, body)
				}
				req, _ := http.NewRequest(http.MethodPut, h.URL()+"/mcp/notes", nil)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusMethodNotAllowed {
					t.Errorf("PUT: %d, want 405", resp.StatusCode)
				}
			}
			h.stop()
			c, err := cassette.Open(copyPath, cassette.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			orig, err := cassette.Open(path, cassette.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer orig.Close()
			if n, m := mustLen(t, c), mustLen(t, orig); n != m {
				t.Errorf("the cassette holds %d interactions after bad input, %d before", n, m)
			}
		})
	}
}

func mustLen(t *testing.T, c *cassette.Cassette) int {
	t.Helper()
	n, err := c.Len()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestMCPRecordBadServers: a server that never answers, an SSE answer that
// never ends or one past --max-response leave nothing recorded, and the
// client gets an error, not a hang.
func TestMCPRecordBadServers(t *testing.T) {
	const call = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`
	stop := make(chan struct{}) // lets the silent server's handlers end with the test
	defer close(stop)
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
	}{
		{"never answers", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-stop:
			}
		}},
		{"endless SSE", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			for r.Context().Err() == nil {
				if _, err := io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\n"); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
		}},
		{"huge result", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"`+strings.Repeat("x", 1<<20)+`"}]}}`)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := httptest.NewServer(tc.handler)
			path := filepath.Join(t.TempDir(), "bad.cassette")
			h := startProxy(t, proxy.ModeRecord, path, "", withMCP("notes", up.URL), func(c *proxy.Config) {
				c.UpstreamTimeout = 300 * time.Millisecond
				c.MaxResponse = 64 << 10
			})
			req, _ := http.NewRequest(http.MethodPost, h.URL()+"/mcp/notes", strings.NewReader(call))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
				if err == nil && resp.StatusCode < 400 {
					t.Errorf("the client got %d and a whole body; want an error", resp.StatusCode)
				}
			}
			h.stop()
			up.CloseClientConnections()
			go up.Close() // the silent handler ends with the test
			c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if n := mustLen(t, c); n != 0 {
				t.Errorf("%d interactions recorded, want none", n)
			}
		})
	}
}

// TestMCPMockRoute: in mock mode /mcp/NAME is served by the MCP mock NAME,
// and a name with no mock is a miss in JSON-RPC shape.
func TestMCPMockRoute(t *testing.T) {
	src, err := mcpmock.Parse("../docs/scenarios/weather.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var misses []string
	p, err := proxy.New(proxy.Config{Mode: proxy.ModeMock, MCPMocks: map[string]http.Handler{"weather": mcpmock.Handler("weather", src)},
		OnMiss: func(m string) { misses = append(misses, m) }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	defer p.Close()
	ctx := context.Background()
	cs, err := mcptest.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: srv.URL + "/mcp/weather", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "weather", Arguments: map[string]any{"location": "Paris", "unit": "celsius"}})
	cs.Close()
	if err != nil || res.IsError {
		t.Fatalf("tools/call: %v %+v", err, res)
	}
	h := &harness{srv: srv}
	status, _, body := postMCP(t, h, `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`, nil)
	h.srv = nil
	_ = status
	if !strings.Contains(body, `"id":5`) || !strings.Contains(body, "no MCP mock") {
		t.Errorf("/mcp/notes in mock: %s; want a JSON-RPC error for id 5 saying there is no such mock", body)
	}
	if len(misses) != 1 {
		t.Errorf("misses: %q; want one", misses)
	}
}

// TestMCPRecordUnknownServer: in record, /mcp/NAME for a NAME no --mcp
// gave is a JSON-RPC error saying which flag to give; "mcp" is no upstream
// name.
func TestMCPRecordUnknownServer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.cassette")
	h := startProxy(t, proxy.ModeRecord, path, "")
	status, _, body := postMCP(t, h, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, nil)
	if status != http.StatusBadGateway || !strings.Contains(body, `"id":3`) || !strings.Contains(body, "--mcp notes=URL") {
		t.Errorf("got %d %s; want 502, a JSON-RPC error for id 3 naming --mcp notes=URL", status, body)
	}
	if err := proxy.CheckUpstreamName("mcp"); err == nil {
		t.Error(`CheckUpstreamName("mcp") = nil; want an error`)
	}
}
