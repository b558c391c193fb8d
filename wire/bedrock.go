package wire

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// Bedrock Runtime (https://bedrock-runtime.REGION.amazonaws.com): the model
// is named by the path, /model/{modelId}/{operation}, the id path-escaped
// (its ':' as %3A). Converse and ConverseStream carry one body shape for
// every model; InvokeModel carries the model's own (Anthropic Messages
// with "anthropic_version":"bedrock-2023-05-31", Nova's Converse-like
// messages, Titan's inputText, Llama's prompt). Both streams are AWS event
// stream messages: ConverseStream's payloads are its events' JSON,
// InvokeModelWithResponseStream's "chunk" payloads {"bytes":"<base64>"}
// hold the model's own stream events.

// bedrockOperation returns the operation of a Bedrock Runtime path
// ("converse", "converse-stream", "invoke", "invoke-with-response-stream")
// and "" for any other path.
func bedrockOperation(p string) string {
	i := strings.LastIndex(p, "/model/")
	if i < 0 {
		return ""
	}
	rest := p[i+len("/model/"):]
	j := strings.LastIndexByte(rest, '/')
	if j <= 0 {
		return ""
	}
	switch op := rest[j+1:]; op {
	case "converse", "converse-stream", "invoke", "invoke-with-response-stream":
		return op
	}
	return ""
}

// BedrockModel returns the model id a Bedrock Runtime path names,
// unescaped: "anthropic.claude-3-5-haiku-20241022-v1:0" for
// /model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse. It returns
// "" when the path names none.
func BedrockModel(path string) string {
	p := trimPath(path)
	if bedrockOperation(p) == "" {
		return ""
	}
	i := strings.LastIndex(p, "/model/")
	m := p[i+len("/model/") : strings.LastIndexByte(p, '/')]
	if un, err := url.PathUnescape(m); err == nil {
		return un
	}
	return m
}

// bedrockStreaming reports whether a Bedrock path asks for a stream.
func bedrockStreaming(path string) bool {
	op := bedrockOperation(trimPath(path))
	return op == "converse-stream" || op == "invoke-with-response-stream"
}

// parseConverseRequest reads a Converse body (and Nova's InvokeModel body,
// which has its shape): messages[].content[] blocks of text, toolUse,
// toolResult; system[] text blocks; toolConfig.tools[].toolSpec.
func parseConverseRequest(req *Request, doc gjson.Result) error {
	req.System = partsText(doc.Get("system"))
	err := turns(doc, "messages", func(i int, p string, m gjson.Result) error {
		req.addTurn(Turn{Index: i, Role: strOf(m.Get("role")), Path: p, Text: partsText(m.Get("content"))})
		each(m.Get("content"), func(j int, b gjson.Result) {
			bp := p + ".content." + strconv.Itoa(j)
			if tu := b.Get("toolUse"); tu.IsObject() {
				req.ToolCalls = append(req.ToolCalls, ToolCall{
					ID: strOf(tu.Get("toolUseId")), Name: strOf(tu.Get("name")),
					Arguments: args(tu.Get("input")), Path: bp + ".toolUse",
				})
			}
			if tr := b.Get("toolResult"); tr.IsObject() {
				req.ToolResults = append(req.ToolResults, ToolResult{
					CallID: strOf(tr.Get("toolUseId")), Content: rawOf(tr.Get("content")),
					IsError: strOf(tr.Get("status")) == "error", Path: bp + ".toolResult.content",
				})
			}
		})
		return nil
	})
	if err != nil {
		return err
	}
	tools, err := array(doc, "toolConfig.tools")
	each(tools, func(_ int, t gjson.Result) {
		if n := strOf(t.Get("toolSpec.name")); n != "" {
			req.Tools = append(req.Tools, n)
		}
	})
	return err
}

// InvokeModel body families: which model's own shape an InvokeModel
// request or answer has.
const (
	familyAnthropic = "anthropic" // Anthropic Messages, anthropic_version "bedrock-2023-05-31"
	familyNova      = "nova"      // Amazon Nova: Converse's messages, system, inferenceConfig, toolConfig
	familyTitan     = "titan"     // Amazon Titan Text: inputText, textGenerationConfig
	familyLlama     = "llama"     // Meta Llama (and Mistral's prompt): prompt, max_gen_len
)

// novaStreamEvents are the members one Nova stream chunk wraps its
// ConverseStream-shaped event in ({"contentBlockDelta":{…}}).
var novaStreamEvents = [...]string{"messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop", "messageStop", "metadata"}

