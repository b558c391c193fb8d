package main

// The weather round of the from-cassette tests on the wires besides OpenAI
// chat and Anthropic: OpenAI Responses (openai-go, with the whole input
// resent or chained by previous_response_id), Gemini (google.golang.org/genai,
// SSE and non-streamed) and Ollama (plain HTTP, NDJSON and "stream": false).
// Each agent returns what its application saw, turn by turn: the tool calls
// with their ids and arguments, the final text, and each answer's finish
// reason and token usage as the client reads them.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"google.golang.org/genai"
)

// seenTurn is one answer as the application saw it.
func seenTurn(finish string, input, output, reasoning int64) string {
	return fmt.Sprintf("finish %s usage %d/%d/%d", finish, input, output, reasoning)
}

// responsesWeatherAgent runs the weather tool loop with openai-go's
// Responses API. With chain, the second request names the first answer by
// previous_response_id and sends only the tool's output, as an application
// that lets the provider keep the conversation does.
func responsesWeatherAgent(ctx context.Context, base string, stream, chain bool) (string, error) {
	client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	tools := []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{
		Name: "weather", Parameters: map[string]any{"type": "object"}}}}
	input := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("What's the weather in Paris?", responses.EasyInputMessageRoleUser)}
	var previous string
	var seen []string
	for range 2 {
		params := responses.ResponseNewParams{Model: "gpt-5.5", Tools: tools, Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}}
		if previous != "" {
			params.PreviousResponseID = openai.String(previous)
		}
		var r responses.Response
		if stream {
			s := client.Responses.NewStreaming(ctx, params)
			for s.Next() {
				if ev := s.Current(); ev.Type == "response.completed" || ev.Type == "response.incomplete" {
					r = ev.Response
				}
			}
			if err := s.Err(); err != nil {
				return strings.Join(seen, "\n"), err
			}
			if r.ID == "" {
				return strings.Join(seen, "\n"), errors.New("no response.completed event")
			}
		} else {
			got, err := client.Responses.New(ctx, params)
			if err != nil {
				return strings.Join(seen, "\n"), err
			}
			r = *got
		}
		finish := string(r.Status)
		if r.IncompleteDetails.Reason != "" {
			finish += " " + r.IncompleteDetails.Reason
		}
		seen = append(seen, seenTurn(finish, r.Usage.InputTokens, r.Usage.OutputTokens, r.Usage.OutputTokensDetails.ReasoningTokens))
		var outputs responses.ResponseInputParam
		for _, item := range r.Output {
			if item.Type != "function_call" {
				continue
			}
			fc := item.AsFunctionCall()
			seen = append(seen, fmt.Sprintf("call %s %s %s", fc.CallID, fc.Name, sortedJSON(fc.Arguments)))
			if !chain {
				input = append(input, responses.ResponseInputItemParamOfFunctionCall(fc.Arguments, fc.CallID, fc.Name))
			}
			outputs = append(outputs, responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
				CallID: openai.String(fc.CallID),
				Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String(fcResult)},
			}})
		}
		if len(outputs) == 0 {
			return strings.Join(append(seen, "answer "+r.OutputText()), "\n"), nil
		}
		if chain {
			input, previous = outputs, r.ID
		} else {
			input = append(input, outputs...)
		}
	}
	return strings.Join(seen, "\n"), errors.New("no answer after two turns")
}

// geminiWeatherAgent runs the weather tool loop with google.golang.org/genai
// (streamed: :streamGenerateContent?alt=sse).
func geminiWeatherAgent(ctx context.Context, base string, stream bool) (string, error) {
	client, err := genai.NewClient(ctx, &genai.ClientConfig{
		APIKey: "g-test", Backend: genai.BackendGeminiAPI, HTTPOptions: genai.HTTPOptions{BaseURL: base + "/"},
	})
	if err != nil {
		return "", err
	}
	config := &genai.GenerateContentConfig{Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{
		Name: "weather", ParametersJsonSchema: map[string]any{"type": "object"}}}}}}
	contents := []*genai.Content{genai.NewContentFromText("What's the weather in Paris?", genai.RoleUser)}
	var seen []string
	for range 2 {
		var chunks []*genai.GenerateContentResponse
		if stream {
			for r, err := range client.Models.GenerateContentStream(ctx, "gemini-2.5-flash", contents, config) {
				if err != nil {
					return strings.Join(seen, "\n"), err
				}
				chunks = append(chunks, r)
			}
		} else {
			r, err := client.Models.GenerateContent(ctx, "gemini-2.5-flash", contents, config)
			if err != nil {
				return strings.Join(seen, "\n"), err
			}
			chunks = append(chunks, r)
		}
		var parts []*genai.Part
		var finish genai.FinishReason
		var usage genai.GenerateContentResponseUsageMetadata
		var text strings.Builder
		for _, r := range chunks {
			if len(r.Candidates) == 0 || r.Candidates[0].Content == nil {
				return strings.Join(seen, "\n"), errors.New("an answer without a candidate")
			}
			parts = append(parts, r.Candidates[0].Content.Parts...)
			if f := r.Candidates[0].FinishReason; f != "" {
				finish = f
			}
			if r.UsageMetadata != nil {
				usage = *r.UsageMetadata
			}
		}
		seen = append(seen, seenTurn(string(finish), int64(usage.PromptTokenCount), int64(usage.CandidatesTokenCount), int64(usage.ThoughtsTokenCount)))
		var results []*genai.Part
		for _, p := range parts {
			switch {
			case p.FunctionCall != nil:
				fc := p.FunctionCall
				args, _ := json.Marshal(fc.Args)
				seen = append(seen, fmt.Sprintf("call %q %s %s", fc.ID, fc.Name, sortedJSON(string(args))))
				var response map[string]any
				if err := json.Unmarshal([]byte(fcResult), &response); err != nil {
					return "", err
				}
				results = append(results, &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: fc.ID, Name: fc.Name, Response: response}})
			case p.Text != "" && !p.Thought:
				text.WriteString(p.Text)
			}
		}
		if len(results) == 0 {
			return strings.Join(append(seen, "answer "+text.String()), "\n"), nil
		}
		contents = append(contents, genai.NewContentFromParts(parts, genai.RoleModel), genai.NewContentFromParts(results, genai.RoleUser))
	}
	return strings.Join(seen, "\n"), errors.New("no answer after two turns")
}

