package fake

import (
	"encoding/json"
	"net/http"
	"strings"
)

// OpenAIChat plays l on OpenAI's Chat Completions API (POST
// …/chat/completions). A request whose messages hold no "tool" message gets
// the tool call, one that does gets the answer. With "stream": true the answer
// is an SSE stream shaped like openai-chat-stream-toolcalls.sse and
// openai-chat-stream-text-after-toolresult.sse ("usage": null on every chunk
// and a final usage chunk with "choices": [] when
// stream_options.include_usage is set, an "obfuscation" field unless
// stream_options.include_obfuscation is false, then "data: [DONE]");
// otherwise a chat.completion object shaped like
// openai-chat-toolcalls.response.json. The model is echoed from the request.
//
// Other paths get OpenAI's 404 and a body that is not JSON a 400.
func OpenAIChat(l ToolLoop) Script {
	lp := l.check()
	return ScriptFunc(lp.openAIChat)
}

const (
	openAIChatCreated     = 1782955817 // created of the captured stream, turn 1
	openAIFingerprint     = "fp_d0469e1700"
	openAIDefaultModel    = "gpt-4o-mini-2024-07-18"
	openAIChatPromptTurn1 = 53
	openAIChatPromptTurn2 = 78
)

type chatRequest struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions *struct {
		IncludeUsage       bool  `json:"include_usage"`
		IncludeObfuscation *bool `json:"include_obfuscation"`
	} `json:"stream_options"`
	Messages []struct {
		Role string `json:"role"`
	} `json:"messages"`
}

type chatUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
		AudioTokens  int `json:"audio_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens          int `json:"reasoning_tokens"`
		AudioTokens              int `json:"audio_tokens"`
		AcceptedPredictionTokens int `json:"accepted_prediction_tokens"`
		RejectedPredictionTokens int `json:"rejected_prediction_tokens"`
	} `json:"completion_tokens_details"`
}

func newChatUsage(prompt, completion int) chatUsage {
	return chatUsage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
}

type chatCompletion struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	Choices           []chatChoice `json:"choices"`
	Usage             chatUsage    `json:"usage"`
	ServiceTier       string       `json:"service_tier"`
	SystemFingerprint string       `json:"system_fingerprint"`
}

type chatChoice struct {
	Index        int             `json:"index"`
	Message      chatMessage     `json:"message"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason string          `json:"finish_reason"`
}

type chatMessage struct {
	Role        string          `json:"role"`
	Content     json.RawMessage `json:"content"`
	ToolCalls   []chatToolCall  `json:"tool_calls,omitempty"`
	Refusal     json.RawMessage `json:"refusal"`
	Annotations json.RawMessage `json:"annotations"`
}

type chatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatChunk struct {
	ID                string            `json:"id"`
	Object            string            `json:"object"`
	Created           int64             `json:"created"`
	Model             string            `json:"model"`
	ServiceTier       string            `json:"service_tier"`
	SystemFingerprint string            `json:"system_fingerprint"`
	Choices           []chatChunkChoice `json:"choices"`
	Usage             json.RawMessage   `json:"usage,omitempty"`
	Obfuscation       string            `json:"obfuscation,omitempty"`
}

type chatChunkChoice struct {
	Index        int             `json:"index"`
	Delta        chatDelta       `json:"delta"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason json.RawMessage `json:"finish_reason"`
}

type chatDelta struct {
	Role      string          `json:"role,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	ToolCalls []chatDeltaCall `json:"tool_calls,omitempty"`
	Refusal   json.RawMessage `json:"refusal,omitempty"`
}

