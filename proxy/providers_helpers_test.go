package proxy_test

// Clients for the provider tests: each runs the weather tool loop (a tool
// call, then the answer once the tool result is sent) through one official
// SDK, or raw HTTP where a provider has no Go SDK, and reports what the
// application saw as a transcript.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"google.golang.org/genai"
)

// creds stands for one set of credentials: record uses distinctive ones that
// must never reach the cassette file, replay other ones, which must not matter.
type creds string

const (
	recordCreds creds = "REC-7731-LLMPROXY-SECRET"
	replayCreds creds = "replay-any-value"
)

// key is the credential sent in one place (a header or query parameter).
func (c creds) key(place string) string { return "sk-" + place + "-" + string(c) }

// clientEnv is where a client sends its requests and with which credentials.
type clientEnv struct {
	hc    *http.Client
	base  string // the proxy's URL, without a trailing slash
	creds creds
}

// providerLoop runs the weather tool loop for prompt and returns what the
// application saw.
type providerLoop func(ctx context.Context, env clientEnv, prompt string, stream bool) (transcript, error)

// weatherSchema is the weather tool's argument schema.
func weatherSchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"location": map[string]any{"type": "string"},
			"unit":     map[string]any{"type": "string", "enum": []string{"celsius", "fahrenheit"}},
		},
		"required": []string{"location"},
	}
}

// compactJSON re-encodes a JSON value with sorted keys, so that arguments
// compare equal however a provider spells them.
func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("!%v", err)
	}
	return string(b)
}

func sortedArgs(raw string) string {
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return "!" + raw
	}
	return compactJSON(v)
}

// anthropicLoop uses anthropic-sdk-go v2. Its WithAPIKey sends the key as a
// bearer token; the x-api-key header that Anthropic's own docs use is sent
// too, with a key of its own.
func anthropicLoop(ctx context.Context, env clientEnv, prompt string, stream bool) (transcript, error) {
	client := anthropic.NewClient(
		anthropicoption.WithBaseURL(env.base+"/anthropic/"),
		anthropicoption.WithAPIKey(env.creds.key("anthropic-bearer")),
		anthropicoption.WithHeader("X-Api-Key", env.creds.key("anthropic-x-api-key")),
		anthropicoption.WithHTTPClient(env.hc),
		anthropicoption.WithMaxRetries(0),
	)
	params := anthropic.MessageNewParams{
		Model:     "claude-sonnet-4-6",
		MaxTokens: 1024,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))},
		Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{
			Name:        "weather",
			InputSchema: anthropic.ToolInputSchemaParam{Properties: weatherSchema()["properties"], Required: []string{"location"}},
		}}},
	}
	var tr transcript
	for turn := 0; turn < 2; turn++ {
		var m anthropic.Message
		if stream {
			s := client.Messages.NewStreaming(ctx, params)
			for s.Next() {
				if err := m.Accumulate(s.Current()); err != nil {
					return tr, fmt.Errorf("accumulate: %w", err)
				}
			}
			if err := s.Err(); err != nil {
				return tr, err
			}
		} else {
			resp, err := client.Messages.New(ctx, params)
			if err != nil {
				return tr, err
			}
			m = *resp
		}
		var results []anthropic.ContentBlockParamUnion
		var text strings.Builder
		for _, b := range m.Content {
			switch b.Type {
			case "tool_use":
				tu := b.AsToolUse()
				tr.calls = append(tr.calls, tu.ID+" "+tu.Name+sortedArgs(string(tu.Input)))
				results = append(results, anthropic.NewToolResultBlock(tu.ID, weatherResult, false))
			case "text":
				text.WriteString(b.Text)
			}
		}
		if len(results) == 0 {
			tr.answer = text.String()
			return tr, nil
		}
		params.Messages = append(params.Messages, m.ToParam(), anthropic.NewUserMessage(results...))
	}
	return tr, errors.New("no answer after two turns")
}

// responsesLoop uses openai-go's Responses API under the openai prefix; the
// second turn continues the first by previous_response_id.
func responsesLoop(ctx context.Context, env clientEnv, prompt string, stream bool) (transcript, error) {
	client := openai.NewClient(
		option.WithBaseURL(env.base+"/openai/v1/"),
		option.WithAPIKey(env.creds.key("openai")),
		option.WithHTTPClient(env.hc),
		option.WithMaxRetries(0),
	)
	params := responses.ResponseNewParams{
		Model: "gpt-5.5",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)},
		Tools: []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{
			Name:       "weather",
			Parameters: weatherSchema(),
		}}},
	}
	var tr transcript
	for turn := 0; turn < 2; turn++ {
		var r responses.Response
		if stream {
			s := client.Responses.NewStreaming(ctx, params)
			var deltas strings.Builder
			for s.Next() {
				switch ev := s.Current(); ev.Type {
				case "response.output_text.delta":
					deltas.WriteString(ev.Delta)
				case "response.completed":
					r = ev.Response
				}
			}
			if err := s.Err(); err != nil {
				return tr, err
			}
			if r.ID == "" {
				return tr, errors.New("stream ended without response.completed")
			}
			if deltas.String() != r.OutputText() {
				return tr, fmt.Errorf("text deltas %q, completed text %q", deltas.String(), r.OutputText())
			}
		} else {
			resp, err := client.Responses.New(ctx, params)
			if err != nil {
				return tr, err
			}
			r = *resp
		}
		var outputs []responses.ResponseInputItemUnionParam
		for _, item := range r.Output {
			if item.Type != "function_call" {
				continue
			}
			fc := item.AsFunctionCall()
			tr.calls = append(tr.calls, fc.CallID+" "+fc.Name+sortedArgs(fc.Arguments))
			outputs = append(outputs, responses.ResponseInputItemUnionParam{
				OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
					CallID: openai.String(fc.CallID),
					Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String(weatherResult)},
				},
			})
		}
		if len(outputs) == 0 {
			tr.answer = r.OutputText()
			return tr, nil
		}
		params.PreviousResponseID = openai.String(r.ID)
		params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: outputs}
	}
	return tr, errors.New("no answer after two turns")
}

