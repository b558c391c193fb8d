package scenario_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/scenario"
	"github.com/llmproxy/llmproxy/wire"
)

// weatherSchema is the schema of the structured-output tests.
const weatherSchema = `{"type":"object","additionalProperties":false,"properties":{"city":{"type":"string"},"temperature":{"type":"number","minimum":-90},"unit":{"type":"string","enum":["celsius","fahrenheit"]},"when":{"type":"string","format":"date"}},"required":["city","temperature","unit","when"]}`

// withSchema is a request body of each wire that asks for schema.
func withSchema(kind wire.Kind, schema string) string {
	switch kind {
	case wire.KindOpenAIChat:
		return `{"model":"m","messages":[{"role":"user","content":"Weather?"}],"response_format":{"type":"json_schema","json_schema":{"name":"w","strict":true,"schema":` + schema + `}}}`
	case wire.KindOpenAIResponses:
		return `{"model":"m","input":"Weather?","text":{"format":{"type":"json_schema","name":"w","schema":` + schema + `}}}`
	case wire.KindAnthropicMessages:
		return `{"model":"m","max_tokens":99,"messages":[{"role":"user","content":"Weather?"}],"tools":[{"name":"record_weather","input_schema":` + schema + `}],"tool_choice":{"type":"tool","name":"record_weather"}}`
	case wire.KindGemini:
		return `{"contents":[{"role":"user","parts":[{"text":"Weather?"}]}],"generationConfig":{"responseMimeType":"application/json","responseJsonSchema":` + schema + `}}`
	case wire.KindOllama:
		return `{"model":"m","stream":false,"messages":[{"role":"user","content":"Weather?"}],"format":` + schema + `}`
	}
	panic(kind)
}

func jsonRaw(s string) json.RawMessage { return json.RawMessage(s) }

var structuredKinds = []wire.Kind{wire.KindOpenAIChat, wire.KindOpenAIResponses, wire.KindAnthropicMessages, wire.KindGemini, wire.KindOllama}

// content is the answer's JSON: its text, or the arguments of the call
// Anthropic's forced tool makes.
func content(t *testing.T, kind wire.Kind, d scenario.Delivery) string {
	t.Helper()
	if kind != wire.KindAnthropicMessages {
		if len(d.Answer.ToolCalls) != 0 {
			t.Errorf("tool calls %+v", d.Answer.ToolCalls)
		}
		return d.Answer.Text
	}
	c := d.Answer.ToolCalls
	if len(c) != 1 || c[0].Name != "record_weather" || !strings.HasPrefix(c[0].ID, "call_record_weather") || d.Answer.Text != "" || d.Answer.Finish != wire.FinishToolCalls {
		t.Fatalf("answer %+v, want one call of record_weather", d.Answer)
	}
	return string(c[0].Arguments)
}

// TestJSONAnswer: a json value satisfying the request's schema is the
// answer's content on every wire; one that does not is a miss naming the
// path, and changes nothing.
func TestJSONAnswer(t *testing.T) {
	for _, kind := range structuredKinds {
		t.Run(string(kind), func(t *testing.T) {
			b := scenario.New("structured").OnExhausted(scenario.RepeatLast)
			b.Step("bad").JSON(map[string]any{"city": "Paris", "temperature": "warm", "unit": "kelvin", "when": "2024-01-01"})
			s, err := b.Build()
			e := mustEngine(t, s, err)
			m := miss(t, e, request(t, "", kind, withSchema(kind, weatherSchema)))
			for _, want := range []string{`step "bad": respond.json: the value does not satisfy the request's schema`, "/temperature: must be number, got string (type)", `/unit: must be one of "celsius", "fahrenheit", got "kelvin" (enum)`} {
				if !strings.Contains(m.Error(), want) {
					t.Errorf("miss %q\nlacks %q", m, want)
				}
			}

			b = scenario.New("structured")
			b.Step("good").JSON(jsonRaw(`{"city": "Paris", "temperature": 21.5, "unit": "celsius", "when": "2024-01-01"}`))
			e = build(t, b)
			got := answer(t, e, request(t, "", kind, withSchema(kind, weatherSchema)))
			want := `{"city":"Paris","temperature":21.5,"unit":"celsius","when":"2024-01-01"}`
			if c := content(t, kind, got); !sameJSONText(c, want) {
				t.Errorf("content %s, want %s", c, want)
			}
		})
	}
}

