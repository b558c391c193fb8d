package wire

import (
	"strings"

	"github.com/tidwall/gjson"
)

// Message is one entry of a request's conversation as a person reads it.
type Message struct {
	// Role is the turn's Role, or "system" for a system prompt kept outside
	// the conversation (Anthropic system, Gemini systemInstruction,
	// Responses instructions, Ollama generate's system).
	Role string
	// Path is the gjson path of the turn (Turn.Path) or of the system
	// prompt ("system", "systemInstruction", "instructions").
	Path string
	// Text is the message's text parts joined with "\n". A tool-result
	// turn's content is not text: it is in ToolResults.
	Text string
	// Reasoning is the thinking text the message carries (Anthropic
	// thinking blocks, Gemini thought parts, Ollama thinking, Responses
	// reasoning summaries), joined with "\n".
	Reasoning string
	// Other names, in order, the parts that are neither text, reasoning nor
	// tool traffic ("image_url", "image", "inlineData", …).
	Other []string
	// ToolCalls and ToolResults are the tool traffic of this turn, as
	// ParseRequest reads it.
	ToolCalls   []ToolCall
	ToolResults []ToolResult
}

// Transcript reads a request body as a conversation: the system prompt kept
// outside the turns first, if there is one, then one Message per turn of
// ParseRequest, with that turn's text and tool traffic. Embeddings input
// reads as one user message; a KindGeneric body has no conversation. Its
// errors are ParseRequest's.
func Transcript(kind Kind, path string, body []byte) ([]Message, error) {
	req, err := ParseRequest(kind, path, body)
	if err != nil || kind == KindGeneric || kind == KindMCP {
		return nil, err
	}
	doc := gjson.ParseBytes(body)  // ParseRequest validated it
	if kind == KindBedrockInvoke { // the model's own body: read as its shape
		kind = invokeShapeKind(invokeFamily(doc))
	}
	var out []Message
	if sys, p := systemOf(kind, path, doc); sys != "" {
		out = append(out, Message{Role: "system", Path: p, Text: sys})
	}
	if kind == KindEmbeddings {
		if text := embeddingsInput(doc.Get("input")); text != "" {
			out = append(out, Message{Role: "user", Path: "input", Text: text})
		}
		return out, nil
	}
	byTurn := make(map[int]int, len(req.Turns)) // turn index → message
	for _, t := range req.Turns {
		m := Message{Role: t.Role, Path: t.Path}
		readTurn(kind, doc.Get(t.Path), &m)
		byTurn[t.Index] = len(out)
		out = append(out, m)
	}
	for _, c := range req.ToolCalls {
		if n, ok := byTurn[turnOf(c.Path)]; ok {
			out[n].ToolCalls = append(out[n].ToolCalls, c)
		}
	}
	for _, r := range req.ToolResults {
		if n, ok := byTurn[turnOf(r.Path)]; ok {
			out[n].ToolResults = append(out[n].ToolResults, r)
		}
	}
	return out, nil
}

// systemOf returns the system prompt kept outside the conversation, and its
// path.
func systemOf(kind Kind, path string, doc gjson.Result) (string, string) {
	switch kind {
	case KindOpenAIResponses:
		return strOf(doc.Get("instructions")), "instructions"
	case KindAnthropicMessages:
		sys := doc.Get("system")
		if sys.Type == gjson.String {
			return sys.Str, "system"
		}
		var t texts
		each(sys, func(_ int, b gjson.Result) { t.add(strOf(b.Get("text"))) })
		return t.String(), "system"
	case KindGemini:
		sys, key := memberOf(doc, "systemInstruction", "system_instruction")
		if sys.Type == gjson.String {
			return sys.Str, key
		}
		var t texts
		each(sys.Get("parts"), func(_ int, p gjson.Result) { t.add(strOf(p.Get("text"))) })
		return t.String(), key
	case KindOllama:
		if isOllamaGenerate(path) {
			return strOf(doc.Get("system")), "system"
		}
	case KindBedrockConverse:
		var t texts
		each(doc.Get("system"), func(_ int, b gjson.Result) { t.add(strOf(b.Get("text"))) })
		return t.String(), "system"
	}
	return "", ""
}

