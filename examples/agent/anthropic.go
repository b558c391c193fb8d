package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/llmproxy/llmproxy/presets"
	"github.com/llmproxy/llmproxy/wire"
)

// anthropicMaxTokens is the max_tokens every Anthropic request must name.
const anthropicMaxTokens = 1024

// messages is the loop's Anthropic Messages side, through anthropic-sdk-go.
type messages struct {
	client anthropic.Client
	params anthropic.MessageNewParams
	stream bool
}

func newAnthropic(cfg Config, prompt string) (*messages, error) {
	if cfg.Model == "" {
		cfg.Model = "claude-sonnet-4-6"
	}
	opts := []option.RequestOption{option.WithBaseURL(cfg.BaseURL), option.WithAPIKey(cfg.APIKey), option.WithMaxRetries(0)}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	tools, err := anthropicTools()
	if err != nil {
		return nil, err
	}
	return &messages{client: anthropic.NewClient(opts...), stream: cfg.Stream, params: anthropic.MessageNewParams{
		Model:     anthropic.Model(cfg.Model),
		MaxTokens: anthropicMaxTokens,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))},
		Tools:     tools,
	}}, nil
}

func (m *messages) ask(ctx context.Context) (string, []wire.ToolCall, error) {
	msg, err := m.complete(ctx)
	if err != nil {
		return "", nil, err
	}
	m.params.Messages = append(m.params.Messages, msg.ToParam())
	var text strings.Builder
	var calls []wire.ToolCall
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			tu := b.AsToolUse()
			calls = append(calls, wire.ToolCall{ID: tu.ID, Name: tu.Name, Arguments: tu.Input})
		}
	}
	return text.String(), calls, nil
}

func (m *messages) answer(calls []wire.ToolCall, results []wire.ToolResult) {
	blocks := make([]anthropic.ContentBlockParamUnion, 0, len(results))
	for n, res := range results {
		blocks = append(blocks, anthropic.NewToolResultBlock(calls[n].ID, string(res.Content), res.IsError))
	}
	m.params.Messages = append(m.params.Messages, anthropic.NewUserMessage(blocks...))
}

// complete makes one model call and returns the assistant's message.
func (m *messages) complete(ctx context.Context) (anthropic.Message, error) {
	if !m.stream {
		msg, err := m.client.Messages.New(ctx, m.params)
		if err != nil {
			return anthropic.Message{}, err
		}
		return *msg, nil
	}
	s := m.client.Messages.NewStreaming(ctx, m.params)
	var msg anthropic.Message
	for s.Next() {
		if err := msg.Accumulate(s.Current()); err != nil {
			return anthropic.Message{}, err
		}
	}
	if err := s.Err(); err != nil {
		return anthropic.Message{}, err
	}
	if msg.ID == "" { // no message_start
		return anthropic.Message{}, errNoChoice
	}
	return msg, nil
}

// anthropicTools offers the write_file and shell presets as Anthropic tools.
func anthropicTools() ([]anthropic.ToolUnionParam, error) {
	var out []anthropic.ToolUnionParam
	for _, name := range ToolNames {
		d, _ := presets.Lookup(name)
		var def struct {
			Name        string `json:"name"`
			Description string `json:"description"`
			InputSchema struct {
				Properties any      `json:"properties"`
				Required   []string `json:"required"`
			} `json:"input_schema"`
		}
		if err := json.Unmarshal(d.AnthropicTool(), &def); err != nil {
			return nil, fmt.Errorf("tool %s: %w", name, err)
		}
		out = append(out, anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
			Name:        def.Name,
			Description: anthropic.String(def.Description),
			InputSchema: anthropic.ToolInputSchemaParam{Properties: def.InputSchema.Properties, Required: def.InputSchema.Required},
		}})
	}
	return out, nil
}
