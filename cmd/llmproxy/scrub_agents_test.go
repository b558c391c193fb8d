package main

// The example agent's shape — ask, run the tools the model calls, send their
// results, repeat until an answer — on the other providers' official SDKs,
// for the scrub end-to-end tests. Each sends a tool's result exactly as its
// Tools gave it, which is what lets fixture.Executor stand in for the real
// tools in replay.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	openaioption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"google.golang.org/genai"

	"github.com/llmproxy/llmproxy/examples/agent"
	"github.com/llmproxy/llmproxy/presets"
	"github.com/llmproxy/llmproxy/wire"
)

// providerAgent runs one conversation through a proxy at base.
type providerAgent func(ctx context.Context, base string, tools agent.Tools, prompt string, stream bool) (string, error)

const agentTurns = 4

// presetTools are the agent's two tools, as descriptors.
func presetTools() []presets.Descriptor {
	return []presets.Descriptor{presets.WriteFile.Descriptor, presets.Shell.Descriptor}
}

// parameters is a preset's argument schema as a provider tool's parameters.
func parameters(d presets.Descriptor, wire []byte, member string) map[string]any {
	var def map[string]json.RawMessage
	if err := json.Unmarshal(wire, &def); err != nil {
		panic(err)
	}
	var out map[string]any
	if err := json.Unmarshal(def[member], &out); err != nil {
		panic(fmt.Sprintf("%s %s: %v", d.Name(), member, err))
	}
	return out
}

func chatAgent(ctx context.Context, base string, tools agent.Tools, prompt string, stream bool) (string, error) {
	return agent.Run(ctx, agent.Config{BaseURL: base + "/v1", APIKey: "sk-test-agent", Stream: stream, Tools: tools}, prompt)
}

func responsesAgent(ctx context.Context, base string, tools agent.Tools, prompt string, stream bool) (string, error) {
	client := openai.NewClient(openaioption.WithBaseURL(base+"/v1"), openaioption.WithAPIKey("sk-test-agent"), openaioption.WithMaxRetries(0))
	var defs []responses.ToolUnionParam
	for _, d := range presetTools() {
		defs = append(defs, responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{
			Name: d.Name(), Description: openai.String(d.Description()), Parameters: parameters(d, d.ResponsesTool(), "parameters"),
		}})
	}
	input := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage(prompt, responses.EasyInputMessageRoleUser)}
	for turn := 0; turn < agentTurns; turn++ {
		params := responses.ResponseNewParams{
			Model: "gpt-5.5", Tools: defs,
			Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input},
		}
		var r responses.Response
		if stream {
			s := client.Responses.NewStreaming(ctx, params)
			for s.Next() {
				if ev := s.Current(); ev.Type == "response.completed" {
					r = ev.Response
				}
			}
			if err := s.Err(); err != nil {
				return "", err
			}
			if r.ID == "" {
				return "", errors.New("no response.completed event")
			}
		} else {
			got, err := client.Responses.New(ctx, params)
			if err != nil {
				return "", err
			}
			r = *got
		}
		var calls []responses.ResponseFunctionToolCall
		for _, item := range r.Output {
			if item.Type == "function_call" {
				calls = append(calls, item.AsFunctionCall())
			}
		}
		if len(calls) == 0 {
			return r.OutputText(), nil
		}
		for _, fc := range calls {
			input = append(input, responses.ResponseInputItemParamOfFunctionCall(fc.Arguments, fc.CallID, fc.Name))
			res, err := tools.Execute(ctx, wire.ToolCall{ID: fc.CallID, Name: fc.Name, Arguments: json.RawMessage(fc.Arguments)})
			if err != nil {
				return "", err
			}
			input = append(input, responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
				CallID: openai.String(fc.CallID),
				Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String(string(res.Content))},
			}})
		}
	}
	return "", errors.New("no final answer")
}