// TestGenerateJSON: generate makes the minimal value valid against the
// request's schema on every wire, the same for the same request.
func TestGenerateJSON(t *testing.T) {
	for _, kind := range structuredKinds {
		t.Run(string(kind), func(t *testing.T) {
			b := scenario.New("generated").OnExhausted(scenario.RepeatLast)
			b.Step("").GenerateJSON()
			e := build(t, b)
			first := content(t, kind, answer(t, e, request(t, "", kind, withSchema(kind, weatherSchema))))
			want := `{"city":"","temperature":0,"unit":"celsius","when":"2023-11-14"}`
			if first != want {
				t.Errorf("content %s, want %s", first, want)
			}
			if again := content(t, kind, answer(t, e, request(t, "", kind, withSchema(kind, weatherSchema)))); again != first {
				t.Errorf("second answer %s, first %s", again, first)
			}
		})
	}
	// Gemini's own schema form (upper-case types, nullable, propertyOrdering).
	b := scenario.New("gemini")
	b.Step("").GenerateJSON()
	body := `{"contents":[{"role":"user","parts":[{"text":"x"}]}],"generationConfig":{"responseSchema":{"type":"OBJECT","properties":{"b":{"type":"STRING","nullable":true},"a":{"type":"ARRAY","items":{"type":"INTEGER"},"minItems":"1"}},"propertyOrdering":["a","b"],"required":["b","a"]}}}`
	if got := answer(t, build(t, b), request(t, "", wire.KindGemini, body)).Answer.Text; got != `{"a":[0],"b":""}` {
		t.Errorf("gemini responseSchema: %s", got)
	}
}

// TestJSONAnswerWithoutSchema: a value is answered as it is when the
// request asks for no schema; generate is then a miss that says what
// counts as asking.
func TestJSONAnswerWithoutSchema(t *testing.T) {
	b := scenario.New("plain").OnExhausted(scenario.RepeatLast)
	b.Step("value").JSON(jsonRaw(`{"b": 1, "a": [true]}`)).Then("gen")
	b.Step("gen").GenerateJSON()
	e := build(t, b)
	// The same request twice: a named conversation moves on (read from the
	// request, it would get the same answer again).
	if got := answer(t, e, request(t, "c", wire.KindOpenAIChat, chat(user("x")))).Answer.Text; got != `{"b":1,"a":[true]}` {
		t.Errorf("text %s", got)
	}
	m := miss(t, e, request(t, "c", wire.KindOpenAIChat, chat(user("x"))))
	if !strings.Contains(m.Error(), `step "gen": respond.json: generate makes a value from the schema the request asks for, and it asks for none (OpenAI response_format json_schema`) {
		t.Errorf("miss %v", m)
	}
}

// TestForcedToolWantsAnObject: a forced tool's arguments are an object,
// whatever its input_schema allows.
func TestForcedToolWantsAnObject(t *testing.T) {
	b := scenario.New("forced")
	b.Step("list").JSON([]int{1, 2})
	body := `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"x"}],"tools":[{"name":"t","input_schema":{}}],"tool_choice":{"type":"tool","name":"t"}}`
	m := miss(t, build(t, b), request(t, "", wire.KindAnthropicMessages, body))
	if !strings.Contains(m.Error(), `step "list": respond.json: the request forces the tool t, whose arguments are a JSON object, not [1,2]`) {
		t.Errorf("miss %v", m)
	}
}

