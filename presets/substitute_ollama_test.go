package presets_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/presets"
)

// Ollama tool rounds as the live server and its clients put them on the
// wire: the server gives each call an id (call_ + 8 [a-z0-9]), older
// servers and the docs give none; the documented client echoes the
// assistant message it got and answers each call with a "tool" message
// naming the function, without tool_call_id, while some clients add the
// call's id as tool_call_id.

// olCall is a tool call to weather for location as the server sends it:
// led by its id, or without one when id is "".
func olCall(id, location string) string {
	fn := fmt.Sprintf(`"function":{"name":"weather","arguments":{"location":%q}}`, location)
	if id == "" {
		return "{" + fn + "}"
	}
	return fmt.Sprintf(`{"id":%q,%s}`, id, fn)
}

// olCallGiven is an id-less olCall after scrub gave it id: the id member
// is added after the call's last member.
func olCallGiven(id, location string) string {
	return strings.TrimSuffix(olCall("", location), "}") + fmt.Sprintf(`,"id":%q}`, id)
}

// olLines is a streamed answer whose first line makes the calls.
func olLines(calls ...string) [][]byte {
	return [][]byte{
		[]byte(`{"model":"llama3.2","created_at":"2025-07-07T20:22:19Z","message":{"role":"assistant","content":"","tool_calls":[` + strings.Join(calls, ",") + `]},"done":false}` + "\n"),
		[]byte(`{"model":"llama3.2","created_at":"2025-07-07T20:22:20Z","message":{"role":"assistant","content":""},"done_reason":"stop","done":true}` + "\n"),
	}
}

// olFinal is a streamed text answer.
func olFinal() [][]byte {
	return [][]byte{[]byte(`{"model":"llama3.2","message":{"role":"assistant","content":"done"},"done":true}` + "\n")}
}

// olChat is a chat request: the prompt, then msgs.
func olChat(msgs ...string) []byte {
	return []byte(`{"model":"llama3.2","messages":[` + strings.Join(append([]string{`{"role":"user","content":"q"}`}, msgs...), ",") + `]}`)
}

// olAssistant is the echo of an assistant message making calls.
func olAssistant(calls ...string) string {
	return `{"role":"assistant","content":"","tool_calls":[` + strings.Join(calls, ",") + `]}`
}

// olTool is a tool message answering a weather call with output: by
// tool_name only, or also by tool_call_id when callID is not "".
func olTool(callID, output string) string {
	m := `{"role":"tool","content":` + jsonString(output) + `,"tool_name":"weather"`
	if callID != "" {
		m += `,"tool_call_id":` + jsonString(callID)
	}
	return m + "}"
}

// weatherAt is a weather result as a tool printed it, and its canonical form
// as the fixture holds it.
func weatherAt(location string, temp int) (out, canon string) {
	return fmt.Sprintf(`{"location": %q, "temperature": %d, "unit": "celsius", "condition": "sunny"}`, location, temp),
		fmt.Sprintf(`{"condition":"sunny","location":%q,"temperature":%d,"unit":"celsius"}`, location, temp)
}

