package wire_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmproxy/llmproxy/wire"
)

const invokeAnthropicBody = `{"anthropic_version":"bedrock-2023-05-31","max_tokens":256,"messages":[{"role":"user","content":"Weather in Paris?"}]}`

// TestWriteInvoke: InvokeModel answers for an Anthropic model, whole and
// streamed, read back by the reader of the bedrock-invoke wire as the
// answer written; the stream is chunk messages whose base64 bytes are
// unpadded Anthropic events, no ping, and message_stop with Bedrock's
// invocation metrics.
func TestWriteInvoke(t *testing.T) {
	answers := map[string]wire.Answer{
		"text": {ID: "msg_bdrk_01", Model: "claude-3-5-haiku-20241022", Text: "Paris is sunny.", Usage: wire.Usage{Input: 12, Output: 5}},
		"tool call": {ID: "msg_bdrk_02", Model: "claude-3-5-haiku-20241022", Usage: wire.Usage{Input: 380, Output: 55},
			ToolCalls: []wire.ToolCall{{ID: "toolu_bdrk_01", Name: "weather", Arguments: json.RawMessage(`{"location": "Paris", "unit": "celsius"}`)}}},
		"reasoning, text and a call": {ID: "msg_bdrk_03", Model: "claude-sonnet-4", Reasoning: "They want Paris.", Text: "Let me look.", Usage: wire.Usage{Input: 7, Output: 30},
			ToolCalls: []wire.ToolCall{{ID: "toolu_bdrk_02", Name: "weather", Arguments: json.RawMessage(`{"location":"Paris"}`)}}},
	}
	for name, a := range answers {
		for _, stream := range []bool{false, true} {
			path := "/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/invoke"
			if stream {
				path += "-with-response-stream"
			}
			o, err := wire.OptionsFor(wire.KindBedrockInvoke, path, []byte(invokeAnthropicBody))
			if err != nil || o.Stream != stream {
				t.Fatalf("OptionsFor(%s) = %+v, %v", path, o, err)
			}
			w, err := wire.Write(wire.KindBedrockInvoke, a, o)
			if err != nil {
				t.Fatalf("%s (stream %v): %v", name, stream, err)
			}
			framing := wire.FramingNone
			if stream {
				framing = wire.FramingEventStream
				checkInvokeChunks(t, name, w, a)
			} else if got := w.Header.Get("Content-Type"); got != "application/json" || w.Header.Get("X-Amzn-Requestid") == "" {
				t.Errorf("%s: headers %v", name, w.Header)
			}
			r, err := wire.ParseResponse(wire.KindBedrockInvoke, framing, w.Bytes())
			if err != nil {
				t.Fatalf("%s (stream %v): read back: %v", name, stream, err)
			}
			if r.Text != a.Text || r.Reasoning != a.Reasoning || len(r.ToolCalls) != len(a.ToolCalls) || r.Usage.Input != a.Usage.Input || r.Usage.Output != a.Usage.Output {
				t.Errorf("%s (stream %v): read back %+v, want %+v", name, stream, r, a)
			}
			for i, c := range r.ToolCalls {
				if c.ID != a.ToolCalls[i].ID || c.Name != a.ToolCalls[i].Name || !jsonEqual(c.Arguments, a.ToolCalls[i].Arguments) {
					t.Errorf("%s (stream %v): call %d %+v, want %+v", name, stream, i, c, a.ToolCalls[i])
				}
			}
			want := wire.FinishStop
			if len(a.ToolCalls) > 0 {
				want = wire.FinishToolCalls
			}
			if r.Finish != want {
				t.Errorf("%s (stream %v): finish %q, want %q", name, stream, r.Finish, want)
			}
		}
	}
}

