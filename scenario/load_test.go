package scenario_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/presets"
	"github.com/llmproxy/llmproxy/scenario"
	"github.com/llmproxy/llmproxy/wire"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with the file at path, or rewrites it with -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run with -update to accept):\n--- got\n%s--- want\n%s", path, got, want)
	}
}

// checkFiles are the files of testdata/check, one per kind of problem.
func checkFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, glob := range []string{"*.yaml", "*.json"} {
		m, _ := filepath.Glob(filepath.Join("testdata", "check", glob))
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Fatal("no files in testdata/check")
	}
	return files
}

// TestCheckErrors loads each file of testdata/check and compares every
// problem, as FILE:LINE: message, with the file's .err golden.
func TestCheckErrors(t *testing.T) {
	for _, file := range checkFiles(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			s, err := scenario.Load(file)
			if err == nil {
				t.Fatalf("loaded %+v, want errors", s)
			}
			var list scenario.ErrorList
			if !errors.As(err, &list) || !errors.Is(err, scenario.ErrInvalid) {
				t.Fatalf("error %T %v is not an ErrorList wrapping ErrInvalid", err, err)
			}
			var out strings.Builder
			for _, e := range list {
				if e.File != file || e.Line < 1 {
					t.Errorf("error without its place: %q line %d: %v", e.File, e.Line, e)
				}
				out.WriteString(e.Error() + "\n")
			}
			golden(t, strings.TrimSuffix(file, filepath.Ext(file))+".err", []byte(out.String()))
		})
	}
}

// TestValidFilesLoad loads every file of testdata/valid.
func TestValidFilesLoad(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "valid", "*"))
	if len(files) < 3 {
		t.Fatalf("only %d valid files", len(files))
	}
	for _, file := range files {
		if _, err := scenario.Load(file); err != nil {
			t.Errorf("%v", err)
		}
	}
}

// TestFileAndBuilderAgree: the weather file and the same scenario built in Go
// are one value, and JSON gives what YAML gives.
func TestFileAndBuilderAgree(t *testing.T) {
	fromYAML, err := scenario.Load("testdata/valid/weather.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := scenario.Load("testdata/valid/weather.json")
	if err != nil {
		t.Fatal(err)
	}
	b := scenario.New("weather").OnExhausted(scenario.Reject).MaxSteps(50).Model("gpt-4o-mini")
	b.Fixture("paris", parisFixture(t, presets.WithID("call_paris"), presets.WithDelay(20*time.Millisecond)))
	b.Step("ask").WhenLatestUser(scenario.Equals("What's the weather in Paris?")).CallsFixture("paris").Then("answer")
	b.Step("answer").WhenFixtureResult("paris").Text("Paris is sunny, 21 °C.").Complete()
	built, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromYAML, built) {
		t.Errorf("YAML and builder differ:\n%+v\n%+v", fromYAML, built)
	}
	if !reflect.DeepEqual(fromYAML, fromJSON) {
		t.Errorf("YAML and JSON differ:\n%+v\n%+v", fromYAML, fromJSON)
	}
}

// TestEverythingFileAndBuilderAgree does the same for a file that uses every
// key of the format.
func TestEverythingFileAndBuilderAgree(t *testing.T) {
	fromFile, err := scenario.Load("testdata/valid/everything.yaml")
	if err != nil {
		t.Fatal(err)
	}
	down, err := presets.FetchURL.Failure(presets.FetchURLArgs{URL: "https://example.com"},
		presets.ToolError{Code: "unavailable", Message: "Scripted outage", Retryable: true})
	if err != nil {
		t.Fatal(err)
	}
	b := scenario.New("kitchen-sink").OnExhausted(scenario.Restart).MaxSteps(20).Model("any-model")
	b.Fixture("paris", parisFixture(t))
	b.Fixture("down", down)
	b.Step("first").
		WhenLatestUser(scenario.Matches(`(?i)weather`)).
		WhenSystem(scenario.Contains("helpful")).
		WhenModel("gpt-4o-mini").
		WhenAPI(wire.KindOpenAIChat).
		WhenToolsOffered("weather", "fetch_url").
		WhenJSON("temperature", 0.5).
		WhenJSON("metadata.run", map[string]any{"id": "r1", "tags": []string{"a", "b"}}).
		Reasoning("The user wants weather.").
		Text("Let me check.").
		CallsFixture("paris", "down").
		CallsPreset("calculator", map[string]string{"expression": "6*7"}, "call_calc").
		CallsFunction("lookup_order", map[string]any{"order": 42, "verbose": true}, "").
		Finish(wire.FinishToolCalls).
		Usage(100, 20).
		ID("chatcmpl-fixed").
		Created(time.Unix(1710000000, 0)).
		Delay(150*time.Millisecond).
		Stream(5, 30*time.Millisecond).
		Then("results", "fallback")
	b.Step("results").
		WhenFixtureResult("paris").
		WhenFixtureResult("down").
		WhenToolResult("lookup_order", "", map[string]int{"order": 42}, nil).
		Text("Paris is sunny; the page is down.").
		CutAfter(3).
		Then("busy")
	b.Step("fallback").WhenLatestUser(scenario.Equals("never mind")).Text("OK.").Then()
	b.Step("busy").Error(scenario.ErrorAnswer{Status: 529, Type: "overloaded_error", Message: "Overloaded", RetryAfter: 2 * time.Second})
	b.Step("").Text("Done.").Complete()
	built, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromFile, built) {
		t.Errorf("file and builder differ:\n%+v\n%+v", fromFile, built)
		for i := range min(len(fromFile.Steps), len(built.Steps)) {
			if !reflect.DeepEqual(fromFile.Steps[i], built.Steps[i]) {
				t.Errorf("step %d:\n%+v\n%+v", i, fromFile.Steps[i], built.Steps[i])
			}
		}
	}
}

