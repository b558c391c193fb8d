package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/sjson"

	"github.com/llmproxy/llmproxy/internal/jsonvalue"
)

// Shape is how a tool-result turn carries the tool's own output.
type Shape uint8

const (
	// ShapeString: the content is a JSON string holding the output (OpenAI
	// chat, Responses, Ollama, Anthropic).
	ShapeString Shape = iota + 1
	// ShapeTextBlock: the content is an array of one text block whose text
	// is the output (Anthropic's SDKs, OpenAI content parts).
	ShapeTextBlock
	// ShapeObject: the content is the output object itself (Gemini
	// functionResponse.response).
	ShapeObject
	// ShapeOutputObject: a Gemini response {"output": <value>}.
	ShapeOutputObject
	// ShapeOutputString: a Gemini response {"output": "<text>"}.
	ShapeOutputString
	// ShapeJSONBlock: the content is an array of one json block whose
	// value is the output (Bedrock Converse [{"json": <value>}]).
	ShapeJSONBlock
)

// Output finds the tool's own output inside the result's Content, read from
// a request of the given kind, and says how it is carried: the text of a
// JSON string or of a single text block, or for Gemini the response object
// itself or its only member "output" (the text of a string, else the value).
// The output is returned as sent, not checked to be JSON. Content that
// carries no single output (absent, several blocks, an object outside
// Gemini) is an error saying why.
func (r ToolResult) Output(kind Kind) ([]byte, Shape, error) {
	content := bytes.TrimSpace(r.Content)
	if len(content) == 0 {
		return nil, 0, errors.New("the tool-result turn carries no content")
	}
	switch content[0] {
	case '"':
		if out, ok := jsonvalue.Unquote(content); ok {
			return out, ShapeString, nil
		}
		var s string
		if err := json.Unmarshal(content, &s); err != nil {
			return nil, 0, fmt.Errorf("content: %v", err)
		}
		return []byte(s), ShapeString, nil
	case '[':
		var blocks []struct {
			Type string          `json:"type"`
			Text *string         `json:"text"`
			JSON json.RawMessage `json:"json"`
		}
		if err := json.Unmarshal(content, &blocks); err != nil {
			return nil, 0, fmt.Errorf("content blocks: %v", err)
		}
		if (kind == KindBedrockConverse || kind == KindBedrockInvoke) && len(blocks) == 1 && blocks[0].Type == "" {
			// Converse blocks are named by their one member: {"text"} or {"json"}.
			if blocks[0].Text != nil {
				return []byte(*blocks[0].Text), ShapeTextBlock, nil
			}
			if len(blocks[0].JSON) > 0 {
				return bytes.TrimSpace(blocks[0].JSON), ShapeJSONBlock, nil
			}
		}
		if len(blocks) != 1 || blocks[0].Text == nil || !strings.HasSuffix(blocks[0].Type, "text") {
			return nil, 0, fmt.Errorf("the content is %d blocks, not one text block", len(blocks))
		}
		return []byte(*blocks[0].Text), ShapeTextBlock, nil
	case '{':
		if kind != KindGemini {
			return nil, 0, fmt.Errorf("%s results carry text, not an object", kind)
		}
		var members map[string]json.RawMessage
		if err := json.Unmarshal(content, &members); err != nil {
			return nil, 0, fmt.Errorf("functionResponse.response: %v", err)
		}
		if out, ok := members["output"]; ok && len(members) == 1 {
			out = bytes.TrimSpace(out)
			if len(out) > 0 && out[0] == '"' {
				var s string
				if err := json.Unmarshal(out, &s); err != nil {
					return nil, 0, fmt.Errorf("functionResponse.response.output: %v", err)
				}
				return []byte(s), ShapeOutputString, nil
			}
			return out, ShapeOutputObject, nil
		}
		return content, ShapeObject, nil
	}
	return nil, 0, fmt.Errorf("the content is %.20s, neither text nor an object", content)
}

