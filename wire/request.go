package wire

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// ToolCall is a function call made by the model: in a response, echoed in
// the history of a later request, or built in provider-neutral terms
// (package presets).
type ToolCall struct {
	// ID is the call's id on the wire: tool_calls[].id (OpenAI chat),
	// call_id (Responses; not the item's "fc_…" id), tool_use id
	// (Anthropic), functionCall.id (Gemini), tool_calls[].id (Ollama). It is
	// "" when the wire carries none, as Gemini and Ollama usually do; such a
	// call is known to RewriteCallIDs and Request.Answers by its SyntheticID.
	ID string
	// Name is the function name.
	Name string
	// Arguments is the JSON object text of the arguments. Where the wire
	// carries a JSON string (OpenAI) it is the string's content; where it
	// carries an object (Anthropic input, Gemini args, Ollama arguments) it
	// is the object's text as it appears in the body. For a stream it is the
	// concatenation of the fragments, exactly. Empty or absent arguments
	// read as "{}".
	Arguments []byte
	// Path is the gjson path of the call in a request body:
	// "messages.1.tool_calls.0" (OpenAI chat, Ollama), "input.2"
	// (Responses), "messages.1.content.0" (Anthropic),
	// "contents.1.parts.0.functionCall" (Gemini). It is "" for a call read
	// from a response.
	Path string
}

// ToolResult is a tool-result turn (or block, or part) in a request, or a
// tool's result in provider-neutral terms.
type ToolResult struct {
	// CallID is the id of the call it answers: tool_call_id, call_id,
	// tool_use_id or functionResponse.id; "" when the wire carries none.
	CallID string
	// Name is the function name: the result's own (Gemini functionResponse
	// name, Ollama tool_name, OpenAI name), else that of the call with
	// CallID echoed in the same request, else "".
	Name string
	// Content is the raw JSON value of the result. Read from a request, it
	// is the value as sent: a JSON string stays a JSON string token (quotes
	// and escapes included), an Anthropic array of text blocks stays an
	// array, a Gemini functionResponse.response is the object, and Output
	// finds the tool's own output in it; it is nil when the field is absent.
	// A result built in provider-neutral terms (package presets, a fixture)
	// holds the tool's output itself, as canonical JSON.
	Content []byte
	// IsError is Anthropic's is_error, or for Gemini a response object with
	// an "error" member. OpenAI and Ollama carry no such flag.
	IsError bool
	// Path is the gjson path of Content in the request body (set even when
	// Content is absent, where SetOutput would put it).
	Path string
}

// Turn is one entry of the conversation in a request.
type Turn struct {
	// Index is the entry's index in the conversation array.
	Index int
	// Role is the entry's role ("user", "assistant", "model", "tool", …);
	// for a Responses input item without a role, its type
	// ("function_call", "function_call_output", …).
	Role string
	// Path is the gjson path of the entry: "messages.3", "contents.2",
	// "input.1", or "input" / "prompt" when that is a single string.
	Path string
	// Text is the entry's text: its content when that is a string, else its
	// text parts (text, input_text, output_text blocks; Gemini text parts
	// that are not thoughts) joined with "\n". It is "" when it has none,
	// as a turn holding only tool calls or tool results.
	Text string
}

// Raw returns the turn's JSON text in body, the request body the turn was
// read from, or nil when it is not there.
func (t Turn) Raw(body []byte) []byte {
	r := gjson.GetBytes(body, t.Path)
	if !r.Exists() {
		return nil
	}
	if r.Index > 0 && r.Index+len(r.Raw) <= len(body) {
		return body[r.Index : r.Index+len(r.Raw)]
	}
	return []byte(r.Raw)
}

// Request is what a request body says, in provider-neutral terms.
type Request struct {
	// Kind is the kind the body was read as.
	Kind Kind
	// Model is the requested model; for Gemini, taken from the path.
	Model string
	// Stream reports whether a streamed answer was asked for: "stream":true;
	// for Gemini, the :streamGenerateContent method; for Ollama, unless
	// "stream":false (Ollama streams by default).
	Stream bool
	// Turns is the conversation, in order. System prompts kept outside the
	// conversation (Anthropic system, Gemini systemInstruction, Responses
	// instructions) are not turns.
	Turns []Turn
	// System is the text of the system prompt: Anthropic's system, Gemini's
	// systemInstruction, the Responses instructions, Ollama generate's
	// system, and the text of every system or developer turn, joined with
	// "\n" in that order; "" for none.
	System string
	// Tools is the function names offered, in order.
	Tools []string
	// ToolCalls is the assistant tool calls echoed in the history, in body
	// order.
	ToolCalls []ToolCall
	// ToolResults is the tool results sent, in body order.
	ToolResults []ToolResult
	// Previous is the id of the stored answer this request continues
	// (Responses previous_response_id); "" when it names none or the wire
	// has no such field.
	Previous string
	// streamOptions is what an OpenAI chat or Responses body's
	// stream_options asks, read here so that OptionsOf need not search the
	// body for it.
	streamOptions streamOptions
}