// TestBuilderErrors: a builder reports every problem, each naming the
// scenario and the element.
func TestBuilderErrors(t *testing.T) {
	b := scenario.New("broken")
	b.Step("a").CallsPreset("weather", map[string]int{"location": 1}, "").Then("nowhere")
	b.Step("a").CallsFixture("missing")
	_, err := b.Build()
	var list scenario.ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("err = %v", err)
	}
	want := []string{
		`scenario broken: step "a": id: step id "a" is also step 1's`,
		`scenario broken: step "a": respond.tool-calls[0].arguments.location: must be string, got number (arguments schema of preset weather: type)`,
		`scenario broken: step "a": respond.tool-calls[0].fixture: no fixture is named "missing"`,
		`scenario broken: step "a": then: no step is named "nowhere"`,
	}
	var got []string
	for _, e := range list {
		got = append(got, e.Error())
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := scenario.NewEngine(&scenario.Scenario{Name: "x"}); !errors.Is(err, scenario.ErrInvalid) {
		t.Errorf("NewEngine of an empty scenario: %v", err)
	}
}

func TestParseEdgeCases(t *testing.T) {
	tests := []struct {
		name, file, data, want string
	}{
		{"empty", "e.yaml", "", "e.yaml:1: the file is empty"},
		{"two documents", "two.yaml", "steps: [{respond: {text: a}}]\n---\nsteps: []\n", "two.yaml:2: a scenario file holds one document"},
		{"default name from the file", "dir/my.scenario.yaml", "steps: [{respond: {text: a}}]", ""},
		{"bad default name", "dir/my scenario.yaml", "steps: [{respond: {text: a}}]", `dir/my scenario.yaml:1: name: "my scenario" is not a scenario name`},
		{"alias", "a.yaml", "x: &t {text: a}\nsteps: [{respond: *t}]", `a.yaml:1: unknown key "x"`},
		{"alias bomb", "bomb.yaml", aliasBomb(), "more than"},
		{"deep", "deep.yaml", "steps: [{respond: {tool-calls: [{function: f, arguments: {a: " + strings.Repeat("[", 300) + strings.Repeat("]", 300) + "}}]}}]", "nested deeper than 200"},
		{"yaml number forms", "n.yaml", "steps: [{when: {json: [{path: a, equals: 0x1F}, {path: b, equals: 1_000}, {path: c, equals: 1e3}]}, respond: {text: a}}]", ""},
		{"infinity is no JSON", "inf.yaml", "steps: [{when: {json: [{path: a, equals: .inf}]}, respond: {text: a}}]", "inf.yaml:1: step \"step-1\": when.json[0].equals: .inf is not a number JSON can hold"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := scenario.Parse(tt.file, []byte(tt.data))
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if tt.name == "default name from the file" && s.Name != "my" {
					t.Errorf("name = %q", s.Name)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

// aliasBomb is a YAML document whose aliases expand to 10^12 nodes.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 12; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 10), ", "))
	}
	b.WriteString("steps: [{respond: {tool-calls: [{function: f, arguments: {a: *a11}}]}}]\n")
	return b.String()
}
