// Package agent is a small, real tool-using agent, the example of the
// record → scrub → replay workflow (see README.md): a tool loop whose tools
// have real side effects — write_file writes a file and shell runs a
// command — on OpenAI Chat Completions (openai-go) or Anthropic Messages
// (anthropic-sdk-go), as Config.API says. Both wires run the same loop:
// ask, run the tools the model calls, send their results, until an answer.
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
	"errors"
	"fmt"
	"io"
	"net/http"

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
	// API is the wire the agent speaks: wire.KindOpenAIChat (the zero
	// value means it) or wire.KindAnthropicMessages.
	API wire.Kind
	// BaseURL is the API base of that wire, such as
	// "http://127.0.0.1:7878/v1" (OpenAI chat) or
	// "http://127.0.0.1:7878/anthropic" (Anthropic) for a local llmproxy.
	BaseURL string
	// APIKey is sent as the wire's key (a bearer token, or x-api-key). A
	// replaying proxy needs none.
	APIKey string
	// Model defaults to gpt-4o-mini (OpenAI chat) or claude-sonnet-4-6
	// (Anthropic).
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

// conversation is one wire's side of the loop: it asks the model with the
// history so far (adding the answer to it) and adds the tools' results.
type conversation interface {
	// ask makes one model call and returns the answer's text and calls.
	ask(ctx context.Context) (text string, calls []wire.ToolCall, err error)
	// answer adds the results of the last answer's calls, one a call.
	answer(calls []wire.ToolCall, results []wire.ToolResult)
}

// Run asks the model prompt, runs the tools it calls and returns its final
// answer. An API other than the two it speaks is an error.
func Run(ctx context.Context, cfg Config, prompt string) (string, error) {
	if cfg.Tools == nil {
		cfg.Tools = LocalTools{}
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.MaxTurns <= 0 {
		cfg.MaxTurns = 8
	}
	var conv conversation
	var err error
	switch cfg.API {
	case "", wire.KindOpenAIChat:
		conv, err = newChat(cfg, prompt)
	case wire.KindAnthropicMessages:
		conv, err = newAnthropic(cfg, prompt)
	default:
		return "", fmt.Errorf("agent: API %q: want %s or %s", cfg.API, wire.KindOpenAIChat, wire.KindAnthropicMessages)
	}
	if err != nil {
		return "", err
	}
	fmt.Fprintf(cfg.Log, "user: %s\n", prompt)
	for turn := 0; turn < cfg.MaxTurns; turn++ {
		text, calls, err := conv.ask(ctx)
		if err != nil {
			return "", err
		}
		if len(calls) == 0 {
			fmt.Fprintf(cfg.Log, "assistant: %s\n", text)
			return text, nil
		}
		results := make([]wire.ToolResult, 0, len(calls))
		for _, tc := range calls {
			fmt.Fprintf(cfg.Log, "assistant calls %s(%s) [%s]\n", tc.Name, tc.Arguments, tc.ID)
			res, err := cfg.Tools.Execute(ctx, tc)
			if err != nil {
				return "", fmt.Errorf("tool %s call %s: %w", tc.Name, tc.ID, err)
			}
			fmt.Fprintf(cfg.Log, "tool %s → %s\n", tc.Name, res.Content)
			results = append(results, res)
		}
		conv.answer(calls, results)
	}
	return "", fmt.Errorf("no final answer after %d turns", cfg.MaxTurns)
}

// errNoChoice is an answer with nothing in it to read.
var errNoChoice = errors.New("the model sent no choice")
