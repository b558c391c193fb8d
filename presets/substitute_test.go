package presets_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/presets"
	"github.com/llmproxy/llmproxy/wire"
)

// jsonString is s as a JSON string literal.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// chatCall is an OpenAI chat completion whose message calls one tool.
func chatCall(id, name, args string) []byte {
	return fmt.Appendf(nil, `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":%q,"type":"function","function":{"name":%q,"arguments":%s}}]},"finish_reason":"tool_calls"}]}`,
		id, name, jsonString(args))
}

// chatAnswer is an OpenAI chat completion with a text answer.
func chatAnswer(text string) []byte {
	return fmt.Appendf(nil, `{"id":"chatcmpl-2","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}]}`, text)
}

// chatRequest is a request: the prompt, then for each call its echo and its
// result content (raw JSON).
func chatRequest(prompt string, rounds ...[4]string) []byte {
	msgs := []string{fmt.Sprintf(`{"role":"user","content":%q}`, prompt)}
	for _, r := range rounds {
		id, name, args, content := r[0], r[1], r[2], r[3]
		msgs = append(msgs,
			fmt.Sprintf(`{"role":"assistant","tool_calls":[{"id":%q,"type":"function","function":{"name":%q,"arguments":%s}}]}`, id, name, jsonString(args)),
			fmt.Sprintf(`{"role":"tool","tool_call_id":%q,"content":%s}`, id, content))
	}
	return []byte(`{"model":"gpt-4o-mini","messages":[` + strings.Join(msgs, ",") + `]}`)
}

func chatExchange(id uint64, req, resp []byte) presets.Exchange {
	return presets.Exchange{ID: id, Kind: wire.KindOpenAIChat, Path: "/v1/chat/completions", Request: req, Status: 200, Response: resp}
}

// anthropicCall is a Messages response calling one tool.
func anthropicCall(id, name, input string) []byte {
	return fmt.Appendf(nil, `{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"tool_use","id":%q,"name":%q,"input":%s}],"stop_reason":"tool_use"}`, id, name, input)
}

// anthropicResult is a Messages request answering one call.
func anthropicResult(id, name, input, content string, isError bool) []byte {
	return fmt.Appendf(nil, `{"model":"claude-sonnet-4-6","messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"tool_use","id":%q,"name":%q,"input":%s}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":%s,"is_error":%t}]}]}`,
		id, name, input, id, content, isError)
}

func anthropicExchange(id uint64, req, resp []byte) presets.Exchange {
	return presets.Exchange{ID: id, Kind: wire.KindAnthropicMessages, Path: "/v1/messages", Request: req, Status: 200, Response: resp}
}

const (
	parisArgs    = `{"location":"Paris","unit":"celsius"}`
	parisWeather = `{"location": "Paris", "temperature": 21, "unit": "celsius", "condition": "sunny"}`
	parisCanon   = `{"condition":"sunny","location":"Paris","temperature":21,"unit":"celsius"}`
	failure      = `{"error":{"code":"unavailable","message":"weather service down","retryable":true}}`
)

