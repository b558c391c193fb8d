package fake

import (
	"encoding/json"
	"net/http"
	"strings"
)

// AnthropicMessages plays l on Anthropic's Messages API (POST …/messages). A
// request whose messages hold no tool_result block gets a tool_use block, one
// that does gets a text block. With "stream": true the events follow the
// captured streams: message_start, content_block_start (a tool_use with
// "input": {} or an empty text), a ping, the deltas (for a tool_use an empty
// partial_json first, then the arguments in fragments), content_block_stop,
// message_delta, message_stop, every JSON object but the ping padded with
// spaces before its closing brace as Anthropic's are. Otherwise a compact
// message object shaped like anthropic-messages-tooluse.response.json. The
// model is echoed from the request.
func AnthropicMessages(l ToolLoop) Script {
	lp := l.check()
	return ScriptFunc(lp.anthropicMessages)
}

const (
	anthropicDefaultModel = "claude-sonnet-4-6"
	anthropicPromptTurn1  = 669
	anthropicPromptTurn2  = 742
)

type anthropicRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

type anthropicMessage struct {
	Model        string            `json:"model"`
	ID           string            `json:"id"`
	Type         string            `json:"type"`
	Role         string            `json:"role"`
	Content      []json.RawMessage `json:"content"`
	StopReason   json.RawMessage   `json:"stop_reason"`
	StopSequence json.RawMessage   `json:"stop_sequence"`
	StopDetails  json.RawMessage   `json:"stop_details"`
	Usage        anthropicUsage    `json:"usage"`
}

type anthropicUsage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	CacheCreation            struct {
		Ephemeral5mInputTokens int `json:"ephemeral_5m_input_tokens"`
		Ephemeral1hInputTokens int `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
	OutputTokens int    `json:"output_tokens"`
	ServiceTier  string `json:"service_tier"`
	InferenceGeo string `json:"inference_geo"`
}

type toolUseBlock struct {
	Type   string          `json:"type"`
	ID     string          `json:"id"`
	Name   string          `json:"name"`
	Input  json.RawMessage `json:"input"`
	Caller struct {
		Type string `json:"type"`
	} `json:"caller"`
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// hasToolResult reports whether any message carries a tool_result block.
func (in *anthropicRequest) hasToolResult() bool {
	for _, m := range in.Messages {
		var blocks []struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue // a plain string content
		}
		for _, b := range blocks {
			if b.Type == "tool_result" {
				return true
			}
		}
	}
	return false
}

func (l loop) anthropicMessages(req *Request) *Response {
	if req.Method != http.MethodPost || !strings.HasSuffix(req.Path, "/messages") {
		return apiError(anthropic, http.StatusNotFound, "Not Found")
	}
	var in anthropicRequest
	if resp := jsonBody(anthropic, req.Body, &in); resp != nil {
		return resp
	}
	turn := 1
	if in.hasToolResult() {
		turn = 2
	}
	model := in.Model
	if model == "" {
		model = anthropicDefaultModel
	}
	rnd := l.seq("anthropic-messages", turn)
	id := "msg_01" + rnd.alnum(22)

	var block json.RawMessage
	var pieces []string
	stop := "tool_use"
	prompt := anthropicPromptTurn1
	if turn == 1 {
		tu := toolUseBlock{Type: "tool_use", ID: l.CallID, Name: l.Tool, Input: l.argsCompact}
		tu.Caller.Type = "direct"
		block = marshal(tu)
		pieces = chunks(string(l.argsCompact), rnd)
	} else {
		block = marshal(textBlock{Type: "text", Text: l.Answer})
		pieces = words(l.Answer)
		stop = "end_turn"
		prompt = anthropicPromptTurn2
	}
	usage := anthropicUsage{InputTokens: prompt, OutputTokens: 8 + 4*len(pieces), ServiceTier: "standard", InferenceGeo: "global"}
	msg := anthropicMessage{
		Model: model, ID: id, Type: "message", Role: "assistant", Content: []json.RawMessage{block},
		StopReason: quoted(stop), StopSequence: raw("null"), StopDetails: raw("null"), Usage: usage,
	}
	if !in.Stream {
		return &Response{Header: providerHeader(anthropic, false), Body: marshal(msg)}
	}

	var events [][]byte
	emit := func(name string, v any) {
		data := marshal(v)
		pad := rnd.intn(16)
		padded := make([]byte, 0, len(data)+pad)
		padded = append(padded, data[:len(data)-1]...)
		padded = append(padded, strings.Repeat(" ", pad)...)
		padded = append(padded, '}')
		events = append(events, sseEvent(name, padded))
	}
	type delta struct {
		Type        string  `json:"type"`
		Text        *string `json:"text,omitempty"`
		PartialJSON *string `json:"partial_json,omitempty"`
	}
	type blockDelta struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
		Delta delta  `json:"delta"`
	}

	start := msg
	start.Content, start.StopReason = []json.RawMessage{}, raw("null")
	start.Usage.OutputTokens = 1
	emit("message_start", struct {
		Type    string           `json:"type"`
		Message anthropicMessage `json:"message"`
	}{"message_start", start})

	var empty json.RawMessage
	if turn == 1 {
		tu := toolUseBlock{Type: "tool_use", ID: l.CallID, Name: l.Tool, Input: raw("{}")}
		tu.Caller.Type = "direct"
		empty = marshal(tu)
	} else {
		empty = marshal(textBlock{Type: "text", Text: ""})
	}
	emit("content_block_start", struct {
		Type         string          `json:"type"`
		Index        int             `json:"index"`
		ContentBlock json.RawMessage `json:"content_block"`
	}{"content_block_start", 0, empty})
	events = append(events, sseEvent("ping", []byte(`{"type": "ping"}`)))
	if turn == 1 {
		pieces = append([]string{""}, pieces...)
	}
	for _, p := range pieces {
		d := delta{Type: "text_delta", Text: &p}
		if turn == 1 {
			d = delta{Type: "input_json_delta", PartialJSON: &p}
		}
		emit("content_block_delta", blockDelta{Type: "content_block_delta", Index: 0, Delta: d})
	}
	emit("content_block_stop", struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
	}{"content_block_stop", 0})
	type deltaUsage struct {
		InputTokens              int `json:"input_tokens"`
		CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int `json:"cache_read_input_tokens"`
		OutputTokens             int `json:"output_tokens"`
	}
	emit("message_delta", struct {
		Type  string `json:"type"`
		Delta struct {
			StopReason   string          `json:"stop_reason"`
			StopSequence json.RawMessage `json:"stop_sequence"`
			StopDetails  json.RawMessage `json:"stop_details"`
		} `json:"delta"`
		Usage deltaUsage `json:"usage"`
	}{
		Type: "message_delta",
		Delta: struct {
			StopReason   string          `json:"stop_reason"`
			StopSequence json.RawMessage `json:"stop_sequence"`
			StopDetails  json.RawMessage `json:"stop_details"`
		}{stop, raw("null"), raw("null")},
		Usage: deltaUsage{InputTokens: prompt, OutputTokens: usage.OutputTokens},
	})
	emit("message_stop", struct {
		Type string `json:"type"`
	}{"message_stop"})
	return &Response{Header: providerHeader(anthropic, true), Events: events}
}