// addQuery is a transport that adds a query parameter to every request, as a
// client that passes the Gemini key in ?key= does.
type addQuery struct {
	next        http.RoundTripper
	name, value string
}

func (a addQuery) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	q := r.URL.Query()
	q.Set(a.name, a.value)
	r.URL.RawQuery = q.Encode()
	return a.next.RoundTrip(r)
}

// geminiLoop uses google.golang.org/genai on the Gemini API backend under the
// gemini prefix. The SDK sends its key in x-goog-api-key; the transport adds
// ?key= too, the other place a Gemini key travels.
func geminiLoop(ctx context.Context, env clientEnv, prompt string, stream bool) (transcript, error) {
	hc := &http.Client{Transport: addQuery{next: env.hc.Transport, name: "key", value: env.creds.key("gemini-query")}}
	client, err := genai.NewClient(ctx, &genai.ClientConfig{
		APIKey:      env.creds.key("gemini-header"),
		Backend:     genai.BackendGeminiAPI,
		HTTPClient:  hc,
		HTTPOptions: genai.HTTPOptions{BaseURL: env.base + "/gemini"},
	})
	if err != nil {
		return transcript{}, err
	}
	config := &genai.GenerateContentConfig{Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{
		Name:                 "weather",
		ParametersJsonSchema: weatherSchema(),
	}}}}}
	contents := []*genai.Content{genai.NewContentFromText(prompt, genai.RoleUser)}
	var tr transcript
	for turn := 0; turn < 2; turn++ {
		var parts []*genai.Part
		if stream {
			for r, err := range client.Models.GenerateContentStream(ctx, "gemini-2.5-flash", contents, config) {
				if err != nil {
					return tr, err
				}
				if len(r.Candidates) > 0 && r.Candidates[0].Content != nil {
					parts = append(parts, r.Candidates[0].Content.Parts...)
				}
			}
		} else {
			r, err := client.Models.GenerateContent(ctx, "gemini-2.5-flash", contents, config)
			if err != nil {
				return tr, err
			}
			if len(r.Candidates) == 0 || r.Candidates[0].Content == nil {
				return tr, errors.New("response without a candidate")
			}
			parts = r.Candidates[0].Content.Parts
		}
		var answers []*genai.Part
		var text strings.Builder
		for _, p := range parts {
			if fc := p.FunctionCall; fc != nil {
				// Gemini sends no call id: the transcript shows "" there.
				tr.calls = append(tr.calls, fc.ID+" "+fc.Name+compactJSON(fc.Args))
				answers = append(answers, genai.NewPartFromFunctionResponse(fc.Name, map[string]any{"output": json.RawMessage(weatherResult)}))
				continue
			}
			text.WriteString(p.Text)
		}
		if len(answers) == 0 {
			tr.answer = text.String()
			return tr, nil
		}
		contents = append(contents, genai.NewContentFromParts(parts, genai.RoleModel), genai.NewContentFromParts(answers, genai.RoleUser))
	}
	return tr, errors.New("no answer after two turns")
}

// ollamaError is a non-200 answer to a raw Ollama request.
type ollamaError struct {
	status  int
	miss    bool   // the X-Llmproxy-Miss header was set
	message string // the "error" field
}

func (e *ollamaError) Error() string { return fmt.Sprintf("ollama: %d: %s", e.status, e.message) }

type ollamaMessage struct {
	Role      string           `json:"role"`
	Content   string           `json:"content"`
	ToolName  string           `json:"tool_name,omitempty"`
	ToolCalls []ollamaToolCall `json:"tool_calls,omitempty"`
}