// TestGenerateJSONBadSchemas: a schema no value satisfies, one that does
// not compile, one that refers outside itself, and hostile ones are misses
// that say why, never a hang; 10 000 properties are answered.
func TestGenerateJSONBadSchemas(t *testing.T) {
	tests := []struct{ name, schema, says string }{
		{"unsatisfiable", `{"type":"string","minLength":5,"maxLength":2}`, `the value made, "aaaaa", does not satisfy the request's schema (response_format.json_schema.schema): /: does not satisfy the schema (maxLength)`},
		{"false", `{"type":"object","properties":{"a":false},"required":["a"]}`, `no value can be made for the request's schema (response_format.json_schema.schema): no value satisfies the schema: at "/properties/a", a false schema`},
		{"not RE2", `{"type":"string","pattern":"(?<=a)b"}`, "does not compile"},
		{"refers to a file", `{"$ref":"file:///etc/passwd"}`, "a request's schema may refer only to itself"},
		{"refers to the network", `{"$ref":"https://example.com/schema.json"}`, "a request's schema may refer only to itself"},
		{"ref cycle", `{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`, "$ref"},
		{"required self reference", `{"type":"object","properties":{"next":{"$ref":"#"}},"required":["next"]}`, "schema nests too deep"},
		{"10 000 properties", manyProperties(10000), ""},
		{"20 000 properties", manyProperties(20000), "has more than 16384 objects: too large to compile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := scenario.New("bad")
			b.Step("gen").GenerateJSON()
			e := build(t, b)
			req := request(t, "", wire.KindOpenAIChat, withSchema(wire.KindOpenAIChat, tt.schema))
			p, err := e.Answer(req)
			if tt.says == "" {
				if err != nil || !strings.HasPrefix(p.Answer.Text, `{"p0":0,"p1":0,`) {
					t.Fatalf("err %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.says) || !strings.Contains(err.Error(), `step "gen": respond.json`) {
				t.Errorf("err = %v\nwant it to say %q", err, tt.says)
			}
		})
	}
}

// TestJSONAnswerChecks: check reports json answers used wrongly, at their
// line.
func TestJSONAnswerChecks(t *testing.T) {
	tests := []struct{ name, step, want string }{
		{"with text", `{respond: {json: {a: 1}, text: hi}}`, `j.yaml:2: step "step-1": respond.json: a json answer is the answer's content: it has no text or tool-calls besides`},
		{"with tool calls", `{respond: {json: {generate: true}, tool-calls: [{function: f}]}}`, "has no text or tool-calls besides"},
		{"generate false", `{respond: {json: {generate: false}}}`, `j.yaml:2: step "step-1": respond.json.generate: generate is true`},
		{"with an error", `{respond: {json: 1, error: {status: 500, message: x}}}`, "an error answer has nothing else in respond"},
		{"not JSON", `{respond: {json: .inf}}`, "respond.json: .inf is not a number JSON can hold"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := scenario.Parse("j.yaml", []byte("steps:\n  - "+tt.step+"\n"))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

// manyProperties is an object schema of n required integer properties.
func manyProperties(n int) string {
	var props, req strings.Builder
	for i := range n {
		if i > 0 {
			props.WriteByte(',')
			req.WriteByte(',')
		}
		fmt.Fprintf(&props, `"p%d":{"type":"integer"}`, i)
		fmt.Fprintf(&req, `"p%d"`, i)
	}
	return `{"type":"object","properties":{` + props.String() + `},"required":[` + req.String() + `]}`
}

// BenchmarkGenerateJSON measures a generated answer against a small
// schema and against 10 000 required properties (compiled, made and
// checked for each request).
func BenchmarkGenerateJSON(b *testing.B) {
	for name, schema := range map[string]string{"weather": weatherSchema, "10000-properties": manyProperties(10000)} {
		b.Run(name, func(b *testing.B) {
			sb := scenario.New("bench").OnExhausted(scenario.RepeatLast)
			sb.Step("").GenerateJSON()
			e := build(b, sb)
			req := request(b, "", wire.KindOpenAIChat, withSchema(wire.KindOpenAIChat, schema))
			b.ReportAllocs()
			for b.Loop() {
				p, err := e.Answer(req)
				if err != nil {
					b.Fatal(err)
				}
				p.Commit()
			}
		})
	}
}
