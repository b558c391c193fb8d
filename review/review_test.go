package review_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/review"
	"github.com/llmproxy/llmproxy/wire"
)

// exchange is one recorded request and the answer wire writes for it, as
// its provider sends it (streamed when the request asks).
type exchange struct {
	kind   wire.Kind
	path   string
	body   string
	answer wire.Answer
}

// writeExchanges writes the exchanges as a cassette's interactions.
func writeExchanges(t *testing.T, path string, xs ...exchange) *cassette.Cassette {
	t.Helper()
	x, err := cassette.DefaultIndexer()
	if err != nil {
		t.Fatal(err)
	}
	c, err := cassette.Open(path, cassette.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetIndexRules(x.Fingerprint()); err != nil {
		t.Fatal(err)
	}
	for n, e := range xs {
		opts, err := wire.OptionsFor(e.kind, e.path, []byte(e.body))
		if err != nil {
			t.Fatal(err)
		}
		w, err := wire.Write(e.kind, e.answer, opts)
		if err != nil {
			t.Fatal(err)
		}
		i := &cassette.Interaction{Upstream: "x", Provider: "x", Kind: string(e.kind),
			RecordedAt: time.Date(2026, 1, 2, 3, 4, n, 0, time.UTC),
			Request:    cassette.Request{Method: "POST", Path: e.path, Body: cassette.Body(e.body)},
			Response:   cassette.Response{Status: w.Status, Headers: w.Header, Body: cassette.Body(w.Body)},
		}
		if ct, _, _ := strings.Cut(w.Header.Get("Content-Type"), ";"); w.Streamed() {
			i.Response.Framing = map[string]string{"text/event-stream": "sse", "application/x-ndjson": "ndjson"}[ct]
			for _, ev := range w.Events {
				i.Response.Events = append(i.Response.Events, cassette.Event{Data: cassette.Body(ev.Raw)})
			}
		}
		key, shape, err := x.Keys(i)
		if err != nil {
			t.Fatal(err)
		}
		if res, err := c.AppendAll([]cassette.Keyed{{Interaction: i, Key: key, Shape: shape}}); err != nil || res[0].Err != nil {
			t.Fatal(err, res)
		}
	}
	c.Close()
	c, err = cassette.Open(path, cassette.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// anthropicRound is a streamed Anthropic tool round: the model says
// something, calls weather with id, then answers final.
func anthropicRound(say, id, args, final string) []exchange {
	q := `{"role":"user","content":"Weather in Paris?"}`
	tools := `"tools":[{"name":"weather","input_schema":{"type":"object"}}]`
	first := exchange{wire.KindAnthropicMessages, "/v1/messages",
		`{"model":"claude","max_tokens":99,"stream":true,` + tools + `,"messages":[` + q + `]}`,
		wire.Answer{ID: "msg_1", Model: "claude", Text: say, ToolCalls: []wire.ToolCall{{ID: id, Name: "weather", Arguments: []byte(args)}}, Finish: wire.FinishToolCalls}}
	echo := fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":%q},{"type":"tool_use","id":%q,"name":"weather","input":%s}]}`, say, id, args)
	result := fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":"21 C"}]}`, id)
	second := exchange{wire.KindAnthropicMessages, "/v1/messages",
		`{"model":"claude","max_tokens":99,"stream":true,` + tools + `,"messages":[` + q + `,` + echo + `,` + result + `]}`,
		wire.Answer{ID: "msg_2", Model: "claude", Text: final, Finish: wire.FinishStop}}
	return []exchange{first, second}
}

// responsesChain is a Responses tool round chained by
// previous_response_id: the answer ids and call id are the recording's.
func responsesChain(respID, callID, final string) []exchange {
	first := exchange{wire.KindOpenAIResponses, "/v1/responses", `{"model":"gpt","input":"Weather in Rome?"}`,
		wire.Answer{ID: respID + "a", Model: "gpt", ToolCalls: []wire.ToolCall{{ID: callID, Name: "weather", Arguments: []byte(`{"city":"Rome"}`)}}, Finish: wire.FinishToolCalls}}
	second := exchange{wire.KindOpenAIResponses, "/v1/responses",
		fmt.Sprintf(`{"model":"gpt","previous_response_id":%q,"input":[{"type":"function_call_output","call_id":%q,"output":"25 C"}]}`, respID+"a", callID),
		wire.Answer{ID: respID + "b", Model: "gpt", Text: final, Finish: wire.FinishStop}}
	return []exchange{first, second}
}

// geminiCall is a Gemini answer calling weather with args.
func geminiCall(args string) exchange {
	return exchange{wire.KindGemini, "/v1beta/models/gemini-2.5-flash:generateContent",
		`{"contents":[{"role":"user","parts":[{"text":"Weather in Oslo?"}]}],"tools":[{"functionDeclarations":[{"name":"weather"}]}]}`,
		wire.Answer{Model: "gemini", ToolCalls: []wire.ToolCall{{Name: "weather", Arguments: []byte(args)}}, Finish: wire.FinishToolCalls}}
}

// TestReviewOtherWires: on the Anthropic stream, the Responses chain and
// Gemini, what a re-record changes in ids and echoed wording is not a
// request-side change; a reworded answer is wording, changed arguments
// behaviour.
func TestReviewOtherWires(t *testing.T) {
	old := append(append(anthropicRound("Let me check.", "toolu_1", `{"city":"Paris"}`, "Sunny."),
		responsesChain("resp_old", "call_1", "Warm.")...), geminiCall(`{"city":"Oslo"}`))
	cur := append(append(anthropicRound("Checking now.", "toolu_9", `{ "city": "Paris" }`, "Sunny!"),
		responsesChain("resp_new", "call_7", "Warm.")...), geminiCall(`{"city":"Oslo","unit":"C"}`))
	r, got := differenceLines(t, old, cur)
	want := []string{
		"Weather in Paris? 1 wording response.text",
		"Weather in Paris? 2 wording response.text",
		"Weather in Oslo? 1 behaviour response.tool_calls.0.arguments.unit",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("differences:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	s := r.Summary()
	if s.Conversations != (review.Counts{Identical: 1, Wording: 1, Behaviour: 1}) || s.Turns.Total() != 5 {
		t.Errorf("summary %+v", s)
	}
	if !s.Fails(review.GateBehaviour) || !s.Fails(review.GateWording) || !s.Fails(review.GateAny) {
		t.Errorf("gates do not fail on %+v", s)
	}
}

// TestReviewPairing: a conversation whose prompt changed pairs with the
// one of the same setup (a request-side change); one whose setup changed
// too is added and the old one removed; a turn more is behaviour.
func TestReviewPairing(t *testing.T) {
	chat := func(system, prompt, text string) exchange {
		return exchange{wire.KindOpenAIChat, "/v1/chat/completions",
			fmt.Sprintf(`{"model":"m","messages":[{"role":"system","content":%q},{"role":"user","content":%q}]}`, system, prompt),
			wire.Answer{Text: text, Finish: wire.FinishStop}}
	}
	dir := t.TempDir()
	old := writeExchanges(t, filepath.Join(dir, "old.cassette"),
		chat("A", "first", "1"), chat("A", "second", "2"), chat("B", "third", "3"), chat("A", "first", "1"))
	cur := writeExchanges(t, filepath.Join(dir, "new.cassette"),
		chat("A", "first", "1"), chat("A", "second, reworded", "2"), chat("C", "third, reworded", "3"))
	r, err := review.New(context.Background(), old, cur)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	r.Each(func(c review.Conversation) error {
		got = append(got, fmt.Sprintf("%d→%d %s", c.Old, c.New, c.Class))
		return nil
	})
	want := "2→2 request, 0→3 added, 3→0 removed, 4→0 removed"
	if strings.Join(got, ", ") != want {
		t.Errorf("pairs %s, want %s", strings.Join(got, ", "), want)
	}
	if s := r.Summary(); s.Fails(review.GateBehaviour) || s.Fails(review.GateWording) || !s.Fails(review.GateAny) {
		t.Errorf("gates on %+v", s)
	}
}

// TestReviewIdentical: a cassette against itself has no difference and
// lists no conversation.
func TestReviewIdentical(t *testing.T) {
	c := writeExchanges(t, filepath.Join(t.TempDir(), "c.cassette"), anthropicRound("Hm.", "toolu_1", `{}`, "Done.")...)
	r, err := review.New(context.Background(), c, c)
	if err != nil {
		t.Fatal(err)
	}
	if s := r.Summary(); !s.Identical() || s.Fails(review.GateAny) || s.Turns.Identical != 2 {
		t.Errorf("summary %+v", s)
	}
	r.Each(func(c review.Conversation) error {
		t.Errorf("listed %+v", c)
		return nil
	})
}

// TestWriteHostile: recorded text cannot break out of the text lines, the
// Markdown code block or the <summary> element.
func TestWriteHostile(t *testing.T) {
	hostile := "</summary></details><script>x</script>\n```\n\x1b[31m"
	chat := func(prompt, text, args string) exchange {
		return exchange{wire.KindOpenAIChat, "/v1/chat/completions",
			fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":%s}]}`, jsonString(prompt)),
			wire.Answer{Text: text, ToolCalls: []wire.ToolCall{{ID: "c", Name: "f", Arguments: []byte(args)}}, Finish: wire.FinishToolCalls}}
	}
	dir := t.TempDir()
	old := writeExchanges(t, filepath.Join(dir, "old.cassette"), chat(hostile, "a", `{"x":1}`))
	cur := writeExchanges(t, filepath.Join(dir, "new.cassette"), chat(hostile, hostile, `{"x":2}`))
	r, err := review.New(context.Background(), old, cur)
	if err != nil {
		t.Fatal(err)
	}
	var md, text strings.Builder
	if err := r.Write(&md, review.FormatMarkdown, "old", "new"); err != nil {
		t.Fatal(err)
	}
	if err := r.Write(&text, review.FormatText, "old", "new"); err != nil {
		t.Fatal(err)
	}
	// Outside its code blocks (where GitHub shows HTML as text) the
	// Markdown holds no recorded markup; nothing holds a raw escape.
	outside := regexp.MustCompile("(?s)\n````text\n.*?\n````\n").ReplaceAllString(md.String(), "")
	for _, bad := range []string{"<script>", "</summary></details>"} {
		if strings.Contains(outside, bad) {
			t.Errorf("Markdown holds %q outside a code block:\n%s", bad, md.String())
		}
	}
	if strings.Contains(md.String()+text.String(), "\x1b") {
		t.Errorf("output holds a raw escape:\n%s\n%s", md.String(), text.String())
	}
	if !strings.Contains(md.String(), "\n````text\n") {
		t.Errorf("the code block's fence is not longer than the recorded one:\n%s", md.String())
	}
	if n := strings.Count(text.String(), "\n"); n != 9 {
		t.Errorf("text output has %d lines, want 9:\n%s", n, text.String())
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// novaRound is a Bedrock InvokeModel tool round with Nova bodies: the
// model calls weather with id, then answers final.
func novaRound(id, args, final string) []exchange {
	const path = "/model/us.amazon.nova-lite-v1%3A0/invoke"
	q := `{"role":"user","content":[{"text":"Weather in Lima?"}]}`
	tools := `"toolConfig":{"tools":[{"toolSpec":{"name":"weather","inputSchema":{"json":{"type":"object"}}}}]}`
	first := exchange{wire.KindBedrockInvoke, path, `{"schemaVersion":"messages-v1",` + tools + `,"messages":[` + q + `]}`,
		wire.Answer{ID: "n1", ToolCalls: []wire.ToolCall{{ID: id, Name: "weather", Arguments: []byte(args)}}, Finish: wire.FinishToolCalls}}
	echo := fmt.Sprintf(`{"role":"assistant","content":[{"toolUse":{"toolUseId":%q,"name":"weather","input":%s}}]}`, id, args)
	result := fmt.Sprintf(`{"role":"user","content":[{"toolResult":{"toolUseId":%q,"content":[{"text":"18 C"}]}}]}`, id)
	second := exchange{wire.KindBedrockInvoke, path, `{"schemaVersion":"messages-v1",` + tools + `,"messages":[` + q + `,` + echo + `,` + result + `]}`,
		wire.Answer{ID: "n2", Text: final, Finish: wire.FinishStop}}
	return []exchange{first, second}
}

// TestReviewBedrockInvoke: InvokeModel conversations are reviewed like the
// other chat wires: a Nova round re-recorded with another call id and the
// same arguments is identical but for a reworded answer, a Titan prompt's
// reworded text is wording.
func TestReviewBedrockInvoke(t *testing.T) {
	titan := func(text string) exchange {
		return exchange{wire.KindBedrockInvoke, "/model/amazon.titan-text-express-v1/invoke", `{"inputText":"User: Weather in Quito?\nBot:"}`, wire.Answer{Text: text}}
	}
	old := append(novaRound("tooluse_1", `{"city":"Lima"}`, "Mild."), titan("Cool and cloudy."))
	cur := append(novaRound("tooluse_9", `{"city":"Lima"}`, "Mild!"), titan("Cloudy and cool."))
	_, got := differenceLines(t, old, cur)
	want := []string{
		"Weather in Lima? 2 wording response.text",
		"User: Weather in Quito? Bot: 1 wording response.text",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("differences:\n%q\nwant\n%q", got, want)
	}
}

// differenceLines reviews the cassettes written from old and cur and
// returns the review and each difference as "title turn class path", in
// review order.
func differenceLines(t *testing.T, old, cur []exchange) (*review.Review, []string) {
	t.Helper()
	dir := t.TempDir()
	r, err := review.New(context.Background(), writeExchanges(t, filepath.Join(dir, "old.cassette"), old...),
		writeExchanges(t, filepath.Join(dir, "new.cassette"), cur...))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	err = r.Each(func(c review.Conversation) error {
		for _, tn := range c.Turns {
			for _, d := range tn.Differences {
				got = append(got, fmt.Sprintf("%s %d %s %s", c.Title, tn.Turn, d.Class, d.Path))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return r, got
}