// invokeFamily returns the family of an InvokeModel request body or of one
// answer document (a whole answer or a stream chunk's decoded bytes), and
// "" when the document has none of their shapes. Anthropic's requests
// carry anthropic_version and its answers and stream events a "type";
// Nova's requests carry messages and its answers output or a wrapped
// stream event; Titan's requests carry inputText and its answers
// results[] or outputText; Llama's requests a prompt and its answers a
// generation.
func invokeFamily(doc gjson.Result) string {
	switch {
	case doc.Get("anthropic_version").Exists(), doc.Get("type").Exists():
		return familyAnthropic
	case doc.Get("messages.0.content").IsArray(), doc.Get("output").Exists():
		// Nova's turns hold arrays of blocks; a body whose turns hold
		// strings (Mistral's chat) is of no family answered.
		return familyNova
	case doc.Get("inputText").Exists(), doc.Get("results").Exists(), doc.Get("outputText").Exists():
		return familyTitan
	case doc.Get("prompt").Exists(), doc.Get("generation").Exists():
		return familyLlama
	}
	for _, k := range novaStreamEvents {
		if doc.Get(k).IsObject() {
			return familyNova
		}
	}
	return ""
}

// invokeShapeKind is the kind whose reader reads an InvokeModel document of
// family f: anthropic-messages for Anthropic's, bedrock-converse for
// Nova's, and generic for the single-prompt ones (Titan, Llama), which
// carry no tool traffic and no system prompt.
func invokeShapeKind(f string) Kind {
	switch f {
	case familyAnthropic:
		return KindAnthropicMessages
	case familyNova:
		return KindBedrockConverse
	}
	return KindGeneric
}

// parseInvokeRequest reads an InvokeModel body by its family (invokeFamily):
// Anthropic Messages, Nova (Converse blocks), or a single prompt (Titan
// inputText, Llama and Mistral prompt).
func parseInvokeRequest(req *Request, doc gjson.Result) error {
	switch invokeFamily(doc) {
	case familyAnthropic:
		return parseAnthropicRequest(req, doc)
	case familyNova:
		return parseConverseRequest(req, doc)
	}
	for _, k := range []string{"inputText", "prompt"} {
		if p := doc.Get(k); p.Type == gjson.String {
			req.Turns = append(req.Turns, Turn{Index: 0, Role: "user", Path: k, Text: p.Str})
			break
		}
	}
	return nil
}

// converseAcc reads Converse answers, whole or as ConverseStream events
// (messageStart, contentBlockStart, contentBlockDelta, contentBlockStop,
// messageStop, metadata), and the Nova, Titan and Llama bodies of
// InvokeModel, whole or as their stream chunks' documents (Nova's wrap a
// ConverseStream event in a member naming it).
type converseAcc struct {
	base
	byIndex map[int64]int
}

// Usage paths of the InvokeModel bodies: Titan's whole answer and stream
// chunks, Llama's, and the amazon-bedrock-invocationMetrics that ends
// every model's stream.
var (
	titanUsagePaths      = usagePaths{input: []string{"inputTextTokenCount"}, output: []string{"totalOutputTextTokenCount"}}
	titanResultPaths     = usagePaths{output: []string{"tokenCount"}}
	llamaUsagePaths      = usagePaths{input: []string{"prompt_token_count"}, output: []string{"generation_token_count"}}
	invocationUsagePaths = usagePaths{input: []string{"inputTokenCount"}, output: []string{"outputTokenCount"}}
)

