package scenario_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/presets"
	"github.com/llmproxy/llmproxy/scenario"
	"github.com/llmproxy/llmproxy/wire"
)

// asScenario calls the weather preset under the application's name
// get_weather, once from a fixture and once as a preset call.
const asScenario = `version: 1
name: named
fixtures:
  paris:
    preset: weather
    as: get_weather
    arguments: {location: Paris, unit: celsius}
    result: {location: Paris, temperature: 21, unit: celsius, condition: sunny}
steps:
  - id: ask
    respond: {tool-calls: [{fixture: paris}, {preset: weather, as: get_weather, arguments: {location: Rome}}]}
  - id: answer
    when: {tool-result: {fixture: paris}}
    respond: {text: "Sunny."}
    complete: true
`

// TestPresetCallAs: a fixture or preset call with as: is called by the
// application's function name (default id call_<name>), its result
// condition holds for a result sent to that name, and the fixture is still
// served by its call id.
func TestPresetCallAs(t *testing.T) {
	s, err := scenario.Parse("named.yaml", []byte(asScenario))
	e := mustEngine(t, s, err)
	first := answer(t, e, request(t, "", wire.KindOpenAIChat, chat(user("Weather?"))))
	calls := first.Answer.ToolCalls
	if len(calls) != 2 || calls[0].Name != "get_weather" || calls[0].ID != "call_get_weather" ||
		calls[1].Name != "get_weather" || calls[1].ID != "call_get_weather_2" || string(calls[1].Arguments) != `{"location":"Rome"}` {
		t.Fatalf("tool calls = %+v", calls)
	}
	if len(first.Fixtures) != 1 || first.Fixtures[0].Call.ID != "call_get_weather" || first.Fixtures[0].Validate() != nil {
		t.Errorf("fixtures = %+v (valid: %v)", first.Fixtures, first.Fixtures[0].Validate())
	}
	result := `{"role":"tool","tool_call_id":"call_get_weather","content":"{\"location\":\"Paris\",\"temperature\":21,\"unit\":\"celsius\",\"condition\":\"sunny\"}"}`
	echo := `{"role":"assistant","tool_calls":[{"id":"call_get_weather","type":"function","function":{"name":"get_weather","arguments":"{\"location\":\"Paris\",\"unit\":\"celsius\"}"}},{"id":"call_get_weather_2","type":"function","function":{"name":"get_weather","arguments":"{\"location\":\"Rome\"}"}}]}`
	second := answer(t, e, request(t, "", wire.KindOpenAIChat, chat(user("Weather?"), echo, result)))
	if second.Step != "answer" {
		t.Errorf("answered by %q", second.Step)
	}
}

