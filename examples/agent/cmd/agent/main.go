// Command agent runs the example agent of package agent: a tool loop on
// OpenAI Chat Completions or Anthropic Messages whose write_file and shell
// tools really write and run, or, with -fixtures, answer from a scrubbed
// cassette's (or a running mock's) fixtures.
//
//	agent [-api openai-chat|anthropic-messages] [-base-url URL] [-model M] [-dir DIR] [-stream] [-fixtures URL|CASSETTE] PROMPT...
//
// See examples/agent/README.md for the record → scrub → replay workflow.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/llmproxy/llmproxy/examples/agent"
	"github.com/llmproxy/llmproxy/fixture"
	"github.com/llmproxy/llmproxy/wire"
)

func main() {
	os.Exit(run())
}

func run() int {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	api := fs.String("api", string(wire.KindOpenAIChat), "the `wire` to speak: openai-chat or anthropic-messages")
	baseURL := fs.String("base-url", "", "API `base` (default: env OPENAI_BASE_URL or http://127.0.0.1:7878/v1; for anthropic-messages env ANTHROPIC_BASE_URL or http://127.0.0.1:7878/anthropic)")
	model := fs.String("model", "", "`model` to ask (default: gpt-4o-mini; claude-sonnet-4-6 for anthropic-messages)")
	dir := fs.String("dir", ".", "`directory` the tools work in")
	stream := fs.Bool("stream", false, "stream the answers")
	fixtures := fs.String("fixtures", "", "answer tool calls from fixtures: a proxy `URL` (http://127.0.0.1:7878) or a cassette file")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}
	prompt := strings.Join(fs.Args(), " ")
	if prompt == "" {
		fmt.Fprintln(os.Stderr, "agent: give the prompt as arguments")
		return 2
	}
	var tools agent.Tools = agent.LocalTools{Dir: *dir}
	if *fixtures != "" {
		var exec *fixture.Executor
		var err error
		if strings.HasPrefix(*fixtures, "http://") || strings.HasPrefix(*fixtures, "https://") {
			exec, err = fixture.NewProxyExecutor(*fixtures)
		} else {
			exec, err = fixture.NewCassetteExecutor(*fixtures)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "agent: -fixtures: %v\n", err)
			return 1
		}
		tools = exec
	}
	keyVar, baseVar, base := "OPENAI_API_KEY", "OPENAI_BASE_URL", "http://127.0.0.1:7878/v1"
	switch wire.Kind(*api) {
	case wire.KindOpenAIChat:
	case wire.KindAnthropicMessages:
		keyVar, baseVar, base = "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "http://127.0.0.1:7878/anthropic"
	default:
		fmt.Fprintf(os.Stderr, "agent: -api %q: want openai-chat or anthropic-messages\n", *api)
		return 2
	}
	if *baseURL == "" {
		*baseURL = envOr(baseVar, base)
	}
	key := os.Getenv(keyVar)
	if key == "" {
		key = "replay-needs-no-key"
	}
	cfg := agent.Config{
		API: wire.Kind(*api), BaseURL: *baseURL, APIKey: key, Model: *model,
		Stream: *stream, Tools: tools, Log: os.Stdout,
	}
	if _, err := agent.Run(context.Background(), cfg, prompt); err != nil {
		fmt.Fprintf(os.Stderr, "agent: %v\n", err)
		return 1
	}
	return 0
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