// TestSubstituteOneCall runs one recorded round per case: substituted, or
// left alone with the part, path and reason reported.
func TestSubstituteOneCall(t *testing.T) {
	type want struct {
		newID, content string
		isError        bool
		part, path     string // of a Skip
		reason         string
	}
	chat := func(args, content string) []presets.Exchange {
		return []presets.Exchange{
			chatExchange(1, chatRequest("q"), chatCall("call_x1", "weather", args)),
			chatExchange(2, chatRequest("q", [4]string{"call_x1", "weather", args, content}), chatAnswer("done")),
		}
	}
	cases := []struct {
		name string
		xs   []presets.Exchange
		want want
	}{
		{"success", chat(parisArgs, jsonString(parisWeather)), want{newID: "call_weather", content: parisCanon}},
		{"error envelope", chat(parisArgs, jsonString(failure)), want{newID: "call_weather", isError: true,
			content: `{"error":{"code":"unavailable","message":"weather service down","retryable":true}}`}},
		{"arguments break the schema", chat(`{"location":"Paris","unit":"kelvin"}`, jsonString(parisWeather)),
			want{part: "arguments", path: "/unit", reason: `must be one of "celsius", "fahrenheit", got "kelvin" (enum)`}},
		{"arguments not JSON", chat(`{"location":`, jsonString(parisWeather)),
			want{part: "arguments", reason: "invalid JSON"}},
		{"result breaks the schema", chat(parisArgs, jsonString(`{"temp":21}`)),
			want{part: "result", path: "/condition", reason: "missing required property (required)"}},
		{"result not JSON", chat(parisArgs, jsonString("11 degrees celsius")),
			want{part: "result", path: "messages.2.content", reason: "the tool output is not JSON: 11 degrees celsius"}},
		{"no result", chat(parisArgs, jsonString(parisWeather))[:1],
			want{part: "result", reason: "no later request in the cassette answers it"}},
		{"anthropic text block", []presets.Exchange{
			anthropicExchange(1, []byte(`{"model":"m","messages":[{"role":"user","content":"q"}]}`), anthropicCall("toolu_1", "weather", parisArgs)),
			anthropicExchange(2, anthropicResult("toolu_1", "weather", parisArgs, `[{"type":"text","text":`+jsonString(parisWeather)+`}]`, false), []byte(`{"type":"message","content":[]}`)),
		}, want{newID: "call_weather", content: parisCanon}},
		{"anthropic is_error without the envelope", []presets.Exchange{
			anthropicExchange(1, []byte(`{"model":"m","messages":[{"role":"user","content":"q"}]}`), anthropicCall("toolu_1", "weather", parisArgs)),
			anthropicExchange(2, anthropicResult("toolu_1", "weather", parisArgs, jsonString(`{"message":"down"}`), true), []byte(`{"type":"message","content":[]}`)),
		}, want{part: "error", path: "/error", reason: "missing required property"}},
		{"anthropic two text blocks", []presets.Exchange{
			anthropicExchange(1, []byte(`{"model":"m","messages":[{"role":"user","content":"q"}]}`), anthropicCall("toolu_1", "weather", parisArgs)),
			anthropicExchange(2, anthropicResult("toolu_1", "weather", parisArgs, `[{"type":"text","text":"{"},{"type":"text","text":"}"}]`, false), []byte(`{"type":"message","content":[]}`)),
		}, want{part: "result", path: "messages.2.content.0.content", reason: "only one text block can become a fixture"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var s presets.Substituter
			res, err := s.Substitute(tc.xs)
			if err != nil {
				t.Fatal(err)
			}
			r := res.Report
			if tc.want.newID == "" {
				if len(r.Substituted) != 0 || len(r.Skipped) != 1 {
					t.Fatalf("report %+v, want one skip", r)
				}
				sk := r.Skipped[0]
				if sk.Interaction != 1 || sk.CallID != firstCallID(t, tc.xs[0]) || sk.Part != tc.want.part || sk.Path != tc.want.path || !strings.Contains(sk.Reason, tc.want.reason) {
					t.Errorf("skip %+v, want interaction 1, part %q, path %q, reason containing %q", sk, tc.want.part, tc.want.path, tc.want.reason)
				}
				for i, x := range res.Exchanges {
					if !bytes.Equal(x.Request, tc.xs[i].Request) || !bytes.Equal(x.Response, tc.xs[i].Response) {
						t.Errorf("exchange %d changed although its call was left alone", x.ID)
					}
				}
				if len(res.Fixtures) != 0 {
					t.Errorf("fixtures %v, want none", res.Fixtures)
				}
				return
			}
			if len(r.Skipped) != 0 || len(r.Substituted) != 1 {
				t.Fatalf("report %+v, want one substitution", r)
			}
			if s := r.Substituted[0]; s.NewID != tc.want.newID || s.IsError != tc.want.isError || s.Interaction != 1 || s.ResultFrom != 2 {
				t.Errorf("substituted %+v, want id %s, isError %t, from 1 answered in 2", s, tc.want.newID, tc.want.isError)
			}
			f, err := presets.ParseCassetteFixture(tc.want.newID, res.Fixtures[tc.want.newID])
			if err != nil {
				t.Fatal(err)
			}
			if string(f.Result.Content) != tc.want.content || f.Result.IsError != tc.want.isError {
				t.Errorf("fixture result %s (isError %t), want %s", f.Result.Content, f.Result.IsError, tc.want.content)
			}
			// The request now carries the fixture's canonical JSON, under the new id.
			req, err := wire.ParseRequest(tc.xs[1].Kind, tc.xs[1].Path, res.Exchanges[1].Request)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.CheckResult(tc.xs[1].Kind, req.ToolResults[0]); err != nil || req.ToolResults[0].CallID != tc.want.newID {
				t.Errorf("rewritten result %s for %s: %v", req.ToolResults[0].Content, req.ToolResults[0].CallID, err)
			}
			resp, _ := wire.ParseResponse(tc.xs[0].Kind, wire.FramingNone, res.Exchanges[0].Response)
			if resp.ToolCalls[0].ID != tc.want.newID {
				t.Errorf("response call id %q, want %q", resp.ToolCalls[0].ID, tc.want.newID)
			}
		})
	}
}

