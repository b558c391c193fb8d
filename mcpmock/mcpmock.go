// Package mcpmock serves function-tool presets as an MCP server, built
// with the official Go SDK: tools/list lists each preset with its
// arguments schema as the input schema and its result schema as the
// output schema, and tools/call answers from preset fixtures (a scenario's),
// whose arguments must equal the call's as JSON values. A call no fixture
// answers is a JSON-RPC error naming the closest fixture of that tool and
// the first path at which the arguments differ.
package mcpmock

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"github.com/llmproxy/llmproxy/internal/jsonvalue"
	"github.com/llmproxy/llmproxy/presets"
	"github.com/llmproxy/llmproxy/scenario"
)

// CodeNoFixture is the JSON-RPC error code of a call no fixture answers.
const CodeNoFixture = -32001

// Source is what a mock MCP server serves: its tools and their fixtures.
type Source struct {
	Tools    []presets.Descriptor
	Fixtures []scenario.Fixture
}

// Parse reads what --mcp NAME=SPEC names: "presets" (every preset, no
// fixture), a comma-separated list of preset names (no fixture), or a
// scenario file (.yaml, .yml or .json; its fixtures, and the presets they
// use). An unknown preset or a scenario that does not load is an error
// naming it.
func Parse(spec string) (Source, error) {
	switch ext := strings.ToLower(filepath.Ext(spec)); {
	case spec == "presets":
		return Source{Tools: presets.All()}, nil
	case ext == ".yaml" || ext == ".yml" || ext == ".json":
		return FromScenario(spec)
	}
	var src Source
	for _, name := range strings.Split(spec, ",") {
		d, ok := presets.Lookup(strings.TrimSpace(name))
		if !ok {
			if _, err := os.Stat(spec); err == nil {
				return FromScenario(spec)
			}
			return Source{}, fmt.Errorf("MCP mock %q: no preset %q (and no scenario file of that name); the presets are listed by llmproxy presets", spec, name)
		}
		src.Tools = append(src.Tools, d)
	}
	return src, nil
}

// FromScenario is the source of a scenario file: its fixtures, and the
// presets they use.
func FromScenario(path string) (Source, error) {
	s, err := scenario.Load(path)
	if err != nil {
		return Source{}, err
	}
	var src Source
	seen := map[string]bool{}
	for _, f := range s.Fixtures {
		src.Fixtures = append(src.Fixtures, f)
		if d, ok := presets.Lookup(f.Preset); ok && !seen[f.Preset] {
			seen[f.Preset] = true
			src.Tools = append(src.Tools, d)
		}
	}
	return src, nil
}

// New builds the MCP server name serving src.
func New(name string, src Source) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: name, Version: "llmproxy-mock"}, nil)
	for _, d := range src.Tools {
		var fixtures []scenario.Fixture
		for _, f := range src.Fixtures {
			if f.Preset == d.Name() {
				fixtures = append(fixtures, f)
			}
		}
		t := &sdk.Tool{Name: d.Name(), Description: d.Description(),
			InputSchema: json.RawMessage(d.ArgumentsSchema()), OutputSchema: json.RawMessage(d.ResultSchema())}
		s.AddTool(t, answer(d.Name(), fixtures))
	}
	return s
}

// Handler serves New(name, src) over streamable HTTP.
func Handler(name string, src Source) http.Handler {
	s := New(name, src)
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
}

// Run serves New(name, src) over t (stdio: &sdk.StdioTransport{}) until
// the client goes.
func Run(ctx context.Context, name string, src Source, t sdk.Transport) error {
	return New(name, src).Run(ctx, t)
}

// answer is the tools/call handler of one tool: the first fixture whose
// arguments equal the call's answers it.
func answer(tool string, fixtures []scenario.Fixture) sdk.ToolHandler {
	return func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		args := []byte("{}")
		if raw := req.Params.Arguments; len(raw) > 0 && string(raw) != "null" {
			args = raw
		}
		for _, f := range fixtures {
			if eq, err := jsonvalue.Equal(args, f.Call.Arguments); err == nil && eq {
				return result(f), nil
			}
		}
		return nil, &jsonrpc.Error{Code: CodeNoFixture, Message: noFixture(tool, args, fixtures)}
	}
}

// result is a fixture's result as an MCP tool result: its JSON as the text
// content and, unless it is the preset's error envelope, as the structured
// content.
func result(f scenario.Fixture) *sdk.CallToolResult {
	out := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(f.Result.Content)}}, IsError: f.Result.IsError}
	if !f.Result.IsError {
		out.StructuredContent = json.RawMessage(f.Result.Content)
	}
	return out
}

// noFixture says why no fixture answers a call: none for the tool, or the
// closest one (the fewest differing paths) and where it differs first.
func noFixture(tool string, args []byte, fixtures []scenario.Fixture) string {
	if len(fixtures) == 0 {
		return fmt.Sprintf("llmproxy mock: no fixture answers %s: the mock has no fixture of it", tool)
	}
	best, bestN, first := "", -1, ""
	for _, f := range fixtures {
		d, found, err := jsonvalue.First(args, f.Call.Arguments)
		if err != nil || !found {
			continue
		}
		n := len(d.Path)
		if bestN < 0 || n > bestN { // a deeper first difference shares more
			best, bestN = f.Name, n
			first = fmt.Sprintf("%s: got %s, fixture has %s", pathOf(d), rawOf(d.Got), rawOf(d.Want))
		}
	}
	if best == "" {
		return fmt.Sprintf("llmproxy mock: no fixture answers %s with arguments %s", tool, args)
	}
	return fmt.Sprintf("llmproxy mock: no fixture answers %s with arguments %s; the closest is fixture %s, which differs at arguments.%s", tool, args, best, first)
}

func pathOf(d jsonvalue.Difference) string { return jsonvalue.Path(d.Path) }

func rawOf(rs []gjson.Result) string {
	if len(rs) == 0 {
		return "(absent)"
	}
	s := rs[0].Raw
	if len(s) > 60 {
		s = s[:60] + "…"
	}
	return s
}