// TestSubstituteOllamaResults: Ollama calls, with the server's ids or
// without, answered by tool_name only or with tool_call_id. Each recorded
// request must come out as the client will send it in replay once it gets
// the scrubbed responses: ids renamed where they are, added to the calls
// that had none (and to their echoes, since the client echoes the message
// it got), but never added to a tool message that did not carry one.
func TestSubstituteOllamaResults(t *testing.T) {
	const a, b = "call_k3x9q2mw", "call_7fz0pl4e"
	paris, parisC := weatherAt("Paris", 21)
	rome, romeC := weatherAt("Rome", 25)
	lyon, lyonC := weatherAt("Lyon", 18)
	type sub struct {
		from, answeredIn uint64
		oldID, newID     string
	}
	cases := []struct {
		name     string
		in, want []presets.Exchange
		subs     []sub
		skipped  []string // Skip.String() of the calls left alone
		fixtures map[string]string
	}{
		{
			name: "ids, answered by name",
			in: []presets.Exchange{
				ollamaExchange(1, olChat(), olLines(olCall(a, "Paris"))),
				ollamaExchange(2, olChat(olAssistant(olCall(a, "Paris")), olTool("", paris)), olFinal()),
			},
			want: []presets.Exchange{
				ollamaExchange(1, olChat(), olLines(olCall("call_weather", "Paris"))),
				ollamaExchange(2, olChat(olAssistant(olCall("call_weather", "Paris")), olTool("", parisC)), olFinal()),
			},
			subs:     []sub{{1, 2, a, "call_weather"}},
			fixtures: map[string]string{"call_weather": parisC},
		},
		{
			name: "no ids, answered by name",
			in: []presets.Exchange{
				ollamaExchange(1, olChat(), olLines(olCall("", "Paris"))),
				ollamaExchange(2, olChat(olAssistant(olCall("", "Paris")), olTool("", paris)), olFinal()),
			},
			want: []presets.Exchange{
				ollamaExchange(1, olChat(), olLines(olCallGiven("call_weather", "Paris"))),
				ollamaExchange(2, olChat(olAssistant(olCallGiven("call_weather", "Paris")), olTool("", parisC)), olFinal()),
			},
			subs:     []sub{{1, 2, "#weather#1", "call_weather"}},
			fixtures: map[string]string{"call_weather": parisC},
		},
		{
			name: "ids, answered with tool_call_id",
			in: []presets.Exchange{
				ollamaExchange(1, olChat(), olLines(olCall(a, "Paris"))),
				ollamaExchange(2, olChat(olAssistant(olCall(a, "Paris")), olTool(a, paris)), olFinal()),
			},
			want: []presets.Exchange{
				ollamaExchange(1, olChat(), olLines(olCall("call_weather", "Paris"))),
				ollamaExchange(2, olChat(olAssistant(olCall("call_weather", "Paris")), olTool("call_weather", parisC)), olFinal()),
			},
			subs:     []sub{{1, 2, a, "call_weather"}},
			fixtures: map[string]string{"call_weather": parisC},
		},
		{
			// ollama-python's Message.ToolCall has no id field, so echoing
			// the message it got drops the id, as do histories built the
			// way the Ollama docs show them. The echo stays without one.
			name: "ids, echoed without them, answered by name",
			in: []presets.Exchange{
				ollamaExchange(1, olChat(), olLines(olCall(a, "Paris"))),
				ollamaExchange(2, olChat(olAssistant(olCall("", "Paris")), olTool("", paris)), olFinal()),
			},
			want: []presets.Exchange{
				ollamaExchange(1, olChat(), olLines(olCall("call_weather", "Paris"))),
				ollamaExchange(2, olChat(olAssistant(olCall("", "Paris")), olTool("", parisC)), olFinal()),
			},
			subs:     []sub{{1, 2, a, "call_weather"}},
			fixtures: map[string]string{"call_weather": parisC},
		},
		{
			name: "parallel calls with ids, echoed without them, answered by name in order",
			in: []presets.Exchange{
				ollamaExchange(1, olChat(), olLines(olCall(a, "Paris"), olCall(b, "Rome"))),
				ollamaExchange(2, olChat(olAssistant(olCall("", "Paris"), olCall("", "Rome")), olTool("", paris), olTool("", rome)), olLines(olCall(a, "Lyon"))),
				ollamaExchange(3, olChat(olAssistant(olCall("", "Paris"), olCall("", "Rome")), olTool("", paris), olTool("", rome), olAssistant(olCall("", "Lyon")), olTool("", lyon)), olFinal()),
			},
			want: []presets.Exchange{
				ollamaExchange(1, olChat(), olLines(olCall("call_weather", "Paris"), olCall("call_weather_2", "Rome"))),
				ollamaExchange(2, olChat(olAssistant(olCall("", "Paris"), olCall("", "Rome")), olTool("", parisC), olTool("", romeC)), olLines(olCall("call_weather_3", "Lyon"))),
				ollamaExchange(3, olChat(olAssistant(olCall("", "Paris"), olCall("", "Rome")), olTool("", parisC), olTool("", romeC), olAssistant(olCall("", "Lyon")), olTool("", lyonC)), olFinal()),
			},
			// The server may give a later call an id it gave before; the
			// conversation tells them apart.
			subs:     []sub{{1, 2, a, "call_weather"}, {1, 2, b, "call_weather_2"}, {2, 3, a, "call_weather_3"}},
			fixtures: map[string]string{"call_weather": parisC, "call_weather_2": romeC, "call_weather_3": lyonC},
		},
		{
			name: "parallel calls with ids, answered by name in order",
			in: []presets.Exchange{
				ollamaExchange(1, olChat(), olLines(olCall(a, "Paris"), olCall(b, "Rome"))),
				ollamaExchange(2, olChat(olAssistant(olCall(a, "Paris"), olCall(b, "Rome")), olTool("", paris), olTool("", rome)), olFinal()),
			},
			want: []presets.Exchange{
				ollamaExchange(1, olChat(), olLines(olCall("call_weather", "Paris"), olCall("call_weather_2", "Rome"))),
				ollamaExchange(2, olChat(olAssistant(olCall("call_weather", "Paris"), olCall("call_weather_2", "Rome")), olTool("", parisC), olTool("", romeC)), olFinal()),
			},
			subs:     []sub{{1, 2, a, "call_weather"}, {1, 2, b, "call_weather_2"}},
			fixtures: map[string]string{"call_weather": parisC, "call_weather_2": romeC},
		},
		{
			name: "parallel calls without ids, answered by name in order",
			in: []presets.Exchange{
				ollamaExchange(1, olChat(), olLines(olCall("", "Paris"), olCall("", "Rome"))),
				ollamaExchange(2, olChat(olAssistant(olCall("", "Paris"), olCall("", "Rome")), olTool("", paris), olTool("", rome)), olFinal()),
			},
			want: []presets.Exchange{
				ollamaExchange(1, olChat(), olLines(olCallGiven("call_weather", "Paris"), olCallGiven("call_weather_2", "Rome"))),
				ollamaExchange(2, olChat(olAssistant(olCallGiven("call_weather", "Paris"), olCallGiven("call_weather_2", "Rome")), olTool("", parisC), olTool("", romeC)), olFinal()),
			},
			subs:     []sub{{1, 2, "#weather#1", "call_weather"}, {1, 2, "#weather#2", "call_weather_2"}},
			fixtures: map[string]string{"call_weather": parisC, "call_weather_2": romeC},
		},
		{
			// The second call is answered by its id first: the result by
			// name is the first call's, the earliest one still unanswered.
			name: "a result by name skips a call answered by id",
			in: []presets.Exchange{
				ollamaExchange(1, olChat(), olLines(olCall(a, "Paris"), olCall(b, "Rome"))),
				ollamaExchange(2, olChat(olAssistant(olCall(a, "Paris"), olCall(b, "Rome")), olTool(b, rome), olTool("", paris)), olFinal()),
			},
			want: []presets.Exchange{
				ollamaExchange(1, olChat(), olLines(olCall("call_weather", "Paris"), olCall("call_weather_2", "Rome"))),
				ollamaExchange(2, olChat(olAssistant(olCall("call_weather", "Paris"), olCall("call_weather_2", "Rome")), olTool("call_weather_2", romeC), olTool("", parisC)), olFinal()),
			},
			subs:     []sub{{1, 2, a, "call_weather"}, {1, 2, b, "call_weather_2"}},
			fixtures: map[string]string{"call_weather": parisC, "call_weather_2": romeC},
		},
		{
			name: "two rounds with ids, answered by name",
			in: []presets.Exchange{
				ollamaExchange(1, olChat(), olLines(olCall(a, "Paris"))),
				ollamaExchange(2, olChat(olAssistant(olCall(a, "Paris")), olTool("", paris)), olLines(olCall(b, "Rome"))),
				ollamaExchange(3, olChat(olAssistant(olCall(a, "Paris")), olTool("", paris), olAssistant(olCall(b, "Rome")), olTool("", rome)), olFinal()),
			},
			want: []presets.Exchange{
				ollamaExchange(1, olChat(), olLines(olCall("call_weather", "Paris"))),
				ollamaExchange(2, olChat(olAssistant(olCall("call_weather", "Paris")), olTool("", parisC)), olLines(olCall("call_weather_2", "Rome"))),
				ollamaExchange(3, olChat(olAssistant(olCall("call_weather", "Paris")), olTool("", parisC), olAssistant(olCall("call_weather_2", "Rome")), olTool("", romeC)), olFinal()),
			},
			subs:     []sub{{1, 2, a, "call_weather"}, {2, 3, b, "call_weather_2"}},
			fixtures: map[string]string{"call_weather": parisC, "call_weather_2": romeC},
		},
		{
			// A tool message answers a call made before it, never one echoed
			// after it.
			name: "a result by name before the call answers nothing",
			in: []presets.Exchange{
				ollamaExchange(1, olChat(), olLines(olCall(a, "Paris"))),
				ollamaExchange(2, olChat(olTool("", paris), olAssistant(olCall(a, "Paris"))), olFinal()),
			},
			skipped: []string{"interaction 1, call " + a + " (weather): result: no later request in the cassette answers it"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var s presets.Substituter
			res, err := s.Substitute(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			var skipped []string
			for _, sk := range res.Report.Skipped {
				skipped = append(skipped, sk.String())
			}
			if fmt.Sprint(skipped) != fmt.Sprint(tc.skipped) {
				t.Errorf("skipped %q, want %q", skipped, tc.skipped)
			}
			var subs []sub
			for _, s := range res.Report.Substituted {
				subs = append(subs, sub{s.Interaction, s.ResultFrom, s.OldID, s.NewID})
			}
			if fmt.Sprint(subs) != fmt.Sprint(tc.subs) {
				t.Errorf("substituted %v, want %v", subs, tc.subs)
			}
			want := tc.want
			if want == nil {
				want = tc.in
			}
			for i, x := range res.Exchanges {
				if string(x.Request) != string(want[i].Request) {
					t.Errorf("exchange %d request\ngot  %s\nwant %s", x.ID, x.Request, want[i].Request)
				}
				if fmt.Sprintf("%s", x.Events) != fmt.Sprintf("%s", want[i].Events) {
					t.Errorf("exchange %d response\ngot  %s\nwant %s", x.ID, x.Events, want[i].Events)
				}
			}
			// The fixtures are stored under the ids the client gets, which
			// is how presets.Executor finds them.
			if len(res.Fixtures) != len(tc.fixtures) {
				t.Errorf("fixtures %s, want %d", res.Fixtures, len(tc.fixtures))
			}
			for id, content := range tc.fixtures {
				f, err := presets.ParseCassetteFixture(id, res.Fixtures[id])
				if err != nil {
					t.Errorf("fixture %s: %v", id, err)
					continue
				}
				if string(f.Result.Content) != content || f.Call.ID != id {
					t.Errorf("fixture %s: call %s, result %s; want %s", id, f.Call.ID, f.Result.Content, content)
				}
			}
			assertIdempotent(t, &s, res)
		})
	}
}