// firstCallID is the id of the first tool call an exchange's response makes.
func firstCallID(t *testing.T, x presets.Exchange) string {
	t.Helper()
	resp, err := wire.ParseResponse(x.Kind, x.Framing, x.Response)
	if err != nil || len(resp.ToolCalls) == 0 {
		t.Fatalf("exchange %d: no tool call: %v", x.ID, err)
	}
	return resp.ToolCalls[0].ID
}

// ollamaCallLines is an Ollama NDJSON stream calling weather for location,
// with no call id, as Ollama sends it.
func ollamaCallLines(location string) [][]byte {
	return [][]byte{
		fmt.Appendf(nil, `{"model":"llama3.2","created_at":"2025-07-07T20:22:19Z","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"weather","arguments":{"location":%q}}}]},"done":false}`+"\n", location),
		[]byte(`{"model":"llama3.2","created_at":"2025-07-07T20:22:20Z","message":{"role":"assistant","content":""},"done_reason":"stop","done":true}` + "\n"),
	}
}

// ollamaRequest is an Ollama chat request: the prompt, then each location
// called and answered, id-less.
func ollamaRequest(prompt string, locations ...string) []byte {
	msgs := []string{fmt.Sprintf(`{"role":"user","content":%q}`, prompt)}
	for _, loc := range locations {
		msgs = append(msgs,
			fmt.Sprintf(`{"role":"assistant","content":"","tool_calls":[{"function":{"name":"weather","arguments":{"location":%q}}}]}`, loc),
			fmt.Sprintf(`{"role":"tool","tool_name":"weather","content":%s}`, jsonString(fmt.Sprintf(`{"location":%q,"temperature":20,"unit":"celsius","condition":"clear"}`, loc))))
	}
	return []byte(`{"model":"llama3.2","messages":[` + strings.Join(msgs, ",") + `]}`)
}

func ollamaExchange(id uint64, req []byte, events [][]byte) presets.Exchange {
	return presets.Exchange{ID: id, Kind: wire.KindOllama, Path: "/api/chat", Request: req, Status: 200, Framing: wire.FramingNDJSON, Events: events}
}