// ollamaAnswer is the non-streamed answer, or one NDJSON line of a stream,
// with what the weather agent reads of it.
type ollamaAnswer struct {
	Message    ollamaMessage `json:"message"`
	Done       bool          `json:"done"`
	DoneReason string        `json:"done_reason"`
	Prompt     int64         `json:"prompt_eval_count"`
	Eval       int64         `json:"eval_count"`
	Error      string        `json:"error"`
}

// ollamaWeatherAgent runs the weather tool loop on Ollama's chat API with
// plain HTTP, sending each result back as a tool message that names its
// function and, when the call has an id, the id.
func ollamaWeatherAgent(ctx context.Context, base string, stream bool) (string, error) {
	req := ollamaRequest{
		Model: ollamaModel, Stream: stream,
		Tools:    []json.RawMessage{json.RawMessage(`{"type":"function","function":{"name":"weather","parameters":{"type":"object"}}}`)},
		Messages: []ollamaMessage{{Role: "user", Content: "What's the weather in Paris?"}},
	}
	var seen []string
	for range 2 {
		a, err := ollamaPost(ctx, base+"/api/chat", req)
		if err != nil {
			return strings.Join(seen, "\n"), err
		}
		seen = append(seen, seenTurn(a.DoneReason, a.Prompt, a.Eval, 0))
		for _, tc := range a.Message.ToolCalls {
			seen = append(seen, fmt.Sprintf("call %q %s %s", tc.ID, tc.Function.Name, sortedJSON(string(tc.Function.Arguments))))
		}
		if len(a.Message.ToolCalls) == 0 {
			return strings.Join(append(seen, "answer "+a.Message.Content), "\n"), nil
		}
		req.Messages = append(req.Messages, a.Message)
		for _, tc := range a.Message.ToolCalls {
			req.Messages = append(req.Messages, ollamaMessage{Role: "tool", Content: fcResult, ToolName: tc.Function.Name, ToolCallID: tc.ID})
		}
	}
	return strings.Join(seen, "\n"), errors.New("no answer after two turns")
}

// ollamaPost posts one chat request and folds the answer's lines into one:
// content joined, tool calls in order, the last line's reason and counts.
func ollamaPost(ctx context.Context, url string, req ollamaRequest) (ollamaAnswer, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return ollamaAnswer{}, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return ollamaAnswer{}, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		return ollamaAnswer{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return ollamaAnswer{}, fmt.Errorf("POST %s: %s: %s", url, resp.Status, bytes.TrimSpace(b))
	}
	dec := json.NewDecoder(resp.Body)
	out := ollamaAnswer{Message: ollamaMessage{Role: "assistant"}}
	for n := 1; ; n++ {
		var line ollamaAnswer
		if err := dec.Decode(&line); err != nil {
			return ollamaAnswer{}, fmt.Errorf("POST %s: answer line %d: %w", url, n, err)
		}
		if line.Error != "" {
			return ollamaAnswer{}, fmt.Errorf("POST %s: answer line %d: error %q", url, n, line.Error)
		}
		out.Message.Content += line.Message.Content
		out.Message.ToolCalls = append(out.Message.ToolCalls, line.Message.ToolCalls...)
		if line.Done {
			out.Done, out.DoneReason, out.Prompt, out.Eval = true, line.DoneReason, line.Prompt, line.Eval
			break
		}
		if !req.Stream {
			return ollamaAnswer{}, fmt.Errorf(`POST %s: the answer to "stream": false is not done`, url)
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return ollamaAnswer{}, fmt.Errorf("POST %s: the answer goes on after the line that says done", url)
	}
	return out, nil
}