// readTurn fills in the text, reasoning and other parts of one turn.
func readTurn(kind Kind, turn gjson.Result, m *Message) {
	var text, reasoning texts
	if turn.Type == gjson.String { // Responses "input" or Ollama "prompt"
		m.Text = turn.Str
		return
	}
	part := func(typ string, b gjson.Result) {
		switch typ {
		case "text", "input_text", "output_text":
			text.add(strOf(b.Get("text")))
		case "refusal":
			text.add(strOf(b.Get("refusal")))
		case "thinking":
			reasoning.add(strOf(b.Get("thinking")))
		case "tool_use", "tool_result", "":
		default:
			m.Other = append(m.Other, typ)
		}
	}
	switch kind {
	case KindOpenAIChat, KindOllama:
		if m.Role != "tool" {
			content := turn.Get("content")
			if content.Type == gjson.String {
				text.add(content.Str)
			}
			each(content, func(_ int, b gjson.Result) { part(strOf(b.Get("type")), b) })
			text.add(strOf(turn.Get("refusal")))
		}
		reasoning.add(strOf(turn.Get("thinking")))
		if turn.Get("images").IsArray() {
			m.Other = append(m.Other, "images")
		}
	case KindOpenAIResponses:
		switch strOf(turn.Get("type")) {
		case "function_call", "function_call_output":
		case "reasoning":
			each(turn.Get("summary"), func(_ int, s gjson.Result) { reasoning.add(strOf(s.Get("text"))) })
		default:
			content := turn.Get("content")
			if content.Type == gjson.String {
				text.add(content.Str)
			}
			each(content, func(_ int, b gjson.Result) { part(strOf(b.Get("type")), b) })
		}
	case KindAnthropicMessages:
		content := turn.Get("content")
		if content.Type == gjson.String {
			text.add(content.Str)
		}
		each(content, func(_ int, b gjson.Result) { part(strOf(b.Get("type")), b) })
	case KindBedrockConverse:
		// A Converse block is named by its one member.
		each(turn.Get("content"), func(_ int, b gjson.Result) {
			b.ForEach(func(k, v gjson.Result) bool {
				switch k.Str {
				case "text":
					text.add(strOf(v))
				case "reasoningContent":
					reasoning.add(strOf(v.Get("reasoningText.text")))
				case "toolUse", "toolResult", "cachePoint":
				default:
					m.Other = append(m.Other, k.Str)
				}
				return true
			})
		})
	case KindGemini:
		each(turn.Get("parts"), func(_ int, p gjson.Result) {
			switch {
			case p.Get("text").Exists() && p.Get("thought").Type == gjson.True:
				reasoning.add(strOf(p.Get("text")))
			case p.Get("text").Exists():
				text.add(strOf(p.Get("text")))
			default:
				p.ForEach(func(k, _ gjson.Result) bool {
					switch k.Str {
					case "functionCall", "function_call", "functionResponse", "function_response", "thoughtSignature", "thought_signature":
					default:
						m.Other = append(m.Other, k.Str)
					}
					return true
				})
			}
		})
	}
	m.Text, m.Reasoning = text.String(), reasoning.String()
}

// embeddingsInput is the text of an embeddings input: a string, or strings
// one per line; token arrays are not text.
func embeddingsInput(in gjson.Result) string {
	if in.Type == gjson.String {
		return in.Str
	}
	var t texts
	each(in, func(_ int, v gjson.Result) { t.add(strOf(v)) })
	return t.String()
}

// texts joins the non-empty pieces of text of a message with "\n".
type texts []string

func (t *texts) add(s string) {
	if s != "" {
		*t = append(*t, s)
	}
}

func (t texts) String() string { return strings.Join(t, "\n") }