// TestSubstituteIDlessConversations: two Ollama conversations, recorded
// interleaved, call weather without ids. Each call is linked to its answer
// through its own conversation, numbered in cassette order, and given its
// id in the stream that made it and in every later request that echoes it;
// the tool messages keep answering by tool_name, as the client sent them.
func TestSubstituteIDlessConversations(t *testing.T) {
	final := [][]byte{[]byte(`{"model":"llama3.2","message":{"role":"assistant","content":"done"},"done":true}` + "\n")}
	xs := []presets.Exchange{
		ollamaExchange(1, ollamaRequest("A"), ollamaCallLines("Paris")),
		ollamaExchange(2, ollamaRequest("B"), ollamaCallLines("Rome")),
		ollamaExchange(3, ollamaRequest("A", "Paris"), ollamaCallLines("Lyon")),
		ollamaExchange(4, ollamaRequest("B", "Rome"), final),
		ollamaExchange(5, ollamaRequest("A", "Paris", "Lyon"), final),
	}
	var s presets.Substituter
	res, err := s.Substitute(xs)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Report.Skipped) != 0 {
		t.Fatalf("skipped: %v", res.Report.Skipped)
	}
	got := map[string]string{}
	for _, sub := range res.Report.Substituted {
		got[sub.NewID] = fmt.Sprintf("%d→%d %s", sub.Interaction, sub.ResultFrom, sub.OldID)
	}
	want := map[string]string{
		"call_weather":   "1→3 #weather#1",
		"call_weather_2": "2→4 #weather#1",
		"call_weather_3": "3→5 #weather#1",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("substituted %v, want %v", got, want)
	}
	// Each stream keeps its lines; the call line gains the id.
	for i, wantID := range map[int]string{0: "call_weather", 1: "call_weather_2", 2: "call_weather_3"} {
		evs := res.Exchanges[i].Events
		if len(evs) != 2 || !bytes.Equal(evs[1], xs[i].Events[1]) {
			t.Errorf("exchange %d: events changed shape: %q", i+1, evs)
		}
		if !bytes.Contains(evs[0], []byte(`"id":"`+wantID+`"`)) {
			t.Errorf("exchange %d: call line %s lacks id %s", i+1, evs[0], wantID)
		}
	}
	// The requests echo the new ids, in order, and answer by name with the
	// fixtures' output.
	wantReqs := map[int][]string{2: {"call_weather"}, 3: {"call_weather_2"}, 4: {"call_weather", "call_weather_3"}}
	for i, ids := range wantReqs {
		req, err := wire.ParseRequest(wire.KindOllama, "/api/chat", res.Exchanges[i].Request)
		if err != nil {
			t.Fatal(err)
		}
		for n, id := range ids {
			if req.ToolCalls[n].ID != id || req.ToolResults[n].CallID != "" {
				t.Errorf("exchange %d: call %q answered by %q, want %s answered by name", i+1, req.ToolCalls[n].ID, req.ToolResults[n].CallID, id)
			}
			f, err := presets.ParseCassetteFixture(id, res.Fixtures[id])
			if err != nil {
				t.Fatal(err)
			}
			if err := f.CheckResult(wire.KindOllama, req.ToolResults[n]); err != nil {
				t.Errorf("exchange %d: %v", i+1, err)
			}
		}
	}
	f, err := presets.ParseCassetteFixture("call_weather_3", res.Fixtures["call_weather_3"])
	if err != nil {
		t.Fatal(err)
	}
	if string(f.Call.Arguments) != `{"location":"Lyon"}` {
		t.Errorf("call_weather_3 arguments %s, want Lyon's", f.Call.Arguments)
	}
	assertIdempotent(t, &s, res)
}

// assertIdempotent substitutes a substitution's output again: nothing may change.
func assertIdempotent(t *testing.T, s *presets.Substituter, first *presets.Substitution) {
	t.Helper()
	again, err := s.Substitute(first.Exchanges)
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range again.Exchanges {
		y := first.Exchanges[i]
		if !bytes.Equal(x.Request, y.Request) || !bytes.Equal(x.Response, y.Response) || fmt.Sprintf("%q", x.Events) != fmt.Sprintf("%q", y.Events) {
			t.Errorf("substituting again changed exchange %d:\n%s\n%s", x.ID, y.Request, x.Request)
		}
	}
	if fmt.Sprintf("%s", again.Fixtures) != fmt.Sprintf("%s", first.Fixtures) {
		t.Errorf("substituting again changed the fixtures:\n%s\n%s", first.Fixtures, again.Fixtures)
	}
	if len(again.Report.Substituted) != len(first.Report.Substituted) || len(again.Report.Skipped) != len(first.Report.Skipped) {
		t.Errorf("substituting again reported %+v, first %+v", again.Report, first.Report)
	}
}

