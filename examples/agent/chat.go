package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/llmproxy/llmproxy/presets"
	"github.com/llmproxy/llmproxy/wire"
)

// chat is the loop's OpenAI Chat Completions side, through openai-go.
type chat struct {
	client openai.Client
	params openai.ChatCompletionNewParams
	stream bool
}

func newChat(cfg Config, prompt string) (*chat, error) {
	if cfg.Model == "" {
		cfg.Model = openai.ChatModelGPT4oMini
	}
	opts := []option.RequestOption{option.WithBaseURL(cfg.BaseURL), option.WithAPIKey(cfg.APIKey), option.WithMaxRetries(0)}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	tools, err := chatTools()
	if err != nil {
		return nil, err
	}
	c := &chat{client: openai.NewClient(opts...), stream: cfg.Stream, params: openai.ChatCompletionNewParams{
		Model:    cfg.Model,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
		Tools:    tools,
	}}
	if cfg.Stream {
		c.params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	}
	return c, nil
}

func (c *chat) ask(ctx context.Context) (string, []wire.ToolCall, error) {
	msg, err := c.complete(ctx)
	if err != nil {
		// openai-go's error text is the status alone; the message (a
		// replay miss's diagnosis, say) is in the error's fields.
		var apiErr *openai.Error
		if errors.As(err, &apiErr) && apiErr.Message != "" {
			return "", nil, fmt.Errorf("%w: %s", err, apiErr.Message)
		}
		return "", nil, err
	}
	c.params.Messages = append(c.params.Messages, msg.ToParam())
	var calls []wire.ToolCall
	for _, tc := range msg.ToolCalls {
		args := json.RawMessage(tc.Function.Arguments)
		if !json.Valid(args) {
			args = json.RawMessage(`{}`)
		}
		calls = append(calls, wire.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: args})
	}
	return msg.Content, calls, nil
}

func (c *chat) answer(calls []wire.ToolCall, results []wire.ToolResult) {
	for n, res := range results {
		c.params.Messages = append(c.params.Messages, openai.ToolMessage(string(res.Content), calls[n].ID))
	}
}

// complete makes one model call and returns the assistant's message.
func (c *chat) complete(ctx context.Context) (openai.ChatCompletionMessage, error) {
	if !c.stream {
		resp, err := c.client.Chat.Completions.New(ctx, c.params)
		if err != nil {
			return openai.ChatCompletionMessage{}, err
		}
		if len(resp.Choices) == 0 {
			return openai.ChatCompletionMessage{}, errNoChoice
		}
		return resp.Choices[0].Message, nil
	}
	s := c.client.Chat.Completions.NewStreaming(ctx, c.params)
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	if err := s.Err(); err != nil {
		return openai.ChatCompletionMessage{}, err
	}
	if len(acc.Choices) == 0 {
		return openai.ChatCompletionMessage{}, errNoChoice
	}
	return acc.Choices[0].Message, nil
}

// chatTools offers the write_file and shell presets as chat tools.
func chatTools() ([]openai.ChatCompletionToolUnionParam, error) {
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
