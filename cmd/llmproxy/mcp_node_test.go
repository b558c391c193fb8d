package main

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/mcptest"
)

// nodeMCPRound is what examples/node-mcp/client.mjs writes of one session.
type nodeMCPRound struct {
	Server    map[string]any   `json:"server"`
	SessionID string           `json:"sessionId"`
	Tools     []map[string]any `json:"tools"`
	Result    map[string]any   `json:"result"`
	Error     string           `json:"error"`
	Code      any              `json:"code"`
}

// runNodeMCP runs examples/node-mcp/client.mjs under `llmproxy MODE ARGS
// -- node client.mjs OUT PATH TEXT` and returns the exit code, the
// wrapper's stderr and what the client wrote.
func runNodeMCP(t *testing.T, dir string, args []string, path, text string) (int, string, nodeMCPRound) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "round.json")
	args = append(args, "--", "node", filepath.Join(dir, "client.mjs"), out, path, text)
	code, stdout, stderr := cliWait(t, 2*time.Minute, args...)
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("%v: exit %d, the client wrote nothing (%v)\nstdout:\n%s\nstderr:\n%s", args, code, err, stdout, stderr)
	}
	var r nodeMCPRound
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("%v: the client wrote %s: %v", args, raw, err)
	}
	return code, stderr, r
}

// cassetteLen is the number of interactions in the cassette at path.
func cassetteLen(t *testing.T, path string) int {
	t.Helper()
	c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	n, err := c.Len()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestMCPNodeSDK runs the npm @modelcontextprotocol/sdk Client with its
// StreamableHTTPClientTransport (examples/node-mcp) through `llmproxy
// record --mcp notes=URL` against the Go SDK test server (internal/mcptest,
// SSE and JSON answers): initialize, tools/list and tools/call write_note,
// which writes a file. `llmproxy replay` with the server gone answers the
// same session from the cassette and writes no file; a changed argument is
// a miss, a JSON-RPC error naming params.arguments.path, and exit 3.
func TestMCPNodeSDK(t *testing.T) {
	dir := nodeExample(t, "node-mcp")
	for _, tc := range []struct {
		name        string
		jsonAnswers bool
	}{{"SSE answers", false}, {"JSON answers", true}} {
		t.Run(tc.name, func(t *testing.T) {
			notes := t.TempDir()
			srv := httptest.NewServer(mcptest.Handler(notes, tc.jsonAnswers))
			defer srv.Close()
			cas := filepath.Join(t.TempDir(), "node-mcp.cassette")
			written := filepath.Join(notes, "a.txt")

			code, stderr, recorded := runNodeMCP(t, dir, []string{"record", "--cassette", cas, "--mcp", "notes=" + srv.URL}, "a.txt", "hello from node")
			if code != 0 || recorded.Error != "" {
				t.Fatalf("record: exit %d, client error %q\n%s", code, recorded.Error, stderr)
			}
			if b, err := os.ReadFile(written); err != nil || string(b) != "hello from node" {
				t.Fatalf("record: the server wrote %q, %v; want the note", b, err)
			}
			if recorded.Server["name"] != "notes" || len(recorded.Tools) == 0 || recorded.Result == nil || recorded.SessionID != "set" {
				t.Fatalf("record: the client saw %+v; want the notes server, its tools, a result and a session", recorded)
			}
			if got := cassetteLen(t, cas); got != 4 {
				t.Errorf("recorded %d interactions, want 4 (initialize, notifications/initialized, tools/list, tools/call)", got)
			}
			srv.Close()
			if err := os.Remove(written); err != nil {
				t.Fatal(err)
			}

			code, stderr, replayed := runNodeMCP(t, dir, []string{"replay", "--cassette", cas, "--fail-on-unused"}, "a.txt", "hello from node")
			if code != 0 || replayed.Error != "" {
				t.Fatalf("replay: exit %d, client error %q\n%s", code, replayed.Error, stderr)
			}
			if !reflect.DeepEqual(replayed, recorded) {
				t.Errorf("replay answered\n%+v\nrecorded\n%+v", replayed, recorded)
			}
			if _, err := os.Stat(written); !os.IsNotExist(err) {
				t.Errorf("replay: the file was written (stat: %v)", err)
			}

			code, stderr, missed := runNodeMCP(t, dir, []string{"replay", "--cassette", cas}, "b.txt", "hello from node")
			if code != 3 {
				t.Errorf("replay of a changed argument: exit %d, want 3\n%s", code, stderr)
			}
			if !strings.Contains(missed.Error, `params.arguments.path: got "b.txt", recorded "a.txt"`) || missed.Code != float64(-32001) {
				t.Errorf("replay of a changed argument: the client saw error %q (code %v); want the miss (-32001) naming params.arguments.path", missed.Error, missed.Code)
			}
			if !strings.Contains(stderr, "params.arguments.path") {
				t.Errorf("replay of a changed argument: the run's report does not list the miss:\n%s", stderr)
			}
			if _, err := os.Stat(filepath.Join(notes, "b.txt")); !os.IsNotExist(err) {
				t.Errorf("replay of a changed argument: the file was written (stat: %v)", err)
			}
		})
	}
}