// TestSubstituteNumbering: ids count per preset in cassette order, skip an
// id a call left alone still uses, and --map takes effect.
func TestSubstituteNumbering(t *testing.T) {
	badArgs := `{"location":"Paris","unit":"kelvin"}`
	xs := []presets.Exchange{
		// Left alone, but it owns the id call_weather.
		chatExchange(1, chatRequest("a"), chatCall("call_weather", "weather", badArgs)),
		chatExchange(2, chatRequest("a", [4]string{"call_weather", "weather", badArgs, jsonString(parisWeather)}), chatAnswer("a")),
		chatExchange(3, chatRequest("b"), chatCall("call_b", "get_weather", parisArgs)),
		chatExchange(4, chatRequest("b", [4]string{"call_b", "get_weather", parisArgs, jsonString(parisWeather)}), chatAnswer("b")),
		chatExchange(5, chatRequest("c"), chatCall("call_c", "calculator", `{"expression":"6*7"}`)),
		chatExchange(6, chatRequest("c", [4]string{"call_c", "calculator", `{"expression":"6*7"}`, jsonString(`{"value":42}`)}), chatAnswer("c")),
		chatExchange(7, chatRequest("d"), chatCall("call_d", "weather", parisArgs)),
		chatExchange(8, chatRequest("d", [4]string{"call_d", "weather", parisArgs, jsonString(parisWeather)}), chatAnswer("d")),
		chatExchange(9, chatRequest("e"), chatCall("call_e", "lookup", `{}`)),
		chatExchange(10, chatRequest("e", [4]string{"call_e", "lookup", `{}`, jsonString("x")}), chatAnswer("e")),
	}
	s := presets.Substituter{Map: map[string]string{"get_weather": "weather"}}
	res, err := s.Substitute(xs)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, sub := range res.Report.Substituted {
		got = append(got, sub.OldID+"→"+sub.NewID)
	}
	if want := "[call_b→call_weather_2 call_c→call_calculator call_d→call_weather_3]"; fmt.Sprint(got) != want {
		t.Errorf("substituted %v, want %s", got, want)
	}
	if len(res.Report.Skipped) != 1 || res.Report.Skipped[0].CallID != "call_weather" || res.Report.Skipped[0].Interaction != 1 {
		t.Errorf("skipped %+v, want interaction 1's call_weather", res.Report.Skipped)
	}
	if counts := res.Report.Counts(); counts["weather"] != 2 || counts["calculator"] != 1 || len(counts) != 2 {
		t.Errorf("counts %v", counts)
	}
	f, err := presets.ParseCassetteFixture("call_weather_2", res.Fixtures["call_weather_2"])
	if err != nil || f.Function != "get_weather" || f.Preset != "weather" {
		t.Errorf("fixture call_weather_2 = %+v, %v; want preset weather for function get_weather", f, err)
	}
	assertIdempotent(t, &s, res)
}

// TestSubstituteStream: an OpenAI chat stream (the id on the first delta
// only) keeps its events, only the one carrying the id changing.
func TestSubstituteStream(t *testing.T) {
	loop := fake.ToolLoop{Tool: "weather", Args: parisArgs, CallID: "call_Zq81xk", Answer: "Sunny."}
	req1 := []byte(`{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"q"}]}`)
	resp := fake.OpenAIChat(loop).Respond(&fake.Request{Recorded: fake.Recorded{Method: "POST", Path: "/v1/chat/completions", Body: req1}})
	req2 := chatRequest("q", [4]string{"call_Zq81xk", "weather", parisArgs, jsonString(parisWeather)})
	xs := []presets.Exchange{
		{ID: 1, Kind: wire.KindOpenAIChat, Path: "/v1/chat/completions", Request: req1, Status: 200, Framing: wire.FramingSSE, Events: resp.Events},
		chatExchange(2, req2, chatAnswer("Sunny.")),
	}
	var s presets.Substituter
	res, err := s.Substitute(xs)
	if err != nil {
		t.Fatal(err)
	}
	evs := res.Exchanges[0].Events
	if len(evs) != len(resp.Events) {
		t.Fatalf("%d events, want %d", len(evs), len(resp.Events))
	}
	changed := 0
	for i := range evs {
		if !bytes.Equal(evs[i], resp.Events[i]) {
			changed++
			if !bytes.Contains(evs[i], []byte(`"id":"call_weather"`)) {
				t.Errorf("event %d changed without the new id: %s", i, evs[i])
			}
		}
	}
	if changed != 1 {
		t.Errorf("%d events changed, want 1", changed)
	}
	if bytes.Contains(res.Exchanges[1].Request, []byte("call_Zq81xk")) {
		t.Error("the old id is still in the answering request")
	}
	assertIdempotent(t, &s, res)
}