func (a *converseAcc) add(doc gjson.Result) {
	for _, k := range novaStreamEvents {
		if ev := doc.Get(k); ev.IsObject() {
			a.add(ev)
		}
	}
	if e := errorText(doc.Get("error")); e != "" {
		a.err = e
	}
	if m := doc.Get("output.message"); m.IsObject() {
		each(m.Get("content"), func(_ int, b gjson.Result) { a.block(b) })
	}
	if s := doc.Get("start.toolUse"); s.IsObject() {
		i := a.newCall(strOf(s.Get("toolUseId")), strOf(s.Get("name")))
		a.byIndex[doc.Get("contentBlockIndex").Int()] = i
	}
	if d := doc.Get("delta"); d.IsObject() {
		a.text.WriteString(strOf(d.Get("text")))
		a.reasoning.WriteString(strOf(d.Get("reasoningContent.text")))
		if in := d.Get("toolUse.input"); in.Type == gjson.String {
			if i, ok := a.byIndex[doc.Get("contentBlockIndex").Int()]; ok {
				a.calls[i].args = append(a.calls[i].args, in.Str...)
			}
		}
	}
	for _, k := range []string{"stopReason", "stop_reason", "completionReason", "results.0.completionReason"} {
		if s := strOf(doc.Get(k)); s != "" {
			a.stop = s
		}
	}
	a.readUsage(doc.Get("amazon-bedrock-invocationMetrics"), invocationUsagePaths)
	a.readUsage(doc.Get("usage"), converseUsagePaths)
	a.readUsage(doc, titanUsagePaths)
	a.readUsage(doc.Get("results.0"), titanResultPaths)
	a.readUsage(doc, llamaUsagePaths)
	// Titan and Llama answer with one text.
	a.text.WriteString(strOf(doc.Get("results.0.outputText")))
	a.text.WriteString(strOf(doc.Get("outputText")))
	a.text.WriteString(strOf(doc.Get("generation")))
}

// block reads one content block of a whole Converse message.
func (a *converseAcc) block(b gjson.Result) {
	a.text.WriteString(strOf(b.Get("text")))
	a.reasoning.WriteString(strOf(b.Get("reasoningContent.reasoningText.text")))
	if tu := b.Get("toolUse"); tu.IsObject() {
		i := a.newCall(strOf(tu.Get("toolUseId")), strOf(tu.Get("name")))
		a.calls[i].initial = args(tu.Get("input"))
	}
}

func (a *converseAcc) finish() Response { return a.response() }

// invokeAcc reads InvokeModel answers: Anthropic's documents (they carry a
// "type") go to an Anthropic reader, every other to a Converse one; the
// answer is the reader's that saw a document.
type invokeAcc struct {
	anthropic *anthropicAcc
	other     *converseAcc
	sawOther  bool
}

func (a *invokeAcc) add(doc gjson.Result) {
	if invokeFamily(doc) == familyAnthropic {
		a.anthropic.add(doc)
		return
	}
	a.sawOther = true
	a.other.add(doc)
}

func (a *invokeAcc) finish() Response {
	if a.sawOther {
		return a.other.finish()
	}
	return a.anthropic.finish()
}

// eventStreamDocs calls fn with the JSON document of each message of an
// event stream body: its payload, an InvokeModelWithResponseStream chunk's
// decoded bytes, or for an exception {"error":{"type":T,"message":M}}. at
// maps an offset in a payload's text to the body; a chunk's decoded bytes
// have no place in the body, and at gives -1 for them.
func eventStreamDocs(kind Kind, body []byte, fn func(doc gjson.Result, at func(int) int)) error {
	off := 0
	s := NewSplitter(FramingEventStream)
	evs := s.Push(body)
	evs, rest := append(evs, s.drain(true)...), s.buf
	for i, ev := range evs {
		base := off
		off += len(ev.Raw)
		m, _ := DecodeEventStream(ev.Raw) // the Splitter returns only valid messages
		start := base + len(ev.Raw) - 4 - len(m.Payload)
		at := func(p int) int { return start + p }
		switch m.Header(":message-type") {
		case "exception", "error":
			typ := m.Header(":exception-type") + m.Header(":error-code")
			msg := strOf(gjson.GetBytes(m.Payload, "message")) + m.Header(":error-message")
			w := &jsonw{}
			w.Obj().K("error").Obj().K("type").Str(typ).K("message").Str(msg).End().End()
			fn(gjson.ParseBytes(w.b), func(int) int { return -1 })
			continue
		}
		doc, err := parseDoc(m.Payload)
		if err != nil {
			return errEventDoc(i, err.Error())
		}
		if b := doc.Get("bytes"); kind == KindBedrockInvoke && b.Type == gjson.String {
			dec, err := base64.StdEncoding.DecodeString(b.Str)
			if err != nil {
				return errEventDoc(i, "bytes: "+err.Error())
			}
			if doc, err = parseDoc(dec); err != nil {
				return errEventDoc(i, "bytes: "+err.Error())
			}
			at = func(int) int { return -1 }
		}
		fn(doc, at)
	}
	if len(rest) > 0 {
		if err := s.Err(); err != nil {
			return err
		}
		return errEventDoc(len(evs), "cut short: "+strconv.Itoa(len(rest))+" bytes of an incomplete message")
	}
	return nil
}

func errEventDoc(n int, msg string) error { return fmt.Errorf("event stream message %d: %s", n, msg) }
