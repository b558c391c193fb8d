package main

// The example agent's shape on Ollama's native chat API (POST /api/chat),
// with plain net/http: there is no Ollama SDK among the module's
// dependencies. It speaks the API as Ollama documents it: tools in the
// OpenAI-chat-like shape, object arguments, NDJSON lines unless
// "stream": false, and each result sent back as a "tool" message naming
// its function. Like geminiAgent it also sends back the call's id, when the
// call has one, as the tool message's tool_call_id: after scrub every call
// has one, and the scrubbed requests carry it (docs/scrub.md, step 5).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/llmproxy/llmproxy/examples/agent"
	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/presets"
)

// ollamaModel is the model the Ollama agent asks for.
const ollamaModel = "llama3.2"

// ollamaRequest is the body of POST /api/chat.
type ollamaRequest struct {
	Model    string            `json:"model"`
	Messages []ollamaMessage   `json:"messages"`
	Tools    []json.RawMessage `json:"tools"`
	Stream   bool              `json:"stream"`
}

// ollamaMessage is one message of the conversation, sent or received.
type ollamaMessage struct {
	Role       string           `json:"role"`
	Content    string           `json:"content"`
	ToolCalls  []ollamaToolCall `json:"tool_calls,omitempty"`
	ToolName   string           `json:"tool_name,omitempty"`
	ToolCallID string           `json:"tool_call_id,omitempty"`
}

// ollamaToolCall is a call the model made. The id is absent from Ollama's
// documented calls; the current server, and a scrubbed cassette, add one.
type ollamaToolCall struct {
	ID       string `json:"id,omitempty"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// ollamaChunk is the non-streamed answer, or one NDJSON line of a stream.
type ollamaChunk struct {
	Message ollamaMessage `json:"message"`
	Done    bool          `json:"done"`
	Error   string        `json:"error"`
}

// ollamaTools are the preset tools as Ollama tool definitions, which have
// the OpenAI chat shape {"type":"function","function":{…}}.
func ollamaTools() []json.RawMessage {
	var defs []json.RawMessage
	for _, d := range presetTools() {
		defs = append(defs, d.OpenAIChatTool())
	}
	return defs
}

// ollamaAgent runs one conversation on Ollama's chat API through a proxy at
// base, under its "ollama" upstream. It returns the model's final text, or
// an error naming what failed: the HTTP exchange, the body, or a tool.
func ollamaAgent(ctx context.Context, base string, tools agent.Tools, prompt string, stream bool) (string, error) {
	req := ollamaRequest{
		Model: ollamaModel, Tools: ollamaTools(), Stream: stream,
		Messages: []ollamaMessage{{Role: "user", Content: prompt}},
	}
	for turn := 0; turn < agentTurns; turn++ {
		msg, err := ollamaChat(ctx, base+"/ollama/api/chat", req)
		if err != nil {
			return "", fmt.Errorf("ollama turn %d: %w", turn+1, err)
		}
		if len(msg.ToolCalls) == 0 {
			return msg.Content, nil
		}
		req.Messages = append(req.Messages, msg)
		for _, tc := range msg.ToolCalls {
			res, err := ollamaToolMessage(ctx, tools, tc)
			if err != nil {
				return "", fmt.Errorf("ollama turn %d: %w", turn+1, err)
			}
			req.Messages = append(req.Messages, res)
		}
	}
	return "", errors.New("ollama: no final answer")
}

// ollamaToolMessage runs one call and returns the tool message that answers
// it: the result as Tools gave it, the function's name, and the call's id
// when the call carried one (as geminiAgent sends it back with the answer).
func ollamaToolMessage(ctx context.Context, tools agent.Tools, tc ollamaToolCall) (ollamaMessage, error) {
	res, err := tools.Execute(ctx, presets.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	if err != nil {
		return ollamaMessage{}, err
	}
	return ollamaMessage{Role: "tool", Content: string(res.Content), ToolName: tc.Function.Name, ToolCallID: tc.ID}, nil
}

// ollamaChat posts one chat request and returns the assistant message: the
// single JSON object, or the NDJSON lines up to "done": true folded into one
// message (content concatenated, tool calls in order).
func ollamaChat(ctx context.Context, url string, req ollamaRequest) (ollamaMessage, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return ollamaMessage{}, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return ollamaMessage{}, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		return ollamaMessage{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return ollamaMessage{}, fmt.Errorf("POST %s: %s: %s", url, resp.Status, strings.TrimSpace(string(b)))
	}
	msg, err := readOllama(resp.Body, req.Stream)
	if err != nil {
		return ollamaMessage{}, fmt.Errorf("POST %s: %w", url, err)
	}
	return msg, nil
}

// readOllama reads an answer: with stream, JSON lines until one says
// "done": true; without, exactly one JSON object, which must say it too.
func readOllama(r io.Reader, stream bool) (ollamaMessage, error) {
	dec := json.NewDecoder(r)
	msg := ollamaMessage{Role: "assistant"}
	for n := 1; ; n++ {
		var c ollamaChunk
		if err := dec.Decode(&c); err != nil {
			return ollamaMessage{}, fmt.Errorf("answer line %d: %w", n, err)
		}
		if c.Error != "" {
			return ollamaMessage{}, fmt.Errorf("answer line %d: error %q", n, c.Error)
		}
		msg.Content += c.Message.Content
		msg.ToolCalls = append(msg.ToolCalls, c.Message.ToolCalls...)
		if c.Done {
			break
		}
		if !stream {
			return ollamaMessage{}, errors.New(`the answer to "stream": false is not done`)
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return ollamaMessage{}, errors.New("the answer goes on after the line that says done")
	}
	return msg, nil
}

// ollamaIDless plays l on Ollama's chat API as Ollama documents it and as
// older servers answer: fake.Ollama's bytes without the id the current
// server gives each call, so that scrub has to address the calls by their
// wire.SyntheticID. A response with tool calls that does not carry the id
// to strip is answered with a 500 naming the problem, so that a change in
// the fake cannot quietly turn this back into the id-carrying case.
func ollamaIDless(l fake.ToolLoop) fake.Script {
	s := fake.Ollama(l)
	id := []byte(`"id":"` + l.CallID + `",`)
	return fake.ScriptFunc(func(r *fake.Request) *fake.Response {
		resp := s.Respond(r)
		raw := resp.Bytes()
		if !bytes.Contains(raw, []byte(`"tool_calls"`)) {
			return resp
		}
		if bytes.Count(raw, id) != 1 {
			return &fake.Response{Status: http.StatusInternalServerError, Body: []byte(`{"error":"ollamaIDless: no call id ` + l.CallID + ` to strip"}`)}
		}
		resp.Body = bytes.ReplaceAll(resp.Body, id, nil)
		for i, e := range resp.Events {
			resp.Events[i] = bytes.ReplaceAll(e, id, nil)
		}
		return resp
	})
}