// streamOptions is what OpenAI's stream_options asks of a stream; the zero
// value is what a body without it gets.
type streamOptions struct {
	includeUsage  bool // "include_usage": true
	noObfuscation bool // "include_obfuscation": false
}

// streamOptionsOf reads the stream_options value so (of any JSON type).
func streamOptionsOf(so gjson.Result) streamOptions {
	return streamOptions{
		includeUsage:  so.Get("include_usage").Type == gjson.True,
		noObfuscation: so.Get("include_obfuscation").Type == gjson.False,
	}
}

// ParseRequest reads a request body of the given kind; path is the
// upstream-relative request path (Gemini names the model and the streaming
// method there; Ollama's /api/generate differs from /api/chat).
//
// A body that is not a JSON object, or whose conversation or tool fields have
// the wrong JSON type, is an error wrapping ErrMalformed that names the byte
// offset or JSON path at fault. A KindGeneric body is never an error (Model is
// read if it is JSON); an unknown kind is ErrUnsupported.
func ParseRequest(kind Kind, path string, body []byte) (Request, error) {
	if kind == KindOpenAIChat || kind == KindOllama && !isOllamaGenerate(path) {
		if req, ok := readChat(kind, body); ok {
			nameResults(&req)
			return req, nil
		}
	}
	return parseRequest(kind, path, body)
}

// parseRequest is ParseRequest's general path, which reads every kind and
// says what is wrong with a body it refuses.
func parseRequest(kind Kind, path string, body []byte) (Request, error) {
	req := Request{Kind: kind}
	switch kind {
	case KindGeneric, KindMCP:
		if checkJSON(body) == nil {
			req.Model = strOf(gjson.GetBytes(body, "model"))
		}
		return req, nil
	case KindOpenAIChat, KindOpenAIResponses, KindAnthropicMessages, KindGemini, KindOllama, KindEmbeddings,
		KindBedrockConverse, KindBedrockInvoke:
	default:
		return req, fmt.Errorf("%s request: %w: unknown API kind", kind, ErrUnsupported)
	}
	doc, err := parseDoc(body)
	if err == nil && !doc.IsObject() {
		err = fmt.Errorf("not a JSON object")
	}
	if err == nil {
		switch kind {
		case KindOpenAIChat:
			err = parseChatRequest(&req, doc, false)
		case KindOllama:
			if isOllamaGenerate(path) {
				err = parseGenerateRequest(&req, doc)
			} else {
				err = parseChatRequest(&req, doc, true)
			}
		case KindOpenAIResponses:
			err = parseResponsesRequest(&req, doc)
		case KindAnthropicMessages:
			err = parseAnthropicRequest(&req, doc)
			if req.Model == "" { // Anthropic on Vertex AI names it in the path
				req.Model = GeminiModel(path)
			}
		case KindBedrockConverse:
			req.Model, req.Stream = BedrockModel(path), bedrockStreaming(path)
			err = parseConverseRequest(&req, doc)
		case KindBedrockInvoke:
			err = parseInvokeRequest(&req, doc)
			req.Model, req.Stream = BedrockModel(path), bedrockStreaming(path)
		case KindGemini:
			req.Model = GeminiModel(path)
			req.Stream = geminiStreaming(path)
			err = parseGeminiRequest(&req, doc)
		case KindEmbeddings:
			req.Model = strOf(doc.Get("model"))
		}
	}
	if err != nil {
		return req, fmt.Errorf("%s request: %w: %v", kind, ErrMalformed, err)
	}
	nameResults(&req)
	return req, nil
}