// checkInvokeChunks checks the stream's messages as Bedrock frames them.
func checkInvokeChunks(t *testing.T, name string, w wire.Written, a wire.Answer) {
	t.Helper()
	if w.Header.Get("Content-Type") != "application/vnd.amazon.eventstream" {
		t.Errorf("%s: Content-Type %q", name, w.Header.Get("Content-Type"))
	}
	var types []string
	for i, ev := range w.Events {
		m, err := wire.DecodeEventStream(ev.Raw)
		if err != nil || m.Header(":event-type") != "chunk" || m.Header(":message-type") != "event" {
			t.Fatalf("%s: message %d: %+v, %v", name, i, m, err)
		}
		b, err := base64.StdEncoding.DecodeString(gjson.GetBytes(m.Payload, "bytes").Str)
		if err != nil || !json.Valid(b) {
			t.Fatalf("%s: message %d: bytes %q, %v", name, i, b, err)
		}
		if strings.Contains(string(b), " }") {
			t.Errorf("%s: message %d: %s is padded", name, i, b)
		}
		types = append(types, gjson.GetBytes(b, "type").Str)
		if gjson.GetBytes(b, "type").Str == "message_stop" {
			if in := gjson.GetBytes(b, `amazon-bedrock-invocationMetrics.inputTokenCount`).Int(); in != int64(a.Usage.Input) {
				t.Errorf("%s: message_stop %s, want the invocation metrics", name, b)
			}
		}
	}
	all := strings.Join(types, " ")
	if !strings.HasPrefix(all, "message_start content_block_start") || !strings.HasSuffix(all, "message_delta message_stop") || strings.Contains(all, "ping") {
		t.Errorf("%s: events %s", name, all)
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

// InvokeModel bodies of no known model family are not written, with an
// error naming the families; Titan and Llama bodies get no tool calls; the
// stream ends with an exception message as ConverseStream's does.
func TestWriteInvokeRefusals(t *testing.T) {
	for _, body := range []string{`{"foo":"hi"}`, `{}`} {
		if err := wire.Answerable(wire.KindBedrockInvoke, []byte(body)); !errors.Is(err, wire.ErrUnsupported) || !strings.Contains(err.Error(), "anthropic_version") || !strings.Contains(err.Error(), "inputText") {
			t.Errorf("Answerable(%s) = %v, want ErrUnsupported naming the families", body, err)
		}
		if _, err := wire.Write(wire.KindBedrockInvoke, wire.Answer{Text: "hi"}, wire.WriteOptions{Request: []byte(body)}); !errors.Is(err, wire.ErrUnsupported) {
			t.Errorf("Write for %s = %v, want ErrUnsupported", body, err)
		}
	}
	call := wire.Answer{ToolCalls: []wire.ToolCall{{ID: "c1", Name: "weather", Arguments: json.RawMessage(`{}`)}}}
	for _, body := range []string{`{"inputText":"hi"}`, `{"prompt":"hi","max_gen_len":64}`} {
		if err := wire.Answerable(wire.KindBedrockInvoke, []byte(body)); err != nil {
			t.Errorf("Answerable(%s) = %v", body, err)
		}
		if _, err := wire.Write(wire.KindBedrockInvoke, call, wire.WriteOptions{Request: []byte(body)}); !errors.Is(err, wire.ErrUnsupported) || !strings.Contains(err.Error(), "no tool calls") {
			t.Errorf("Write of a call for %s = %v, want ErrUnsupported", body, err)
		}
	}
	if err := wire.Answerable(wire.KindBedrockInvoke, []byte(invokeAnthropicBody)); err != nil {
		t.Errorf("Answerable(an Anthropic body) = %v", err)
	}
	if !wire.KindBedrockInvoke.CallsTools() || wire.KindEmbeddings.CallsTools() {
		t.Error("CallsTools: want bedrock-invoke a chat kind and embeddings not")
	}
	ev, err := wire.StreamError(wire.KindBedrockInvoke, wire.WriteOptions{Stream: true}, wire.ErrorAnswer{Status: 429, Message: "slow down"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := wire.Write(wire.KindBedrockInvoke, wire.Answer{ID: "x", Text: "Hi there"}, wire.WriteOptions{Stream: true})
	r, err := wire.ParseResponse(wire.KindBedrockInvoke, wire.FramingEventStream, append(w.Events[0].Raw, ev.Raw...))
	if err != nil || r.Error != "throttlingException: slow down" {
		t.Errorf("read back error %q, %v", r.Error, err)
	}
}

// TestWriteInvokeModels: InvokeModel answers for Nova, Titan and Llama
// request bodies, whole and streamed, are each model's own shape and read
// back as the answer written (Nova with its tool call; Titan and Llama
// text only).
func TestWriteInvokeModels(t *testing.T) {
	text := wire.Answer{ID: "a1", Text: "Paris is sunny today.", Usage: wire.Usage{Input: 12, Output: 5}}
	call := wire.Answer{ID: "a2", Text: "Looking.", Usage: wire.Usage{Input: 30, Output: 9},
		ToolCalls: []wire.ToolCall{{ID: "tooluse_nova01", Name: "weather", Arguments: json.RawMessage(`{"location":"Paris"}`)}}}
	for _, tc := range []struct {
		name, body, whole, chunk string // chunk: a member every stream chunk has
		a                        wire.Answer
	}{
		{"nova text", `{"schemaVersion":"messages-v1","messages":[{"role":"user","content":[{"text":"hi"}]}]}`, "output.message.content.0.text", "", text},
		{"nova call", `{"messages":[{"role":"user","content":[{"text":"hi"}]}],"toolConfig":{"tools":[{"toolSpec":{"name":"weather"}}]}}`, "output.message.content.1.toolUse.toolUseId", "", call},
		{"titan", `{"inputText":"User: hi\nBot:","textGenerationConfig":{"maxTokenCount":64}}`, "results.0.outputText", "outputText", text},
		{"llama", `{"prompt":"hi","max_gen_len":64}`, "generation", "generation", text},
	} {
		for _, stream := range []bool{false, true} {
			o := wire.WriteOptions{Stream: stream, Request: []byte(tc.body)}
			w, err := wire.Write(wire.KindBedrockInvoke, tc.a, o)
			if err != nil {
				t.Fatalf("%s (stream %v): %v", tc.name, stream, err)
			}
			framing := wire.FramingNone
			if stream {
				framing = wire.FramingEventStream
				for i, ev := range w.Events {
					m, err := wire.DecodeEventStream(ev.Raw)
					if err != nil || m.Header(":event-type") != "chunk" {
						t.Fatalf("%s: message %d: %v %v", tc.name, i, err, m.Headers)
					}
					dec, err := base64.StdEncoding.DecodeString(gjson.GetBytes(m.Payload, "bytes").Str)
					if err != nil || !gjson.ValidBytes(dec) || (tc.chunk != "" && !gjson.GetBytes(dec, tc.chunk).Exists()) {
						t.Errorf("%s: chunk %d bytes %s (%v)", tc.name, i, dec, err)
					}
					if i == len(w.Events)-1 && !gjson.GetBytes(dec, "amazon-bedrock-invocationMetrics").Exists() {
						t.Errorf("%s: the last chunk %s has no invocation metrics", tc.name, dec)
					}
				}
			} else if !gjson.GetBytes(w.Body, tc.whole).Exists() {
				t.Errorf("%s: whole body %s has no %s", tc.name, w.Body, tc.whole)
			}
			r, err := wire.ParseResponse(wire.KindBedrockInvoke, framing, w.Bytes())
			if err != nil {
				t.Fatalf("%s (stream %v): read back: %v", tc.name, stream, err)
			}
			if r.Text != tc.a.Text || len(r.ToolCalls) != len(tc.a.ToolCalls) || r.Usage.Input != tc.a.Usage.Input || r.Usage.Output != tc.a.Usage.Output {
				t.Errorf("%s (stream %v): read back %+v, want %+v", tc.name, stream, r, tc.a)
			}
			for i, c := range r.ToolCalls {
				if c.ID != tc.a.ToolCalls[i].ID || c.Name != tc.a.ToolCalls[i].Name || !jsonEqual(c.Arguments, tc.a.ToolCalls[i].Arguments) {
					t.Errorf("%s (stream %v): call %+v", tc.name, stream, c)
				}
			}
			wantFinish := wire.FinishStop
			if len(tc.a.ToolCalls) > 0 {
				wantFinish = wire.FinishToolCalls
			}
			if r.Finish != wantFinish {
				t.Errorf("%s (stream %v): finish %q (stop %q), want %q", tc.name, stream, r.Finish, r.Stop, wantFinish)
			}
		}
	}
}