// SetOutput writes output, a compact JSON value, into a request body as the
// output of the result whose Content is at path (ToolResult.Path), carried
// the way shape says: as a JSON string holding output, as the text of a
// single text block, or as the value itself (for ShapeObject it must be an
// object). Nothing else in the body changes. A shape the output cannot take
// or an edit that fails wraps ErrMalformed.
func SetOutput(body []byte, path string, shape Shape, output []byte) ([]byte, error) {
	var at string
	var value []byte
	switch shape {
	case ShapeString:
		at, value = path, jsonString(output)
	case ShapeTextBlock:
		at, value = path+".0.text", jsonString(output)
	case ShapeObject:
		if len(output) == 0 || output[0] != '{' {
			return nil, fmt.Errorf("%s: %w: Gemini needs an object result", path, ErrMalformed)
		}
		at, value = path, output
	case ShapeOutputObject:
		at, value = path+".output", output
	case ShapeOutputString:
		at, value = path+".output", jsonString(output)
	case ShapeJSONBlock:
		at, value = path+".0.json", output
	default:
		return nil, fmt.Errorf("%s: %w: unknown result shape %d", path, ErrUnsupported, shape)
	}
	out, err := sjson.SetRawBytes(body, at, value)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", at, ErrMalformed, err)
	}
	return out, nil
}

// jsonString is text as a JSON string, as encoding/json writes it without
// HTML escaping: the form scrubbed cassettes hold.
func jsonString(text []byte) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(string(text)) // a string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// IDlessCalls reports whether the API's tool calls may carry no id: Gemini
// calls usually do not, and Ollama's as its documentation shows them. Such
// a call is known by its SyntheticID, and RewriteCallIDs can give it one.
func (k Kind) IDlessCalls() bool { return k == KindGemini || k == KindOllama }

// EchoesDropIDs reports whether a client may echo a call in a later request
// without the id the call had: Ollama clients do (the Ollama documentation
// shows histories without ids, and an ollama-python whose ToolCall has no id
// field drops it), so such an echo is linked to its call by the
// conversation alone.
func (k Kind) EchoesDropIDs() bool { return k == KindOllama }

// Answers returns, for each of the request's ToolResults, the index in
// ToolCalls of the echoed call it answers, or -1 when no echoed call of the
// request is its own. A result with an id answers the first echoed call
// with that id that no earlier result answers. One without an id answers
// by function name:
//
//   - Ollama: a tool message names its function (tool_name), and the
//     documented client sends nothing else, whether the call had an id or
//     not; it answers the earliest call to that function echoed in an
//     earlier turn that no result answers yet, the results carrying ids
//     being counted first.
//   - Gemini, and the other APIs (whose results normally carry ids): the
//     n-th result without id for a function answers the n-th echoed call
//     without id to it, the pairing of their SyntheticIDs that
//     RewriteCallIDs keeps.
func (r Request) Answers() []int {
	out := make([]int, len(r.ToolResults))
	answered := make([]bool, len(r.ToolCalls))
	for i, res := range r.ToolResults {
		out[i] = -1
		if res.CallID == "" {
			continue
		}
		for p, tc := range r.ToolCalls {
			if !answered[p] && tc.ID == res.CallID {
				answered[p], out[i] = true, p
				break
			}
		}
	}
	results := map[string]int{} // id-less results so far, by name
	for i, res := range r.ToolResults {
		if res.CallID != "" {
			continue
		}
		switch r.Kind {
		case KindOllama:
			at := turnOf(res.Path)
			for p, tc := range r.ToolCalls {
				if !answered[p] && tc.Name == res.Name && turnOf(tc.Path) < at {
					answered[p], out[i] = true, p
					break
				}
			}
		default:
			results[res.Name]++
			n := results[res.Name]
			for p, tc := range r.ToolCalls {
				if tc.ID == "" && tc.Name == res.Name {
					if n--; n == 0 {
						out[i] = p
						break
					}
				}
			}
		}
	}
	return out
}

// turnOf returns the index of the turn a request path is in: 3 for
// "messages.3.content" or "messages.3.tool_calls.0", or -1.
func turnOf(path string) int {
	_, rest, ok := strings.Cut(path, ".")
	if !ok {
		return -1
	}
	idx, _, _ := strings.Cut(rest, ".")
	n, err := strconv.Atoi(idx)
	if err != nil || n < 0 {
		return -1
	}
	return n
}