type chatDeltaCall struct {
	Index    int    `json:"index"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

func (l loop) openAIChat(req *Request) *Response {
	if req.Method != http.MethodPost || !strings.HasSuffix(req.Path, "/chat/completions") {
		return apiError(openAI, http.StatusNotFound, "Invalid URL ("+req.Method+" "+req.Path+")")
	}
	var in chatRequest
	if resp := jsonBody(openAI, req.Body, &in); resp != nil {
		return resp
	}
	turn := 1
	for _, m := range in.Messages {
		if m.Role == "tool" || m.Role == "function" {
			turn = 2
		}
	}
	model := in.Model
	if model == "" {
		model = openAIDefaultModel
	}
	rnd := l.seq("openai-chat", turn)
	id := "chatcmpl-" + rnd.alnum(29)
	created := int64(openAIChatCreated + turn - 1)
	prompt := openAIChatPromptTurn1
	if turn == 2 {
		prompt = openAIChatPromptTurn2
	}

	if !in.Stream {
		msg := chatMessage{Role: "assistant", Refusal: raw("null"), Annotations: raw("[]")}
		finish := "tool_calls"
		var completion int
		if turn == 1 {
			msg.Content = raw("null")
			call := chatToolCall{ID: l.CallID, Type: "function"}
			call.Function.Name, call.Function.Arguments = l.Tool, l.Args
			msg.ToolCalls = []chatToolCall{call}
			completion = len(tokens(l.Args)) + 6
		} else {
			msg.Content = quoted(l.Answer)
			finish = "stop"
			completion = len(words(l.Answer)) + 1
		}
		body := marshal(chatCompletion{
			ID: id, Object: "chat.completion", Created: created, Model: model,
			Choices:     []chatChoice{{Index: 0, Message: msg, Logprobs: raw("null"), FinishReason: finish}},
			Usage:       newChatUsage(prompt, completion),
			ServiceTier: "default", SystemFingerprint: openAIFingerprint,
		})
		return &Response{Header: providerHeader(openAI, false), Body: append(indent(body, "  "), '\n')}
	}

	includeUsage := in.StreamOptions != nil && in.StreamOptions.IncludeUsage
	obfuscate := in.StreamOptions == nil || in.StreamOptions.IncludeObfuscation == nil || *in.StreamOptions.IncludeObfuscation
	var events [][]byte
	emit := func(choices []chatChunkChoice, usage json.RawMessage) {
		c := chatChunk{
			ID: id, Object: "chat.completion.chunk", Created: created, Model: model,
			ServiceTier: "default", SystemFingerprint: openAIFingerprint, Choices: choices,
		}
		if includeUsage {
			c.Usage = usage
		}
		if obfuscate {
			c.Obfuscation = rnd.alnum(rnd.between(3, 15))
		}
		events = append(events, sseData(marshal(c)))
	}
	choice := func(d chatDelta, finish string) []chatChunkChoice {
		fr := raw("null")
		if finish != "" {
			fr = quoted(finish)
		}
		return []chatChunkChoice{{Index: 0, Delta: d, Logprobs: raw("null"), FinishReason: fr}}
	}

	var pieces int
	if turn == 1 {
		first := chatDeltaCall{Index: 0, ID: l.CallID, Type: "function"}
		first.Function.Name = l.Tool
		emit(choice(chatDelta{Role: "assistant", Content: raw("null"), ToolCalls: []chatDeltaCall{first}, Refusal: raw("null")}, ""), raw("null"))
		for _, frag := range tokens(l.Args) {
			d := chatDeltaCall{Index: 0}
			d.Function.Arguments = frag
			emit(choice(chatDelta{ToolCalls: []chatDeltaCall{d}}, ""), raw("null"))
			pieces++
		}
		emit(choice(chatDelta{}, "tool_calls"), raw("null"))
	} else {
		emit(choice(chatDelta{Role: "assistant", Content: quoted(""), Refusal: raw("null")}, ""), raw("null"))
		for _, w := range words(l.Answer) {
			emit(choice(chatDelta{Content: quoted(w)}, ""), raw("null"))
			pieces++
		}
		emit(choice(chatDelta{}, "stop"), raw("null"))
	}
	if includeUsage {
		emit([]chatChunkChoice{}, marshal(newChatUsage(prompt, pieces+1)))
	}
	events = append(events, []byte("data: [DONE]\n\n"))
	return &Response{Header: providerHeader(openAI, true), Events: events}
}

// sseData frames one data-only SSE event.
func sseData(data []byte) []byte {
	ev := make([]byte, 0, len(data)+8)
	ev = append(ev, "data: "...)
	ev = append(ev, data...)
	return append(ev, "\n\n"...)
}

// sseEvent frames one SSE event with its name.
func sseEvent(name string, data []byte) []byte {
	ev := make([]byte, 0, len(name)+len(data)+16)
	ev = append(ev, "event: "...)
	ev = append(ev, name...)
	ev = append(ev, "\ndata: "...)
	ev = append(ev, data...)
	return append(ev, "\n\n"...)
}