// TestPresetCallAsChecks: arguments under as: are still checked against
// the preset's schema, as: is only for presets, and an unknown preset that
// looks like the application's name suggests as:.
func TestPresetCallAsChecks(t *testing.T) {
	tests := []struct{ name, steps, want string }{
		{"schema still checked", `[{respond: {tool-calls: [{preset: weather, as: get_weather, arguments: {place: Paris}}]}}]`,
			`x.yaml:1: step "step-1": respond.tool-calls[0].arguments.location: missing required property`},
		{"as on a function", `[{respond: {tool-calls: [{function: lookup, as: other}]}}]`,
			`x.yaml:1: step "step-1": respond.tool-calls[0].as: as names a preset's call; a function call is named by function`},
		{"as on a fixture call", `[{respond: {tool-calls: [{fixture: f, as: other}]}}]`,
			`respond.tool-calls[0].as: a fixture's call takes its name from the fixture: give the fixture as: other`},
		{"bad name", `[{respond: {tool-calls: [{preset: calculator, as: "two words", arguments: {expression: "1"}}]}}]`,
			`respond.tool-calls[0].as: "two words" is not a function name`},
		{"suggests as", `[{respond: {tool-calls: [{preset: get_weather, arguments: {location: Paris}}]}}]`,
			`unknown preset "get_weather" (if it is the application's name for the weather preset, write preset: weather, as: get_weather)`},
		{"suggests as for camel case", `[{respond: {tool-calls: [{preset: searchWebSearch}]}}]`,
			`write preset: web_search, as: searchWebSearch`},
		{"far from any preset", `[{respond: {tool-calls: [{preset: stock_price}]}}]`,
			`unknown preset "stock_price" (llmproxy presets lists them)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := scenario.Parse("x.yaml", []byte("steps: "+tt.steps))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

// TestNameTools: mock --map's mapping names every call of a preset that
// has no as of its own; a preset named twice or unknown is an error.
func TestNameTools(t *testing.T) {
	b := scenario.New("mapped")
	b.Fixture("paris", parisFixture(t))
	b.FixtureAs("kept", "my_weather", parisFixture(t, presets.WithID("call_kept")))
	b.Step("ask").CallsFixture("paris", "kept").CallsPreset("calculator", map[string]string{"expression": "1+1"}, "")
	b.Step("answer").WhenFixtureResult("paris").WhenFixtureResult("kept").Text("Done.").Complete()
	s, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.NameTools(map[string]string{"get_weather": "weather", "calc": "calculator"}); err != nil {
		t.Fatal(err)
	}
	got := answer(t, mustEngine(t, s, nil), request(t, "", wire.KindOpenAIChat, chat(user("hi"))))
	var names []string
	for _, c := range got.Answer.ToolCalls {
		names = append(names, c.Name+"/"+c.ID)
	}
	if want := "get_weather/call_get_weather my_weather/call_kept calc/call_calc"; strings.Join(names, " ") != want {
		t.Errorf("calls %v, want %s", names, want)
	}
	if err := s.NameTools(map[string]string{"a": "weather", "b": "weather"}); !errors.Is(err, scenario.ErrInvalid) || !strings.Contains(err.Error(), "already named a") {
		t.Errorf("two names for one preset: %v", err)
	}
	if err := s.NameTools(map[string]string{"a": "nope"}); !errors.Is(err, presets.ErrUnknownPreset) {
		t.Errorf("unknown preset: %v", err)
	}
}

// TestNewKeysFileAndBuilderAgree: the files using as, text generators and
// json answers are the values the builder makes.
func TestNewKeysFileAndBuilderAgree(t *testing.T) {
	named := scenario.New("named-tools")
	named.FixtureAs("paris", "get_weather", parisFixture(t))
	named.Step("ask").CallsFixture("paris").CallsPresetAs("calculator", "calc", map[string]string{"expression": "6*7"}, "")
	named.Step("answer").WhenFixtureResult("paris").Text("Sunny.").Complete()

	gen := scenario.New("generators")
	gen.Step("weather").WhenLatestUser(scenario.Matches(`weather in (?P<city>\w+)`)).
		TextFrom(scenario.TextFrom{Template: "{{capture.city}} is sunny, says {{model}}."})
	gen.Step("echo").TextFrom(scenario.TextFrom{Echo: true})
	gen.Step("summary").TextFrom(scenario.TextFrom{Summary: &scenario.Summary{MaxChars: 80, Sentences: 2}}).Complete()

	structured := scenario.New("structured")
	structured.Step("given").WhenLatestUser(scenario.Contains("Paris")).
		JSON(json.RawMessage(`{"city": "Paris", "temperature": 21.5, "unit": "celsius"}`))
	structured.Step("generated").GenerateJSON().Complete()

	for file, b := range map[string]*scenario.Builder{"named-tools.yaml": named, "generators.yaml": gen, "structured.yaml": structured} {
		fromFile, err := scenario.Load("testdata/valid/" + file)
		if err != nil {
			t.Fatal(err)
		}
		built, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(fromFile, built) {
			t.Errorf("%s and the builder differ:\n%+v\n%+v", file, fromFile, built)
		}
	}
}
