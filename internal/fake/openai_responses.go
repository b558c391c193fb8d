package fake

import (
	"encoding/json"
	"net/http"
	"strings"
)

// OpenAIResponses plays l on OpenAI's Responses API (POST …/responses). A
// request whose input holds no function_call_output item gets a
// function_call, one that does gets a message with the answer. With
// "stream": true every event of the captured streams is sent, each with its
// sequence_number (response.created, response.in_progress,
// response.output_item.added, response.function_call_arguments.delta/.done or
// response.content_part.added, response.output_text.delta/.done,
// response.content_part.done, then response.output_item.done and
// response.completed); otherwise a response object shaped like
// openai-responses-functioncall.response.json. The model, instructions,
// store flag, reasoning effort and tools are echoed from the request.
func OpenAIResponses(l ToolLoop) Script {
	lp := l.check()
	return ScriptFunc(lp.openAIResponses)
}

const (
	responsesCreated       = 1778037182 // created_at of the captured stream, turn 1
	responsesDefaultModel  = "gpt-5.5-2026-04-23"
	responsesPromptTurn1   = 58
	responsesPromptTurn2   = 94
	responsesFinalAnswer   = "final_answer"
	responsesOutputTextTyp = "output_text"
)

type responsesRequest struct {
	Model        string            `json:"model"`
	Stream       bool              `json:"stream"`
	Instructions json.RawMessage   `json:"instructions"`
	Store        *bool             `json:"store"`
	Input        json.RawMessage   `json:"input"`
	Tools        []json.RawMessage `json:"tools"`
	ToolChoice   json.RawMessage   `json:"tool_choice"`
	Reasoning    *struct {
		Effort json.RawMessage `json:"effort"`
	} `json:"reasoning"`
	PreviousResponseID json.RawMessage `json:"previous_response_id"`
	ParallelToolCalls  *bool           `json:"parallel_tool_calls"`
	Metadata           json.RawMessage `json:"metadata"`
}

// responseObject is the "response" object, in the captured key order.
type responseObject struct {
	ID                 string          `json:"id"`
	Object             string          `json:"object"`
	CreatedAt          int64           `json:"created_at"`
	Status             string          `json:"status"`
	Background         bool            `json:"background"`
	Billing            *billing        `json:"billing,omitempty"`
	CompletedAt        json.RawMessage `json:"completed_at"`
	Error              json.RawMessage `json:"error"`
	FrequencyPenalty   json.RawMessage `json:"frequency_penalty"`
	IncompleteDetails  json.RawMessage `json:"incomplete_details"`
	Instructions       json.RawMessage `json:"instructions"`
	MaxOutputTokens    json.RawMessage `json:"max_output_tokens"`
	MaxToolCalls       json.RawMessage `json:"max_tool_calls"`
	Model              string          `json:"model"`
	Moderation         json.RawMessage `json:"moderation"`
	Output             []any           `json:"output"`
	ParallelToolCalls  bool            `json:"parallel_tool_calls"`
	PresencePenalty    json.RawMessage `json:"presence_penalty"`
	PreviousResponseID json.RawMessage `json:"previous_response_id"`
	PromptCacheKey     json.RawMessage `json:"prompt_cache_key"`
	PromptCacheRetain  string          `json:"prompt_cache_retention"`
	Reasoning          struct {
		Effort  json.RawMessage `json:"effort"`
		Summary json.RawMessage `json:"summary"`
	} `json:"reasoning"`
	SafetyIdentifier json.RawMessage `json:"safety_identifier"`
	ServiceTier      string          `json:"service_tier"`
	Store            bool            `json:"store"`
	Temperature      json.RawMessage `json:"temperature"`
	Text             struct {
		Format struct {
			Type string `json:"type"`
		} `json:"format"`
		Verbosity string `json:"verbosity"`
	} `json:"text"`
	ToolChoice  json.RawMessage   `json:"tool_choice"`
	Tools       []json.RawMessage `json:"tools"`
	TopLogprobs int               `json:"top_logprobs"`
	TopP        json.RawMessage   `json:"top_p"`
	Truncation  string            `json:"truncation"`
	Usage       json.RawMessage   `json:"usage"`
	User        json.RawMessage   `json:"user"`
	Metadata    json.RawMessage   `json:"metadata"`
}

type billing struct {
	Payer string `json:"payer"`
}

type responsesUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