func TestParseMapping(t *testing.T) {
	cases := []struct {
		specs []string
		want  map[string]string
		err   error
	}{
		{nil, map[string]string{}, nil},
		{[]string{"get_weather=weather", " run = shell "}, map[string]string{"get_weather": "weather", "run": "shell"}, nil},
		{[]string{"get_weather=weather", "get_weather=weather"}, map[string]string{"get_weather": "weather"}, nil},
		{[]string{"get_weather"}, nil, presets.ErrBadMapping},
		{[]string{"=weather"}, nil, presets.ErrBadMapping},
		{[]string{"get_weather=weather", "get_weather=shell"}, nil, presets.ErrBadMapping},
		{[]string{"get_weather=wether"}, nil, presets.ErrUnknownPreset},
		{[]string{"get_weather="}, nil, presets.ErrUnknownPreset},
	}
	for _, tc := range cases {
		got, err := presets.ParseMapping(tc.specs)
		if !errors.Is(err, tc.err) {
			t.Errorf("ParseMapping(%q) error %v, want %v", tc.specs, err, tc.err)
			continue
		}
		if err != nil {
			if !strings.Contains(err.Error(), "calculator, current_time, weather") && !errors.Is(err, presets.ErrBadMapping) {
				t.Errorf("ParseMapping(%q) error %q does not list the presets", tc.specs, err)
			}
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("ParseMapping(%q) = %v, want %v", tc.specs, got, tc.want)
		}
	}
	var s presets.Substituter
	s.Map = map[string]string{"x": "nope"}
	if _, err := s.Substitute(nil); !errors.Is(err, presets.ErrUnknownPreset) {
		t.Errorf("Substitute with a bad Map: %v, want ErrUnknownPreset", err)
	}
}

func TestCheckResult(t *testing.T) {
	f, err := presets.Weather.Success(
		presets.WeatherArgs{Location: "Paris", Unit: presets.Celsius},
		presets.WeatherResult{Location: "Paris", Temperature: 21, Unit: presets.Celsius, Condition: "sunny"},
		presets.WithID("call_weather"))
	if err != nil {
		t.Fatal(err)
	}
	cf := presets.CassetteFixture{Fixture: f}
	cases := []struct {
		kind    wire.Kind
		content string
		equal   bool
	}{
		{wire.KindOpenAIChat, jsonString(parisWeather), true},
		{wire.KindOpenAIChat, jsonString(`{"condition":"sunny","location":"Paris","temperature":21.0,"unit":"celsius"}`), true},
		{wire.KindOpenAIChat, jsonString(`{"condition":"rain","location":"Paris","temperature":21,"unit":"celsius"}`), false},
		{wire.KindOpenAIChat, jsonString("21 degrees"), false},
		{wire.KindAnthropicMessages, `[{"type":"text","text":` + jsonString(parisCanon) + `}]`, true},
		{wire.KindGemini, parisCanon, true},
		{wire.KindGemini, `{"output":` + parisCanon + `}`, true},
		{wire.KindGemini, `{"output":` + jsonString(parisCanon) + `}`, true},
		{wire.KindGemini, `{"output":{}}`, false},
	}
	for _, tc := range cases {
		err := cf.CheckResult(tc.kind, wire.ToolResult{CallID: "call_weather", Content: []byte(tc.content), Path: "messages.2.content"})
		var mm *presets.ResultMismatch
		switch {
		case tc.equal && err != nil:
			t.Errorf("%s %s: %v, want equal", tc.kind, tc.content, err)
		case !tc.equal && (!errors.As(err, &mm) || !errors.Is(err, presets.ErrResultMismatch)):
			t.Errorf("%s %s: %v, want a ResultMismatch", tc.kind, tc.content, err)
		case !tc.equal && (mm.CallID != "call_weather" || !strings.Contains(err.Error(), "call_weather") || mm.Want != parisCanon):
			t.Errorf("%s %s: mismatch %+v", tc.kind, tc.content, mm)
		}
	}
}