// nameResults gives each tool result without a name that of the call its
// CallID names in the same request, if any.
func nameResults(req *Request) {
	if len(req.ToolResults) == 0 {
		return
	}
	names := make(map[string]string, len(req.ToolCalls))
	for _, c := range req.ToolCalls {
		if c.ID != "" {
			names[c.ID] = c.Name
		}
	}
	for i, r := range req.ToolResults {
		if r.Name == "" && r.CallID != "" {
			req.ToolResults[i].Name = names[r.CallID]
		}
	}
}

// array returns doc's member key, checking that it is an array if present.
func array(doc gjson.Result, path string) (gjson.Result, error) {
	return arrayValue(doc.Get(path), path)
}

// arrayValue returns v, the member at path, checking that it is an array
// if present.
func arrayValue(v gjson.Result, path string) (gjson.Result, error) {
	if v.Exists() && v.Type != gjson.Null && !v.IsArray() {
		return v, fmt.Errorf("%s: not an array", path)
	}
	return v, nil
}

// turns walks the conversation array key, checking each entry is an object.
func turns(doc gjson.Result, key string, fn func(i int, path string, turn gjson.Result) error) error {
	return turnsIn(doc.Get(key), key, fn)
}

// turnsIn is turns given the conversation's member, v.
func turnsIn(v gjson.Result, key string, fn func(i int, path string, turn gjson.Result) error) error {
	arr, err := arrayValue(v, key)
	if err != nil {
		return err
	}
	each(arr, func(i int, t gjson.Result) {
		if err != nil {
			return
		}
		p := turnPath(key, i)
		if !t.IsObject() {
			err = fmt.Errorf("%s: not an object", p)
			return
		}
		err = fn(i, p, t)
	})
	return err
}

// turnPath is the gjson path of turn i under the conversation's member
// key ("messages.3"); the first turns' are made once.
func turnPath(key string, i int) string {
	var made *[internedTurns]string
	switch key {
	case "messages":
		made = &messagePaths
	case "contents":
		made = &contentPaths
	case "input":
		made = &inputPaths
	}
	if made != nil && i < internedTurns {
		return made[i]
	}
	return key + "." + strconv.Itoa(i)
}

// internedTurns is how many turns' paths are made once per member.
const internedTurns = 64

// The paths of the first turns under each conversation member; read only.
var messagePaths, contentPaths, inputPaths = turnPaths("messages"), turnPaths("contents"), turnPaths("input")

func turnPaths(key string) (out [internedTurns]string) {
	for i := range out {
		out[i] = key + "." + strconv.Itoa(i)
	}
	return out
}

// toolNames collects the offered function names from tools[], each being
// {function:{name}} (OpenAI chat, Ollama) or {name} (Responses, Anthropic).
func toolNames(req *Request, doc gjson.Result) error {
	return toolNamesIn(req, doc.Get("tools"))
}

// toolNamesIn is toolNames given the tools member, v.
func toolNamesIn(req *Request, v gjson.Result) error {
	tools, err := arrayValue(v, "tools")
	each(tools, func(_ int, t gjson.Result) {
		if n := strOf(t.Get("function.name")); n != "" {
			req.Tools = append(req.Tools, n)
		} else if n := strOf(t.Get("name")); n != "" {
			req.Tools = append(req.Tools, n)
		}
	})
	return err
}

// The members a chat request and its messages are read by, in the order
// of the values firstMembers gives.
var (
	chatMembers    = []string{"model", "stream", "messages", "tools", "stream_options"}
	messageMembers = []string{"role", "content", "tool_calls", "name", "tool_name", "tool_call_id"}
)

func parseChatRequest(req *Request, doc gjson.Result, ollama bool) error {
	var top [5]gjson.Result
	firstMembers(doc, chatMembers, top[:])
	req.Model = strOf(top[0])
	req.streamOptions = streamOptionsOf(top[4])
	req.Stream = top[1].Type == gjson.True
	if ollama {
		req.Stream = top[1].Type != gjson.False
	}
	err := turnsIn(top[2], "messages", func(i int, p string, m gjson.Result) error {
		var ms [6]gjson.Result
		firstMembers(m, messageMembers, ms[:])
		role := strOf(ms[0])
		req.addTurn(Turn{Index: i, Role: role, Path: p, Text: partsText(ms[1])})
		calls, err := arrayValue(ms[2], "tool_calls")
		if err != nil {
			return fmt.Errorf("%s.%v", p, err)
		}
		each(calls, func(k int, c gjson.Result) {
			req.ToolCalls = append(req.ToolCalls, ToolCall{
				ID:        strOf(c.Get("id")),
				Name:      strOf(c.Get("function.name")),
				Arguments: args(c.Get("function.arguments")),
				Path:      p + ".tool_calls." + strconv.Itoa(k),
			})
		})
		if role == "tool" {
			name := strOf(ms[3])
			if ollama {
				name = strOf(ms[4])
			}
			req.ToolResults = append(req.ToolResults, ToolResult{
				CallID:  strOf(ms[5]),
				Name:    name,
				Content: rawOf(ms[1]),
				Path:    p + ".content",
			})
		}
		return nil
	})
	if err != nil {
		return err
	}
	return toolNamesIn(req, top[3])
}