type functionCallItem struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Status    string `json:"status"`
	Arguments string `json:"arguments"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
}

type messageItem struct {
	ID      string       `json:"id"`
	Type    string       `json:"type"`
	Status  string       `json:"status"`
	Content []outputText `json:"content"`
	Phase   string       `json:"phase"`
	Role    string       `json:"role"`
}

type outputText struct {
	Type        string          `json:"type"`
	Annotations json.RawMessage `json:"annotations"`
	Logprobs    json.RawMessage `json:"logprobs"`
	Text        string          `json:"text"`
}

// responsesEvent holds every field a Responses stream event can carry; after
// "type" they are in alphabetical order, as OpenAI sends them.
type responsesEvent struct {
	Type           string          `json:"type"`
	Arguments      *string         `json:"arguments,omitempty"`
	ContentIndex   *int            `json:"content_index,omitempty"`
	Delta          *string         `json:"delta,omitempty"`
	Item           any             `json:"item,omitempty"`
	ItemID         string          `json:"item_id,omitempty"`
	Logprobs       json.RawMessage `json:"logprobs,omitempty"`
	Obfuscation    string          `json:"obfuscation,omitempty"`
	OutputIndex    *int            `json:"output_index,omitempty"`
	Part           *outputText     `json:"part,omitempty"`
	Response       *responseObject `json:"response,omitempty"`
	SequenceNumber int             `json:"sequence_number"`
	Text           *string         `json:"text,omitempty"`
}

// hasFunctionCallOutput reports whether a Responses input (a string or a list
// of items) answers a function call.
func hasFunctionCallOutput(input json.RawMessage) bool {
	var items []struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(input, &items) != nil {
		return false
	}
	for _, it := range items {
		if it.Type == "function_call_output" {
			return true
		}
	}
	return false
}

// echoTool writes a request tool the way the response lists it: a function
// tool as type, description, name, parameters, strict (strict defaulting to
// true); any other tool as sent.
func echoTool(t json.RawMessage) json.RawMessage {
	var fn struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description json.RawMessage `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      json.RawMessage `json:"strict"`
	}
	if json.Unmarshal(t, &fn) != nil || fn.Type != "function" {
		return t
	}
	orNull := func(r json.RawMessage) json.RawMessage {
		if len(r) == 0 {
			return raw("null")
		}
		return r
	}
	if len(fn.Strict) == 0 || string(fn.Strict) == "null" {
		fn.Strict = raw("true")
	}
	return marshal(struct {
		Type        string          `json:"type"`
		Description json.RawMessage `json:"description"`
		Name        string          `json:"name"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      json.RawMessage `json:"strict"`
	}{fn.Type, orNull(fn.Description), fn.Name, orNull(fn.Parameters), fn.Strict})
}

func (l loop) openAIResponses(req *Request) *Response {
	if req.Method != http.MethodPost || !strings.HasSuffix(req.Path, "/responses") {
		return apiError(openAI, http.StatusNotFound, "Invalid URL ("+req.Method+" "+req.Path+")")
	}
	var in responsesRequest
	if resp := jsonBody(openAI, req.Body, &in); resp != nil {
		return resp
	}
	turn := 1
	if hasFunctionCallOutput(in.Input) {
		turn = 2
	}
	rnd := l.seq("openai-responses", turn)
	created := int64(responsesCreated + 4*(turn-1))

	obj := responseObject{
		ID: "resp_" + rnd.hex(50), Object: "response", CreatedAt: created, Status: "in_progress",
		CompletedAt: raw("null"), Error: raw("null"), FrequencyPenalty: raw("0.0"),
		IncompleteDetails: raw("null"), Instructions: raw("null"), MaxOutputTokens: raw("null"),
		MaxToolCalls: raw("null"), Model: in.Model, Moderation: raw("null"), Output: []any{},
		ParallelToolCalls: in.ParallelToolCalls == nil || *in.ParallelToolCalls,
		PresencePenalty:   raw("0.0"), PreviousResponseID: raw("null"), PromptCacheKey: raw("null"),
		PromptCacheRetain: "24h", SafetyIdentifier: raw("null"), ServiceTier: "auto",
		Store: in.Store == nil || *in.Store, Temperature: raw("1.0"), ToolChoice: quoted("auto"),
		Tools: []json.RawMessage{}, TopP: raw("0.98"), Truncation: "disabled", Usage: raw("null"),
		User: raw("null"), Metadata: raw("{}"),
	}
	if obj.Model == "" {
		obj.Model = responsesDefaultModel
	}
	if len(in.Instructions) > 0 {
		obj.Instructions = in.Instructions
	}
	if len(in.PreviousResponseID) > 0 {
		obj.PreviousResponseID = in.PreviousResponseID
	}
	if len(in.ToolChoice) > 0 && string(in.ToolChoice) != "null" {
		obj.ToolChoice = in.ToolChoice
	}
	if len(in.Metadata) > 0 && string(in.Metadata) != "null" {
		obj.Metadata = in.Metadata
	}
	obj.Reasoning.Effort, obj.Reasoning.Summary = raw("null"), raw("null")
	if in.Reasoning != nil && len(in.Reasoning.Effort) > 0 {
		obj.Reasoning.Effort = in.Reasoning.Effort
	}
	obj.Text.Format.Type, obj.Text.Verbosity = "text", "medium"
	for _, t := range in.Tools {
		obj.Tools = append(obj.Tools, echoTool(t))
	}

	var final any
	var pieces []string
	itemID := ""
	if turn == 1 {
		itemID = "fc_" + rnd.hex(50)
		pieces = tokens(l.Args)
		final = functionCallItem{ID: itemID, Type: "function_call", Status: "completed", Arguments: l.Args, CallID: l.CallID, Name: l.Tool}
	} else {
		itemID = "msg_" + rnd.hex(50)
		pieces = words(l.Answer)
		final = messageItem{
			ID: itemID, Type: "message", Status: "completed",
			Content: []outputText{{Type: responsesOutputTextTyp, Annotations: raw("[]"), Logprobs: raw("[]"), Text: l.Answer}},
			Phase:   responsesFinalAnswer, Role: "assistant",
		}
	}
	prompt := responsesPromptTurn1
	if turn == 2 {
		prompt = responsesPromptTurn2
	}
	usage := responsesUsage{InputTokens: prompt, OutputTokens: len(pieces) + 12, TotalTokens: prompt + len(pieces) + 12}

	completed := obj
	completed.Status, completed.CompletedAt, completed.ServiceTier = "completed", marshal(created+1), "default"
	completed.Output, completed.Usage = []any{final}, marshal(usage)

	if !in.Stream {
		completed.Billing = &billing{Payer: "developer"}
		return &Response{Header: providerHeader(openAI, false), Body: indent(marshal(completed), "  ")}
	}

	var events [][]byte
	emit := func(e responsesEvent) {
		e.SequenceNumber = len(events)
		events = append(events, sseEvent(e.Type, marshal(e)))
	}
	zero := 0
	str := func(s string) *string { return &s }
	emit(responsesEvent{Type: "response.created", Response: &obj})
	emit(responsesEvent{Type: "response.in_progress", Response: &obj})
	if turn == 1 {
		fc := final.(functionCallItem)
		added := fc
		added.Status, added.Arguments = "in_progress", ""
		emit(responsesEvent{Type: "response.output_item.added", Item: added, OutputIndex: &zero})
		for _, p := range pieces {
			emit(responsesEvent{
				Type: "response.function_call_arguments.delta", Delta: str(p), ItemID: itemID,
				Obfuscation: rnd.alnum(rnd.between(10, 15)), OutputIndex: &zero,
			})
		}
		emit(responsesEvent{Type: "response.function_call_arguments.done", Arguments: str(l.Args), ItemID: itemID, OutputIndex: &zero})
	} else {
		msg := final.(messageItem)
		added := msg
		added.Status, added.Content = "in_progress", []outputText{}
		emit(responsesEvent{Type: "response.output_item.added", Item: added, OutputIndex: &zero})
		part := outputText{Type: responsesOutputTextTyp, Annotations: raw("[]"), Logprobs: raw("[]"), Text: ""}
		emit(responsesEvent{Type: "response.content_part.added", ContentIndex: &zero, ItemID: itemID, OutputIndex: &zero, Part: &part})
		for _, p := range pieces {
			emit(responsesEvent{
				Type: "response.output_text.delta", ContentIndex: &zero, Delta: str(p), ItemID: itemID,
				Logprobs: raw("[]"), Obfuscation: rnd.alnum(rnd.between(10, 15)), OutputIndex: &zero,
			})
		}
		emit(responsesEvent{Type: "response.output_text.done", ContentIndex: &zero, ItemID: itemID, Logprobs: raw("[]"), OutputIndex: &zero, Text: str(l.Answer)})
		done := msg.Content[0]
		emit(responsesEvent{Type: "response.content_part.done", ContentIndex: &zero, ItemID: itemID, OutputIndex: &zero, Part: &done})
	}
	emit(responsesEvent{Type: "response.output_item.done", Item: final, OutputIndex: &zero})
	emit(responsesEvent{Type: "response.completed", Response: &completed})
	return &Response{Header: providerHeader(openAI, true), Events: events}
}
