package cassette

import (
	"encoding/json"
	"time"

	"github.com/llmproxy/llmproxy/internal/jsonvalue"
	"github.com/llmproxy/llmproxy/mcp"
	"github.com/llmproxy/llmproxy/wire"
)

// Summary is the short form of an interaction, for listings (llmproxy ls and
// the proxy's API): where the request went, what answered it, and the tool
// calls the response made.
type Summary struct {
	ID        uint64     `json:"id"`
	Upstream  string     `json:"upstream"`
	Provider  string     `json:"provider,omitempty"`
	Kind      string     `json:"kind"`
	Method    string     `json:"method"`
	Path      string     `json:"path"`
	Status    int        `json:"status"`
	Stream    bool       `json:"stream"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Model is the model the provider said answered (wire reads it from
	// the recorded answer: "model", Gemini's "modelVersion"); "" when the
	// answer names none.
	Model string `json:"model,omitempty"`
	// RecordedAt is when the interaction was recorded.
	RecordedAt time.Time `json:"recorded_at"`
	// Consumed is set by a listing that knows what this process served (the
	// proxy's API); nil otherwise.
	Consumed *bool `json:"consumed,omitempty"`
}

// ToolCall is a tool call a response made, as listings show it.
type ToolCall struct {
	// ID is the call id on the wire ("" when the provider sends none).
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the arguments object; arguments that are not valid JSON
	// (a truncated stream) are shown as a JSON string.
	Arguments json.RawMessage `json:"arguments"`
}

// ToolResult is a tool result a request sent, as listings show it.
type ToolResult struct {
	// ID is the id of the call it answers ("" when the provider sends none).
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	// Content is the JSON value sent as the result, as sent: a JSON string
	// stays a string, an array of content blocks stays an array.
	Content json.RawMessage `json:"content"`
	IsError bool            `json:"is_error,omitempty"`
}

// Summarize returns the listing form of an interaction, with the tool calls
// its response made as package wire reads them (none when it cannot), or,
// for an MCP tools/call, the call its request made.
func Summarize(i *Interaction) Summary {
	sum := routeOf(i)
	if wire.Kind(i.Kind) == wire.KindMCP {
		// An MCP tools/call is the agent calling a tool: its request is
		// the call.
		if name, args, _, ok := mcp.ToolCall(i.Request.Body); ok {
			sum.ToolCalls = []ToolCall{{Name: name, Arguments: rawJSON(args, "{}")}}
		}
		return sum
	}
	resp, err := wire.ParseResponse(wire.Kind(i.Kind), i.Response.WireFraming(), i.Response.Bytes())
	if err == nil {
		sum.ToolCalls = ToolCalls(resp.ToolCalls)
	}
	sum.Model = resp.Model
	return sum
}

// ToolCalls is the listing form of tool calls read by package wire.
func ToolCalls(calls []wire.ToolCall) []ToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := make([]ToolCall, len(calls))
	for n, c := range calls {
		out[n] = ToolCall{ID: c.ID, Name: c.Name, Arguments: rawJSON(c.Arguments, "{}")}
	}
	return out
}

// ToolResults is the listing form of tool results read by package wire.
func ToolResults(results []wire.ToolResult) []ToolResult {
	if len(results) == 0 {
		return nil
	}
	out := make([]ToolResult, len(results))
	for n, r := range results {
		out[n] = ToolResult{ID: r.CallID, Name: r.Name, Content: rawJSON(r.Content, "null"), IsError: r.IsError}
	}
	return out
}

// rawJSON shows b as JSON: itself when it is valid JSON, else as a string.
func rawJSON(b []byte, empty string) json.RawMessage {
	switch {
	case len(b) == 0:
		return json.RawMessage(empty)
	case jsonvalue.Valid(b):
		return json.RawMessage(b)
	}
	q, _ := json.Marshal(string(b))
	return q
}

// routeOf is the part of an interaction's Summary that its record's front
// and head hold: all but the tool calls and the model.
func routeOf(i *Interaction) Summary {
	return Summary{
		ID: i.ID, Upstream: i.Upstream, Provider: i.Provider, Kind: i.Kind, Method: i.Request.Method,
		Path: i.Request.Path, Status: i.Response.Status, Stream: i.Response.Streamed(), RecordedAt: i.RecordedAt,
	}
}
