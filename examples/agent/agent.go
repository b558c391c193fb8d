// Package agent is a small, real tool-using agent, the example of the
// record → scrub → replay workflow (see README.md): an OpenAI Chat
// Completions loop, through openai-go, whose tools have real side effects —
// write_file writes a file and shell runs a command.
//
// The tools sit behind one interface, Tools, whose method is the one
// fixture.Executor has. In a test the application keeps its loop and swaps
// its real tools for the fixtures of a scrubbed cassette in one line:
//
//	tools, err := fixture.NewCassetteExecutor("agent.cassette") // instead of agent.LocalTools{Dir: dir}
//
// Replayed through llmproxy, the agent then sends the tool results the
// cassette holds, and nothing is written and nothing runs.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/llmproxy/llmproxy/presets"
	"github.com/llmproxy/llmproxy/wire"
)

// Tools runs the agent's tool calls. LocalTools is the real implementation;
// *fixture.Executor answers from fixtures.
type Tools interface {
	Execute(ctx context.Context, call wire.ToolCall) (wire.ToolResult, error)
}

// Config configures Run.
type Config struct {
	// BaseURL is the OpenAI-compatible API base, such as
	// "http://127.0.0.1:7878/v1" for a local llmproxy.
	BaseURL string
	// APIKey is sent as the bearer token. A replaying proxy needs none.
	APIKey string
	// Model defaults to gpt-4o-mini.
	Model string
	// Stream asks for streamed answers.
	Stream bool
	// Tools runs the calls; nil means LocalTools in the current directory.
	Tools Tools
	// HTTPClient sends the requests; nil means the SDK's default.
	HTTPClient *http.Client
	// Log receives the conversation as it goes; nil discards it.
	Log io.Writer
	// MaxTurns bounds the model calls; zero means 8.
	MaxTurns int
}

// ToolNames are the tools the agent offers: the write_file and shell
// presets, under their own names.
var ToolNames = []string{presets.WriteFile.Name(), presets.Shell.Name()}

// Run asks the model prompt, runs the tools it calls and returns its final
// answer.
func Run(ctx context.Context, cfg Config, prompt string) (string, error) {
	if cfg.Model == "" {
		cfg.Model = openai.ChatModelGPT4oMini
	}
	if cfg.Tools == nil {
		cfg.Tools = LocalTools{}
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.MaxTurns <= 0 {
		cfg.MaxTurns = 8
	}
	opts := []option.RequestOption{option.WithBaseURL(cfg.BaseURL), option.WithAPIKey(cfg.APIKey), option.WithMaxRetries(0)}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	client := openai.NewClient(opts...)
	tools, err := toolDefinitions()
	if err != nil {
		return "", err
	}
	params := openai.ChatCompletionNewParams{
		Model:    cfg.Model,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
		Tools:    tools,
	}
	if cfg.Stream {
		params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	}
	fmt.Fprintf(cfg.Log, "user: %s\n", prompt)
	for turn := 0; turn < cfg.MaxTurns; turn++ {
		msg, err := complete(ctx, client, params, cfg.Stream)
		if err != nil {
			// openai-go's error text is the status alone; the message (a
			// replay miss's diagnosis, say) is in the error's fields.
			var apiErr *openai.Error
			if errors.As(err, &apiErr) && apiErr.Message != "" {
				return "", fmt.Errorf("%w: %s", err, apiErr.Message)
			}
			return "", err
		}
		if len(msg.ToolCalls) == 0 {
			fmt.Fprintf(cfg.Log, "assistant: %s\n", msg.Content)
			return msg.Content, nil
		}
		params.Messages = append(params.Messages, msg.ToParam())
		for _, tc := range msg.ToolCalls {
			fmt.Fprintf(cfg.Log, "assistant calls %s(%s) [%s]\n", tc.Function.Name, tc.Function.Arguments, tc.ID)
			args := json.RawMessage(tc.Function.Arguments)
			if !json.Valid(args) {
				args = json.RawMessage(`{}`)
			}
			res, err := cfg.Tools.Execute(ctx, wire.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: args})
			if err != nil {
				return "", fmt.Errorf("tool %s call %s: %w", tc.Function.Name, tc.ID, err)
			}
			fmt.Fprintf(cfg.Log, "tool %s → %s\n", tc.Function.Name, res.Content)
			params.Messages = append(params.Messages, openai.ToolMessage(string(res.Content), tc.ID))
		}
	}
	return "", fmt.Errorf("no final answer after %d turns", cfg.MaxTurns)
}

// complete makes one model call and returns the assistant's message.
func complete(ctx context.Context, client openai.Client, params openai.ChatCompletionNewParams, stream bool) (openai.ChatCompletionMessage, error) {
	if !stream {
		resp, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			return openai.ChatCompletionMessage{}, err
		}
		if len(resp.Choices) == 0 {
			return openai.ChatCompletionMessage{}, errors.New("the model sent no choice")
		}
		return resp.Choices[0].Message, nil
	}
	s := client.Chat.Completions.NewStreaming(ctx, params)
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	if err := s.Err(); err != nil {
		return openai.ChatCompletionMessage{}, err
	}
	if len(acc.Choices) == 0 {
		return openai.ChatCompletionMessage{}, errors.New("the model sent no choice")
	}
	return acc.Choices[0].Message, nil
}

// toolDefinitions offers the write_file and shell presets as chat tools.
func toolDefinitions() ([]openai.ChatCompletionToolUnionParam, error) {
	var out []openai.ChatCompletionToolUnionParam
	for _, name := range ToolNames {
		d, _ := presets.Lookup(name)
		var def struct {
			Function struct {
				Name        string         `json:"name"`
				Description string         `json:"description"`
				Parameters  map[string]any `json:"parameters"`
			} `json:"function"`
		}
		if err := json.Unmarshal(d.OpenAIChatTool(), &def); err != nil {
			return nil, fmt.Errorf("tool %s: %w", name, err)
		}
		out = append(out, openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
			Name:        def.Function.Name,
			Description: openai.String(def.Function.Description),
			Parameters:  def.Function.Parameters,
		}))
	}
	return out, nil
}