func anthropicAgent(ctx context.Context, base string, tools agent.Tools, prompt string, stream bool) (string, error) {
	client := anthropic.NewClient(anthropicoption.WithBaseURL(base+"/anthropic"), anthropicoption.WithAPIKey("sk-ant-test-agent"), anthropicoption.WithMaxRetries(0))
	var defs []anthropic.ToolUnionParam
	for _, d := range presetTools() {
		schema := parameters(d, d.AnthropicTool(), "input_schema")
		defs = append(defs, anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
			Name: d.Name(), Description: anthropic.String(d.Description()),
			InputSchema: anthropic.ToolInputSchemaParam{Properties: schema["properties"], Required: toStrings(schema["required"])},
		}})
	}
	msgs := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))}
	for turn := 0; turn < agentTurns; turn++ {
		params := anthropic.MessageNewParams{Model: "claude-sonnet-4-6", MaxTokens: 1024, Messages: msgs, Tools: defs}
		var m anthropic.Message
		if stream {
			s := client.Messages.NewStreaming(ctx, params)
			for s.Next() {
				if err := m.Accumulate(s.Current()); err != nil {
					return "", err
				}
			}
			if err := s.Err(); err != nil {
				return "", err
			}
		} else {
			got, err := client.Messages.New(ctx, params)
			if err != nil {
				return "", err
			}
			m = *got
		}
		var results []anthropic.ContentBlockParamUnion
		var text string
		for _, b := range m.Content {
			switch b.Type {
			case "text":
				text += b.Text
			case "tool_use":
				tu := b.AsToolUse()
				res, err := tools.Execute(ctx, wire.ToolCall{ID: tu.ID, Name: tu.Name, Arguments: tu.Input})
				if err != nil {
					return "", err
				}
				results = append(results, anthropic.NewToolResultBlock(tu.ID, string(res.Content), res.IsError))
			}
		}
		if len(results) == 0 {
			return text, nil
		}
		msgs = append(msgs, m.ToParam(), anthropic.NewUserMessage(results...))
	}
	return "", errors.New("no final answer")
}

func toStrings(v any) []string {
	var out []string
	if list, ok := v.([]any); ok {
		for _, s := range list {
			out = append(out, fmt.Sprint(s))
		}
	}
	return out
}

func geminiAgent(ctx context.Context, base string, tools agent.Tools, prompt string, stream bool) (string, error) {
	client, err := genai.NewClient(ctx, &genai.ClientConfig{
		APIKey: "g-test-agent", Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: base + "/gemini"},
	})
	if err != nil {
		return "", err
	}
	var decls []*genai.FunctionDeclaration
	for _, d := range presetTools() {
		decls = append(decls, &genai.FunctionDeclaration{
			Name: d.Name(), Description: d.Description(),
			ParametersJsonSchema: parameters(d, d.OpenAIChatTool(), "function")["parameters"],
		})
	}
	config := &genai.GenerateContentConfig{Tools: []*genai.Tool{{FunctionDeclarations: decls}}}
	contents := []*genai.Content{genai.NewContentFromText(prompt, genai.RoleUser)}
	for turn := 0; turn < agentTurns; turn++ {
		var calls []*genai.FunctionCall
		var text string
		var model *genai.Content
		if stream {
			var parts []*genai.Part
			for r, err := range client.Models.GenerateContentStream(ctx, "gemini-2.5-flash", contents, config) {
				if err != nil {
					return "", err
				}
				if fc := r.FunctionCalls(); len(fc) > 0 {
					calls = append(calls, fc...)
				} else {
					text += r.Text()
				}
				parts = append(parts, r.Candidates[0].Content.Parts...)
			}
			model = genai.NewContentFromParts(parts, genai.RoleModel)
		} else {
			r, err := client.Models.GenerateContent(ctx, "gemini-2.5-flash", contents, config)
			if err != nil {
				return "", err
			}
			if calls = r.FunctionCalls(); len(calls) == 0 {
				text = r.Text()
			}
			model = r.Candidates[0].Content
		}
		if len(calls) == 0 {
			return text, nil
		}
		var parts []*genai.Part
		for _, fc := range calls {
			args, err := json.Marshal(fc.Args)
			if err != nil {
				return "", err
			}
			res, err := tools.Execute(ctx, wire.ToolCall{ID: fc.ID, Name: fc.Name, Arguments: args})
			if err != nil {
				return "", err
			}
			var response map[string]any
			if err := json.Unmarshal(res.Content, &response); err != nil {
				return "", err
			}
			// The call's id goes back with its answer, as the Gemini docs ask.
			parts = append(parts, &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: fc.ID, Name: fc.Name, Response: response}})
		}
		contents = append(contents, model, genai.NewContentFromParts(parts, genai.RoleUser))
	}
	return "", errors.New("no final answer")
}