// FuzzSubstitute feeds hostile cassette bodies to the substituter: a call
// and the request answering it. It must never panic, keep every stream's
// event count, and be idempotent on what it produces.
func FuzzSubstitute(f *testing.F) {
	f.Add(uint8(0), chatRequest("q"), chatCall("call_x1", "weather", parisArgs),
		chatRequest("q", [4]string{"call_x1", "weather", parisArgs, jsonString(parisWeather)}))
	f.Add(uint8(1), []byte(`{"model":"m","messages":[{"role":"user","content":"q"}]}`), anthropicCall("toolu_1", "weather", parisArgs),
		anthropicResult("toolu_1", "weather", parisArgs, `[{"type":"text","text":`+jsonString(parisWeather)+`}]`, false))
	f.Add(uint8(2), ollamaRequest("A"), bytes.Join(ollamaCallLines("Paris"), nil), ollamaRequest("A", "Paris"))
	f.Add(uint8(2), olChat(), bytes.Join(olLines(olCall("call_k3x9q2mw", "Paris"), olCall("call_7fz0pl4e", "Rome")), nil),
		olChat(olAssistant(olCall("", "Paris"), olCall("call_7fz0pl4e", "Rome")), olTool("call_7fz0pl4e", parisWeather), olTool("", parisWeather)))
	f.Add(uint8(3), []byte(`{"contents":[{"role":"user","parts":[{"text":"q"}]}]}`),
		[]byte(`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"weather","args":{"location":"Paris"}}}]}}]}`),
		[]byte(`{"contents":[{"role":"user","parts":[{"text":"q"}]},{"role":"model","parts":[{"functionCall":{"name":"weather","args":{"location":"Paris"}}}]},{"role":"user","parts":[{"functionResponse":{"name":"weather","response":{"output":`+parisCanon+`}}}]}]}`))
	kinds := []struct {
		kind    wire.Kind
		path    string
		framing wire.Framing
	}{
		{wire.KindOpenAIChat, "/v1/chat/completions", wire.FramingNone},
		{wire.KindAnthropicMessages, "/v1/messages", wire.FramingNone},
		{wire.KindOllama, "/api/chat", wire.FramingNDJSON},
		{wire.KindGemini, "/v1beta/models/m:generateContent", wire.FramingNone},
	}
	f.Fuzz(func(t *testing.T, k uint8, req1, resp, req2 []byte) {
		kd := kinds[int(k)%len(kinds)]
		x1 := presets.Exchange{ID: 1, Kind: kd.kind, Path: kd.path, Request: req1, Status: 200, Framing: kd.framing}
		if kd.framing == wire.FramingNone {
			x1.Response = resp
		} else {
			for _, e := range wire.Split(kd.framing, resp) {
				x1.Events = append(x1.Events, e.Raw)
			}
		}
		x2 := presets.Exchange{ID: 2, Kind: kd.kind, Path: kd.path, Request: req2, Status: 200, Response: []byte(`{}`)}
		var s presets.Substituter
		res, err := s.Substitute([]presets.Exchange{x1, x2})
		if err != nil {
			return
		}
		if len(res.Exchanges[0].Events) != len(x1.Events) {
			t.Fatalf("%d events became %d", len(x1.Events), len(res.Exchanges[0].Events))
		}
		assertIdempotent(t, &s, res)
	})
}