func parseGenerateRequest(req *Request, doc gjson.Result) error {
	req.Model = strOf(doc.Get("model"))
	req.Stream = doc.Get("stream").Type != gjson.False
	req.System = strOf(doc.Get("system"))
	if p := doc.Get("prompt"); p.Type == gjson.String {
		req.Turns = append(req.Turns, Turn{Index: 0, Role: "user", Path: "prompt", Text: p.Str})
	}
	return nil
}

func parseResponsesRequest(req *Request, doc gjson.Result) error {
	req.Model = strOf(doc.Get("model"))
	req.Stream = doc.Get("stream").Type == gjson.True
	req.streamOptions = streamOptionsOf(doc.Get("stream_options"))
	req.System = strOf(doc.Get("instructions"))
	req.Previous = strOf(doc.Get("previous_response_id"))
	if in := doc.Get("input"); in.Type == gjson.String {
		req.Turns = append(req.Turns, Turn{Index: 0, Role: "user", Path: "input", Text: in.Str})
	} else {
		err := turns(doc, "input", func(i int, p string, it gjson.Result) error {
			typ := strOf(it.Get("type"))
			role := strOf(it.Get("role"))
			if role == "" {
				role = typ
			}
			req.addTurn(Turn{Index: i, Role: role, Path: p, Text: partsText(it.Get("content"))})
			switch typ {
			case "function_call":
				req.ToolCalls = append(req.ToolCalls, ToolCall{
					ID:        strOf(it.Get("call_id")),
					Name:      strOf(it.Get("name")),
					Arguments: args(it.Get("arguments")),
					Path:      p,
				})
			case "function_call_output":
				req.ToolResults = append(req.ToolResults, ToolResult{
					CallID:  strOf(it.Get("call_id")),
					Content: rawOf(it.Get("output")),
					Path:    p + ".output",
				})
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return toolNames(req, doc)
}

func parseAnthropicRequest(req *Request, doc gjson.Result) error {
	req.Model = strOf(doc.Get("model"))
	req.Stream = doc.Get("stream").Type == gjson.True
	req.System = partsText(doc.Get("system"))
	err := turns(doc, "messages", func(i int, p string, m gjson.Result) error {
		req.addTurn(Turn{Index: i, Role: strOf(m.Get("role")), Path: p, Text: partsText(m.Get("content"))})
		each(m.Get("content"), func(j int, b gjson.Result) {
			switch strOf(b.Get("type")) {
			case "tool_use":
				req.ToolCalls = append(req.ToolCalls, ToolCall{
					ID:        strOf(b.Get("id")),
					Name:      strOf(b.Get("name")),
					Arguments: args(b.Get("input")),
					Path:      p + ".content." + strconv.Itoa(j),
				})
			case "tool_result":
				req.ToolResults = append(req.ToolResults, ToolResult{
					CallID:  strOf(b.Get("tool_use_id")),
					Content: rawOf(b.Get("content")),
					IsError: b.Get("is_error").Type == gjson.True,
					Path:    p + ".content." + strconv.Itoa(j) + ".content",
				})
			}
		})
		return nil
	})
	if err != nil {
		return err
	}
	return toolNames(req, doc)
}

func parseGeminiRequest(req *Request, doc gjson.Result) error {
	sys, _ := memberOf(doc, "systemInstruction", "system_instruction")
	req.System = partsText(sys.Get("parts"))
	err := turns(doc, "contents", func(i int, p string, c gjson.Result) error {
		req.addTurn(Turn{Index: i, Role: strOf(c.Get("role")), Path: p, Text: partsText(c.Get("parts"))})
		each(c.Get("parts"), func(j int, part gjson.Result) {
			if fc, key := memberOf(part, "functionCall", "function_call"); fc.IsObject() {
				req.ToolCalls = append(req.ToolCalls, ToolCall{
					ID:        strOf(fc.Get("id")),
					Name:      strOf(fc.Get("name")),
					Arguments: args(fc.Get("args")),
					Path:      p + ".parts." + strconv.Itoa(j) + "." + key,
				})
			}
			if fr, key := memberOf(part, "functionResponse", "function_response"); fr.IsObject() {
				resp := fr.Get("response")
				req.ToolResults = append(req.ToolResults, ToolResult{
					CallID:  strOf(fr.Get("id")),
					Name:    strOf(fr.Get("name")),
					Content: rawOf(resp),
					IsError: resp.Get("error").Exists(),
					Path:    p + ".parts." + strconv.Itoa(j) + "." + key + ".response",
				})
			}
		})
		return nil
	})
	if err != nil {
		return err
	}
	tools, err := array(doc, "tools")
	each(tools, func(_ int, t gjson.Result) {
		decls, _ := memberOf(t, "functionDeclarations", "function_declarations")
		each(decls, func(_ int, d gjson.Result) {
			if n := strOf(d.Get("name")); n != "" {
				req.Tools = append(req.Tools, n)
			}
		})
	})
	return err
}

// addTurn appends a conversation entry; a system or developer entry's text
// also joins the system prompt.
func (req *Request) addTurn(t Turn) {
	if req.Turns == nil {
		req.Turns = make([]Turn, 0, 4) // one allocation for most requests' turns
	}
	req.Turns = append(req.Turns, t)
	if (t.Role == "system" || t.Role == "developer") && t.Text != "" {
		if req.System != "" {
			req.System += "\n"
		}
		req.System += t.Text
	}
}

// partsText reads the text of message content: a string, or an array of
// parts whose text is joined with "\n". A part counts when its type is
// text, input_text or output_text, or when it has no type (Gemini parts)
// and is not a thought.
func partsText(c gjson.Result) string {
	if c.Type == gjson.String {
		return c.Str
	}
	var b strings.Builder
	each(c, func(_ int, p gjson.Result) {
		t := p.Get("text")
		if t.Type != gjson.String || p.Get("thought").Type == gjson.True {
			return
		}
		switch strOf(p.Get("type")) {
		case "", "text", "input_text", "output_text":
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(t.Str)
		}
	})
	return b.String()
}

// rawOf returns the raw JSON text of r, or nil if r does not exist.
func rawOf(r gjson.Result) []byte {
	if !r.Exists() {
		return nil
	}
	return []byte(r.Raw)
}

// turnsKey is the member holding the conversation for a kind.
func turnsKey(kind Kind) string {
	switch kind {
	case KindOpenAIChat, KindAnthropicMessages, KindOllama, KindBedrockConverse, KindBedrockInvoke:
		return "messages"
	case KindOpenAIResponses:
		return "input"
	case KindGemini:
		return "contents"
	}
	return ""
}

// DescribePath names, in conversation terms, the turn that a gjson path in a
// request body falls in: "messages[3] (user)" for "messages.3.content",
// "contents[2] (model)", "input[1] (function_call_output)", or "input
// (user)" for a Responses input that is one string. The role is left out
// when the turn has none. It returns "" when the path is not inside a turn
// or the body is not JSON.
func DescribePath(kind Kind, body []byte, path string) string {
	key := turnsKey(kind)
	if key == "" || checkJSON(body) != nil {
		return ""
	}
	if path == key && kind == KindOpenAIResponses && gjson.GetBytes(body, key).Type == gjson.String {
		return key + " (user)"
	}
	rest, ok := strings.CutPrefix(path, key+".")
	if !ok {
		return ""
	}
	idx, _, _ := strings.Cut(rest, ".")
	n, err := strconv.Atoi(idx)
	if err != nil || n < 0 || strconv.Itoa(n) != idx {
		return ""
	}
	turn := gjson.GetBytes(body, key+"."+idx)
	if !turn.IsObject() {
		return ""
	}
	role := strOf(turn.Get("role"))
	if role == "" && kind == KindOpenAIResponses {
		role = strOf(turn.Get("type"))
	}
	desc := key + "[" + idx + "]"
	if role != "" {
		desc += " (" + role + ")"
	}
	return desc
}
