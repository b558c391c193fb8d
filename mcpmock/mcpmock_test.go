package mcpmock_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/llmproxy/llmproxy/mcpmock"
)

const weather = "../docs/scenarios/weather.yaml"

// session connects the Go SDK's client to a mock of spec, in memory or
// over streamable HTTP.
func session(t *testing.T, spec string, overHTTP bool) *sdk.ClientSession {
	t.Helper()
	ctx := context.Background()
	src, err := mcpmock.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	var ct sdk.Transport
	if overHTTP {
		srv := httptest.NewServer(mcpmock.Handler("mock", src))
		t.Cleanup(srv.Close)
		ct = &sdk.StreamableClientTransport{Endpoint: srv.URL, MaxRetries: -1}
	} else {
		st, c := sdk.NewInMemoryTransports()
		go func() { _ = mcpmock.Run(ctx, "mock", src, st) }()
		ct = c
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestMockServesScenarioFixtures(t *testing.T) {
	for _, overHTTP := range []bool{false, true} {
		cs := session(t, weather, overHTTP)
		ctx := context.Background()
		tools, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(tools.Tools) != 1 || tools.Tools[0].Name != "weather" || tools.Tools[0].InputSchema == nil || tools.Tools[0].OutputSchema == nil {
			t.Fatalf("tools/list = %+v; want weather with its input and output schemas", tools.Tools)
		}
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "weather", Arguments: map[string]any{"unit": "celsius", "location": "Paris"}})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res.StructuredContent)
		if res.IsError || !strings.Contains(string(b), `"temperature":21`) {
			t.Errorf("tools/call = %s (error %v); want the fixture paris's result", b, res.IsError)
		}
		_, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "weather", Arguments: map[string]any{"unit": "celsius", "location": "Rome"}})
		if err == nil || !strings.Contains(err.Error(), "fixture paris") || !strings.Contains(err.Error(), "location") {
			t.Errorf("tools/call Rome: %v; want an error naming the closest fixture paris and the path location", err)
		}
	}
}

func TestMockPresets(t *testing.T) {
	cs := session(t, "presets", false)
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if len(names) != 12 || !slices.Contains(names, "web_search") {
		t.Errorf("tools/list = %v; want the twelve presets", names)
	}
	_, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "web_search", Arguments: map[string]any{"query": "x"}})
	if err == nil || !strings.Contains(err.Error(), "no fixture") {
		t.Errorf("tools/call with no fixture: %v; want an error saying so", err)
	}
}

func TestParseBadSpec(t *testing.T) {
	for _, spec := range []string{"nosuchpreset", "web_search,nope", "missing.yaml"} {
		if _, err := mcpmock.Parse(spec); err == nil {
			t.Errorf("Parse(%q) succeeded; want an error", spec)
		}
	}
}