type ollamaToolCall struct {
	ID       string `json:"id,omitempty"`
	Function struct {
		Index     int             `json:"index"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// ollamaLoop speaks Ollama's /api/chat over raw HTTP (there is no official
// Go SDK outside the Ollama module) under the ollama prefix, with a bearer
// key as a gateway in front of Ollama, or ollama.com, takes it.
func ollamaLoop(ctx context.Context, env clientEnv, prompt string, stream bool) (transcript, error) {
	msgs := []ollamaMessage{{Role: "user", Content: prompt}}
	tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "weather", "parameters": weatherSchema()}}}
	var tr transcript
	for turn := 0; turn < 2; turn++ {
		body, err := json.Marshal(map[string]any{"model": "llama3.2", "messages": msgs, "tools": tools, "stream": stream})
		if err != nil {
			return tr, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, env.base+"/ollama/api/chat", bytes.NewReader(body))
		if err != nil {
			return tr, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+env.creds.key("ollama"))
		resp, err := env.hc.Do(req)
		if err != nil {
			return tr, err
		}
		msg, err := readOllama(resp, stream)
		if err != nil {
			return tr, err
		}
		if len(msg.ToolCalls) == 0 {
			tr.answer = msg.Content
			return tr, nil
		}
		msgs = append(msgs, msg)
		for _, tc := range msg.ToolCalls {
			tr.calls = append(tr.calls, tc.ID+" "+tc.Function.Name+sortedArgs(string(tc.Function.Arguments)))
			msgs = append(msgs, ollamaMessage{Role: "tool", Content: weatherResult, ToolName: tc.Function.Name})
		}
	}
	return tr, errors.New("no answer after two turns")
}

// readOllama reads one /api/chat answer: an NDJSON stream of message pieces
// ending with "done": true, or one object.
func readOllama(resp *http.Response, stream bool) (ollamaMessage, error) {
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		var e struct {
			Error string `json:"error"`
		}
		if err := json.Unmarshal(b, &e); err != nil {
			e.Error = string(b)
		}
		return ollamaMessage{}, &ollamaError{status: resp.StatusCode, miss: resp.Header.Get("X-Llmproxy-Miss") == "1", message: e.Error}
	}
	type line struct {
		Message ollamaMessage `json:"message"`
		Done    bool          `json:"done"`
	}
	if !stream {
		var l line
		if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
			return ollamaMessage{}, fmt.Errorf("ollama answer: %w", err)
		}
		return l.Message, nil
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		return ollamaMessage{}, fmt.Errorf("ollama stream Content-Type %q, want application/x-ndjson", ct)
	}
	var out ollamaMessage
	sc := bufio.NewScanner(resp.Body)
	done := false
	for sc.Scan() {
		if done {
			return out, fmt.Errorf("ollama stream: line after done: %q", sc.Text())
		}
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return out, fmt.Errorf("ollama stream line %q: %w", sc.Text(), err)
		}
		out.Role = l.Message.Role
		out.Content += l.Message.Content
		out.ToolCalls = append(out.ToolCalls, l.Message.ToolCalls...)
		done = l.Done
	}
	if err := sc.Err(); err != nil {
		return out, err
	}
	if !done {
		return out, errors.New("ollama stream ended without done: true")
	}
	return out, nil
}

// azureLoop speaks Azure OpenAI's path style through openai-go: the base URL
// is the deployment under the azure upstream, the api-version rides in the
// query, and the key in the api-key header.
func azureLoop(ctx context.Context, env clientEnv, prompt string, stream bool) (transcript, error) {
	client := openai.NewClient(
		option.WithBaseURL(env.base+"/azure/openai/deployments/gpt-4o-mini/"),
		option.WithQuery("api-version", "2024-10-21"),
		option.WithHeader("Api-Key", env.creds.key("azure")),
		option.WithHTTPClient(env.hc),
		option.WithMaxRetries(0),
	)
	return openaiChatTurns(ctx, client, prompt, stream, sortedArgs)
}

// missText returns what an SDK error says, fields included (several SDKs keep
// the provider's message out of Error()), and whether it is the 400 of a miss.
func missText(err error) (string, bool) {
	var oe *openai.Error
	if errors.As(err, &oe) {
		return fmt.Sprintf("%d %s %s", oe.StatusCode, oe.Type, oe.Message), oe.StatusCode == http.StatusBadRequest
	}
	var ae *anthropic.Error
	if errors.As(err, &ae) {
		return fmt.Sprintf("%d %s %s", ae.StatusCode, ae.Type(), ae.Message), ae.StatusCode == http.StatusBadRequest
	}
	var ge genai.APIError
	if errors.As(err, &ge) {
		var reasons []string
		for _, d := range ge.Details {
			if r, ok := d["reason"].(string); ok {
				reasons = append(reasons, r)
			}
		}
		return fmt.Sprintf("%d %s %s %s", ge.Code, ge.Status, strings.Join(reasons, ","), ge.Message), ge.Code == http.StatusBadRequest
	}
	var le *ollamaError
	if errors.As(err, &le) {
		// Ollama's error shape has no type; the miss header says it.
		typ := ""
		if le.miss {
			typ = "cassette_miss"
		}
		return fmt.Sprintf("%d %s %s", le.status, typ, le.message), le.status == http.StatusBadRequest
	}
	return fmt.Sprintf("%T %v", err, err), false
}
