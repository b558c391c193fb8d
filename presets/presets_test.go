package presets_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/presets"
	"github.com/llmproxy/llmproxy/wire"
)

// names is the catalogue order.
var names = []string{
	"calculator", "current_time", "weather", "web_search", "fetch_url", "file_search",
	"read_file", "write_file", "list_files", "run_code", "shell", "apply_patch",
}

var scriptedFailure = presets.ToolError{Code: "fixture_unavailable", Message: "scripted failure", Retryable: true}

// fixtures holds, for every preset, a success and a failure built through
// its typed API.
var fixtures = []struct {
	name    string
	success func() (presets.Fixture, error)
	failure func() (presets.Fixture, error)
}{
	{
		"calculator",
		func() (presets.Fixture, error) {
			return presets.Calculator.Success(presets.CalculatorArgs{Expression: "6 * 7"}, presets.CalculatorResult{Value: 42})
		},
		func() (presets.Fixture, error) {
			return presets.Calculator.Failure(presets.CalculatorArgs{Expression: "1 / 0"}, scriptedFailure)
		},
	},
	{
		"current_time",
		func() (presets.Fixture, error) {
			paris := time.FixedZone("CEST", 2*60*60)
			return presets.CurrentTime.Success(presets.CurrentTimeArgs{TimeZone: "Europe/Paris"},
				presets.CurrentTimeResult{Timestamp: time.Date(2025, 6, 1, 12, 30, 0, 0, paris), TimeZone: "Europe/Paris"})
		},
		func() (presets.Fixture, error) {
			return presets.CurrentTime.Failure(presets.CurrentTimeArgs{TimeZone: "Mars/Olympus"}, scriptedFailure)
		},
	},
	{
		"weather",
		func() (presets.Fixture, error) {
			return presets.Weather.Success(presets.WeatherArgs{Location: "Paris", Unit: presets.Celsius},
				presets.WeatherResult{Location: "Paris", Temperature: 21.5, Unit: presets.Celsius, Condition: "sunny"},
				presets.WithDelay(20*time.Millisecond))
		},
		func() (presets.Fixture, error) {
			return presets.Weather.Failure(presets.WeatherArgs{Location: "Paris"}, scriptedFailure)
		},
	},
	{
		"web_search",
		func() (presets.Fixture, error) {
			return presets.WebSearch.Success(presets.WebSearchArgs{Query: "golang", Limit: new(2)},
				presets.WebSearchResult{Hits: []presets.WebSearchHit{
					{Title: "The Go Programming Language", URL: "https://go.dev/", Snippet: "Build simple, secure, scalable systems"},
					{Title: "Go <docs> & more", URL: "https://go.dev/doc/", Snippet: "Documentation"},
				}}, presets.WithID("call_search_1"))
		},
		func() (presets.Fixture, error) {
			return presets.WebSearch.Failure(presets.WebSearchArgs{Query: "golang"}, scriptedFailure)
		},
	},
	{
		"fetch_url",
		func() (presets.Fixture, error) {
			return presets.FetchURL.Success(presets.FetchURLArgs{URL: "https://example.com/"},
				presets.FetchURLResult{Status: 200, ContentType: "text/html", Content: "<h1>Example</h1>"})
		},
		func() (presets.Fixture, error) {
			return presets.FetchURL.Failure(presets.FetchURLArgs{URL: "https://example.com/"}, presets.ToolError{Code: "timeout", Message: "no answer"})
		},
	},
	{
		"file_search",
		func() (presets.Fixture, error) {
			return presets.FileSearch.Success(presets.FileSearchArgs{Query: "TODO", Limit: new(100)},
				presets.FileSearchResult{Hits: []presets.FileSearchHit{{FileID: "f1", Path: "main.go", Snippet: "// TODO: tidy"}}})
		},
		func() (presets.Fixture, error) {
			return presets.FileSearch.Failure(presets.FileSearchArgs{Query: "TODO"}, scriptedFailure)
		},
	},
	{
		"read_file",
		func() (presets.Fixture, error) {
			return presets.ReadFile.Success(presets.ReadFileArgs{Path: "notes.txt", Offset: new(int64(0)), Length: new(int64(5))},
				presets.ReadFileResult{Content: "hello", Truncated: true})
		},
		func() (presets.Fixture, error) {
			return presets.ReadFile.Failure(presets.ReadFileArgs{Path: "missing.txt"}, presets.ToolError{Code: "not_found", Message: "no such file"})
		},
	},
	{
		"write_file",
		func() (presets.Fixture, error) {
			return presets.WriteFile.Success(presets.WriteFileArgs{Path: "notes.txt", Content: "hi", Append: new(false)},
				presets.WriteFileResult{BytesWritten: 2})
		},
		func() (presets.Fixture, error) {
			return presets.WriteFile.Failure(presets.WriteFileArgs{Path: "/etc/passwd", Content: "x"}, presets.ToolError{Code: "permission_denied", Message: "read-only"})
		},
	},
	{
		"list_files",
		func() (presets.Fixture, error) {
			return presets.ListFiles.Success(presets.ListFilesArgs{Path: ".", Recursive: new(true)},
				presets.ListFilesResult{Entries: []presets.FileEntry{
					{Path: "src", Kind: presets.KindDirectory},
					{Path: "src/main.go", Kind: presets.KindFile, Size: new(int64(0))},
				}})
		},
		func() (presets.Fixture, error) {
			return presets.ListFiles.Failure(presets.ListFilesArgs{Path: "/nope"}, scriptedFailure)
		},
	},
	{
		"run_code",
		func() (presets.Fixture, error) {
			return presets.RunCode.Success(presets.RunCodeArgs{Language: "python", Code: "print(1)"},
				presets.RunCodeResult{Stdout: "1\n", ExitCode: 0})
		},
		func() (presets.Fixture, error) {
			return presets.RunCode.Failure(presets.RunCodeArgs{Language: "cobol", Code: "x"}, presets.ToolError{Code: "unsupported_language", Message: "cobol"})
		},
	},
	{
		"shell",
		func() (presets.Fixture, error) {
			return presets.Shell.Success(presets.ShellArgs{Command: "ls", WorkingDirectory: "/tmp"},
				presets.ShellResult{Stderr: "ls: cannot access", ExitCode: 2})
		},
		func() (presets.Fixture, error) {
			return presets.Shell.Failure(presets.ShellArgs{Command: "sleep 1000"}, presets.ToolError{Code: "timeout", Message: "killed", Retryable: true})
		},
	},
	{
		"apply_patch",
		func() (presets.Fixture, error) {
			return presets.ApplyPatch.Success(presets.ApplyPatchArgs{Patch: "--- a/x\n+++ b/x\n"},
				presets.ApplyPatchResult{UpdatedPaths: []string{"x"}})
		},
		func() (presets.Fixture, error) {
			return presets.ApplyPatch.Failure(presets.ApplyPatchArgs{Patch: "garbage"}, presets.ToolError{Code: "bad_patch", Message: "no hunks"})
		},
	},
}

func TestCatalogue(t *testing.T) {
	var got []string
	for _, d := range presets.All() {
		got = append(got, d.Name())
		if d.Description() == "" {
			t.Errorf("%s: empty description", d.Name())
		}
		if l, ok := presets.Lookup(d.Name()); !ok || l.Name() != d.Name() {
			t.Errorf("Lookup(%q) = %q, %v; want the preset", d.Name(), l.Name(), ok)
		}
		if got, want := d.DefaultID(), "call_"+d.Name(); got != want {
			t.Errorf("%s: DefaultID() = %q, want %q", d.Name(), got, want)
		}
	}
	if !slices.Equal(got, names) {
		t.Errorf("All() names = %v, want %v", got, names)
	}
	if _, ok := presets.Lookup("calculate"); ok {
		t.Errorf("Lookup(%q) found a preset, want none", "calculate")
	}

	all := presets.All()
	all[0] = presets.Descriptor{}
	if got := presets.All()[0].Name(); got != "calculator" {
		t.Errorf("after editing a returned slice, All()[0] = %q, want calculator", got)
	}
}

func TestFixtureRoundTrip(t *testing.T) {
	if len(fixtures) != len(names) {
		t.Fatalf("fixture table has %d presets, want %d", len(fixtures), len(names))
	}
	for _, tc := range fixtures {
		for _, kind := range []string{"success", "failure"} {
			t.Run(tc.name+"/"+kind, func(t *testing.T) {
				build := tc.success
				if kind == "failure" {
					build = tc.failure
				}
				f, err := build()
				if err != nil {
					t.Fatalf("build: %v", err)
				}
				if f.Preset != tc.name || f.Call.Name != tc.name || f.Result.Name != tc.name {
					t.Errorf("names = %q/%q/%q, want %q", f.Preset, f.Call.Name, f.Result.Name, tc.name)
				}
				if f.Result.CallID != f.Call.ID {
					t.Errorf("result callId = %q, want the call id %q", f.Result.CallID, f.Call.ID)
				}
				if got, want := f.Result.IsError, kind == "failure"; got != want {
					t.Errorf("IsError = %v, want %v", got, want)
				}

				raw, err := json.Marshal(f)
				if err != nil {
					t.Fatalf("marshal: %v", err)
				}
				var back presets.Fixture
				if err := json.Unmarshal(raw, &back); err != nil {
					t.Fatalf("unmarshal %s: %v", raw, err)
				}
				if !reflect.DeepEqual(back, f) {
					t.Errorf("round trip:\ngot  %+v\nwant %+v", back, f)
				}
				if err := back.Validate(); err != nil {
					t.Errorf("Validate after round trip: %v", err)
				}

				d, _ := presets.Lookup(tc.name)
				if err := d.ValidateArguments(back.Call.Arguments); err != nil {
					t.Errorf("ValidateArguments(%s): %v", back.Call.Arguments, err)
				}
				validate := d.ValidateResult
				if kind == "failure" {
					validate = d.ValidateError
				}
				if err := validate(back.Result.Content); err != nil {
					t.Errorf("validate content %s: %v", back.Result.Content, err)
				}
				for _, payload := range []json.RawMessage{back.Call.Arguments, back.Result.Content} {
					canon, err := presets.Canonical(payload)
					if err != nil || !bytes.Equal(canon, payload) {
						t.Errorf("payload %s is not canonical: Canonical = %s, %v", payload, canon, err)
					}
				}
			})
		}
	}
}

func TestDefaultIDAndDelay(t *testing.T) {
	f, err := presets.Weather.Success(presets.WeatherArgs{Location: "Oslo"},
		presets.WeatherResult{Location: "Oslo", Temperature: -3, Unit: presets.Celsius, Condition: "snow"},
		presets.WithDelay(1500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if f.Call.ID != "call_weather" || f.Result.CallID != "call_weather" {
		t.Errorf("ids = %q, %q; want call_weather", f.Call.ID, f.Result.CallID)
	}
	raw, _ := json.Marshal(f)
	if !bytes.Contains(raw, []byte(`"delay":"1.5s"`)) {
		t.Errorf("fixture JSON %s lacks \"delay\":\"1.5s\"", raw)
	}
	g, _ := presets.Weather.Success(presets.WeatherArgs{Location: "Oslo"}, presets.WeatherResult{Unit: presets.Celsius})
	if raw, _ := json.Marshal(g); bytes.Contains(raw, []byte("delay")) {
		t.Errorf("fixture without delay marshals as %s, want no delay member", raw)
	}
}

func TestOptionalFieldsOmitted(t *testing.T) {
	tests := []struct {
		name string
		call func() (wire.ToolCall, error)
		want string
	}{
		{"weather without unit", func() (wire.ToolCall, error) {
			return presets.Weather.Call(presets.WeatherArgs{Location: "Paris"}, "")
		}, `{"location":"Paris"}`},
		{"web_search without limit", func() (wire.ToolCall, error) {
			return presets.WebSearch.Call(presets.WebSearchArgs{Query: "q"}, "")
		}, `{"query":"q"}`},
		{"read_file offset zero kept", func() (wire.ToolCall, error) {
			return presets.ReadFile.Call(presets.ReadFileArgs{Path: "p", Offset: new(int64(0))}, "")
		}, `{"offset":0,"path":"p"}`},
		{"write_file append false kept", func() (wire.ToolCall, error) {
			return presets.WriteFile.Call(presets.WriteFileArgs{Path: "p", Content: ""}, "")
		}, `{"content":"","path":"p"}`},
		{"list_files recursive false kept", func() (wire.ToolCall, error) {
			return presets.ListFiles.Call(presets.ListFilesArgs{Path: ".", Recursive: new(false)}, "")
		}, `{"path":".","recursive":false}`},
		{"shell without working directory", func() (wire.ToolCall, error) {
			return presets.Shell.Call(presets.ShellArgs{Command: "ls"}, "")
		}, `{"command":"ls"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tc.call()
			if err != nil {
				t.Fatal(err)
			}
			if got := string(c.Arguments); got != tc.want {
				t.Errorf("arguments = %s, want %s", got, tc.want)
			}
		})
	}

	r, err := presets.ListFiles.Result(presets.ListFilesResult{Entries: []presets.FileEntry{{Path: "d", Kind: presets.KindDirectory}}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(r.Content), `{"entries":[{"kind":"directory","path":"d"}]}`; got != want {
		t.Errorf("list_files content = %s, want %s", got, want)
	}
	r, err = presets.WebSearch.Result(presets.WebSearchResult{}, "")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(r.Content), `{"hits":[]}`; got != want {
		t.Errorf("empty web_search content = %s, want %s", got, want)
	}
}

func TestRejections(t *testing.T) {
	weatherArgs := presets.WeatherArgs{Location: "Paris"}
	tests := []struct {
		name     string
		do       func() error
		sentinel error
		want     []string // preset, field and rule, among others
	}{
		{
			"unknown argument",
			func() error {
				return presets.Weather.ValidateArguments([]byte(`{"location":"Paris","colour":"red"}`))
			},
			presets.ErrInvalidArguments,
			[]string{"presets: weather arguments:", "/colour", "unknown property", "(additionalProperties)"},
		},
		{
			"unknown property in a nested hit",
			func() error {
				return presets.WebSearch.ValidateResult([]byte(`{"hits":[{"title":"t","url":"u","snippet":"s","rank":1}]}`))
			},
			presets.ErrInvalidResult,
			[]string{"presets: web_search result:", "/hits/0/rank", "(additionalProperties)"},
		},
		{
			"unknown property in a list entry",
			func() error {
				return presets.ListFiles.ValidateResult([]byte(`{"entries":[{"path":"a","kind":"file","mode":"0644"}]}`))
			},
			presets.ErrInvalidResult,
			[]string{"presets: list_files result:", "/entries/0/mode", "(additionalProperties)"},
		},
		{
			"unknown property in the error envelope",
			func() error {
				return presets.Shell.ValidateError([]byte(`{"error":{"code":"c","message":"m","retryable":false,"status":500}}`))
			},
			presets.ErrInvalidResult,
			[]string{"presets: shell error:", "/error/status", "(additionalProperties)"},
		},
		{
			"web_search limit 0",
			func() error {
				_, err := presets.WebSearch.Call(presets.WebSearchArgs{Query: "q", Limit: new(0)}, "")
				return err
			},
			presets.ErrInvalidArguments,
			[]string{"presets: web_search arguments: /limit: must be >= 1 (minimum)"},
		},
		{
			"web_search limit 101",
			func() error {
				_, err := presets.WebSearch.Call(presets.WebSearchArgs{Query: "q", Limit: new(101)}, "")
				return err
			},
			presets.ErrInvalidArguments,
			[]string{"presets: web_search arguments: /limit: must be <= 100 (maximum)"},
		},
		{
			"file_search limit 0",
			func() error {
				_, err := presets.FileSearch.Call(presets.FileSearchArgs{Query: "q", Limit: new(0)}, "")
				return err
			},
			presets.ErrInvalidArguments,
			[]string{"presets: file_search arguments: /limit: must be >= 1 (minimum)"},
		},
		{
			"file_search limit 101",
			func() error {
				return presets.FileSearch.ValidateArguments([]byte(`{"query":"q","limit":101}`))
			},
			presets.ErrInvalidArguments,
			[]string{"presets: file_search arguments: /limit: must be <= 100 (maximum)"},
		},
		{
			"limit not an integer",
			func() error {
				return presets.WebSearch.ValidateArguments([]byte(`{"query":"q","limit":2.5}`))
			},
			presets.ErrInvalidArguments,
			[]string{"presets: web_search arguments: /limit: must be integer, got number (type)"},
		},
		{
			"negative read offset",
			func() error {
				_, err := presets.ReadFile.Call(presets.ReadFileArgs{Path: "p", Offset: new(int64(-1))}, "")
				return err
			},
			presets.ErrInvalidArguments,
			[]string{"presets: read_file arguments: /offset: must be >= 0 (minimum)"},
		},
		{
			"negative read length",
			func() error {
				return presets.ReadFile.ValidateArguments([]byte(`{"path":"p","length":-5}`))
			},
			presets.ErrInvalidArguments,
			[]string{"presets: read_file arguments: /length: must be >= 0 (minimum)"},
		},
		{
			"negative bytes written",
			func() error {
				_, err := presets.WriteFile.Result(presets.WriteFileResult{BytesWritten: -1}, "")
				return err
			},
			presets.ErrInvalidResult,
			[]string{"presets: write_file result: /bytesWritten: must be >= 0 (minimum)"},
		},
		{
			"unit kelvin",
			func() error {
				_, err := presets.Weather.Call(presets.WeatherArgs{Location: "Paris", Unit: "kelvin"}, "")
				return err
			},
			presets.ErrInvalidArguments,
			[]string{`presets: weather arguments: /unit: must be one of "celsius", "fahrenheit", got "kelvin" (enum)`},
		},
		{
			"entry kind socket",
			func() error {
				_, err := presets.ListFiles.Result(presets.ListFilesResult{Entries: []presets.FileEntry{{Path: "s", Kind: "socket"}}}, "")
				return err
			},
			presets.ErrInvalidResult,
			[]string{"presets: list_files result:", "/entries/0/kind", "(enum)"},
		},
		{
			"missing required argument",
			func() error {
				return presets.RunCode.ValidateArguments([]byte(`{"code":"print(1)"}`))
			},
			presets.ErrInvalidArguments,
			[]string{"presets: run_code arguments: /language: missing required property (required)"},
		},
		{
			"timestamp without offset",
			func() error {
				return presets.CurrentTime.ValidateResult([]byte(`{"timestamp":"2025-06-01T12:30:00","timeZone":"UTC"}`))
			},
			presets.ErrInvalidResult,
			[]string{"presets: current_time result:", "/timestamp", "date-time", "(format)"},
		},
		{
			"zero timestamp",
			func() error {
				_, err := presets.CurrentTime.Result(presets.CurrentTimeResult{TimeZone: "UTC"}, "")
				return err
			},
			presets.ErrInvalidResult,
			[]string{"presets: current_time result: /timestamp:", "never reads a clock", "(explicit)"},
		},
		{
			"error envelope without retryable",
			func() error {
				return presets.Calculator.ValidateError([]byte(`{"error":{"code":"c","message":"m"}}`))
			},
			presets.ErrInvalidResult,
			[]string{"presets: calculator error: /error/retryable: missing required property (required)"},
		},
		{
			"not JSON",
			func() error { return presets.Calculator.ValidateArguments([]byte(`{"expression":`)) },
			presets.ErrInvalidArguments,
			[]string{"presets: calculator arguments: invalid JSON", "(json)"},
		},
		{
			"blank id",
			func() error {
				_, err := presets.Weather.Call(weatherArgs, " \t ")
				return err
			},
			presets.ErrInvalidID,
			[]string{"presets: weather call: /id: must not be blank (nonblank)"},
		},
		{
			"blank result id",
			func() error {
				_, err := presets.Weather.Error(scriptedFailure, "  ")
				return err
			},
			presets.ErrInvalidID,
			[]string{"presets: weather result: /callId: must not be blank (nonblank)"},
		},
		{
			"empty explicit fixture id",
			func() error {
				_, err := presets.Weather.Failure(weatherArgs, scriptedFailure, presets.WithID(""))
				return err
			},
			presets.ErrInvalidID,
			[]string{"presets: weather call: /id: must not be blank (nonblank)"},
		},
		{
			"129-character id",
			func() error {
				_, err := presets.Weather.Call(weatherArgs, strings.Repeat("x", 129))
				return err
			},
			presets.ErrInvalidID,
			[]string{"presets: weather call: /id: must be at most 128 characters, got 129 (maxLength)"},
		},
		{
			"129-character fixture id",
			func() error {
				_, err := presets.Weather.Failure(weatherArgs, scriptedFailure, presets.WithID(strings.Repeat("é", 129)))
				return err
			},
			presets.ErrInvalidID,
			[]string{"presets: weather call: /id:", "got 129 (maxLength)"},
		},
		{
			"duplicate ids in one turn",
			func() error {
				a, _ := presets.Weather.Call(presets.WeatherArgs{Location: "Paris"}, "")
				b, _ := presets.Calculator.Call(presets.CalculatorArgs{Expression: "1+1"}, "call_1")
				c, _ := presets.Weather.Call(presets.WeatherArgs{Location: "Oslo"}, "")
				return presets.CheckTurn([]wire.ToolCall{a, b, c})
			},
			presets.ErrDuplicateID,
			[]string{`presets: weather turn: /2/id: "call_weather" is already the id of call 0 (unique)`},
		},
		{
			"blank id in a turn",
			func() error {
				return presets.CheckTurn([]wire.ToolCall{{ID: "", Name: "shell"}})
			},
			presets.ErrInvalidID,
			[]string{"presets: shell turn: /0/id: must not be blank (nonblank)"},
		},
		{
			"negative delay",
			func() error {
				_, err := presets.Weather.Failure(weatherArgs, scriptedFailure, presets.WithDelay(-time.Second))
				return err
			},
			presets.ErrInvalidDelay,
			[]string{"presets: weather fixture: /delay: must be >= 0, got -1s (minimum)"},
		},
		{
			"fixture of an unknown preset",
			func() error { return presets.Fixture{Preset: "teleport"}.Validate() },
			presets.ErrUnknownPreset,
			[]string{`"teleport"`},
		},
		{
			"fixture answering another call",
			func() error {
				f, _ := presets.Weather.Failure(weatherArgs, scriptedFailure)
				f.Result.CallID = "call_other"
				return f.Validate()
			},
			presets.ErrInvalidID,
			[]string{"presets: weather fixture: /result/callId:", "(const)"},
		},
		{
			"zero descriptor",
			func() error { return presets.Descriptor{}.ValidateArguments([]byte(`{}`)) },
			presets.ErrUnknownPreset,
			[]string{"presets:"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			if err == nil {
				t.Fatalf("got no error, want %v", tc.sentinel)
			}
			if !errors.Is(err, tc.sentinel) {
				t.Errorf("error %q is not %v", err, tc.sentinel)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestValidationErrorDetails(t *testing.T) {
	err := presets.ReadFile.ValidateArguments([]byte(`{"offset":-1,"mode":"r","length":1.5}`))
	var ve *presets.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %v is not a *ValidationError", err)
	}
	got := make([]string, len(ve.Violations))
	for i, v := range ve.Violations {
		got[i] = v.Path + " " + v.Rule
	}
	want := []string{"/length type", "/mode additionalProperties", "/offset minimum", "/path required"}
	if !slices.Equal(got, want) {
		t.Errorf("violations = %q, want %q", got, want)
	}
	if ve.Preset != "read_file" || ve.Part != "arguments" {
		t.Errorf("Preset, Part = %q, %q; want read_file, arguments", ve.Preset, ve.Part)
	}
}

func TestIDLimits(t *testing.T) {
	tests := []struct {
		id   string
		want string
	}{
		{"", "call_calculator"},
		{strings.Repeat("x", 128), strings.Repeat("x", 128)},
		{strings.Repeat("é", 128), strings.Repeat("é", 128)},
		{" padded ", " padded "},
	}
	for _, tc := range tests {
		c, err := presets.Calculator.Call(presets.CalculatorArgs{Expression: "1"}, tc.id)
		if err != nil {
			t.Errorf("Call(id %q): %v", tc.id, err)
			continue
		}
		if c.ID != tc.want {
			t.Errorf("Call(id %q).ID = %q, want %q", tc.id, c.ID, tc.want)
		}
	}
	a, _ := presets.Calculator.Call(presets.CalculatorArgs{Expression: "1"}, "call_a")
	b, _ := presets.Calculator.Call(presets.CalculatorArgs{Expression: "2"}, "call_b")
	if err := presets.CheckTurn([]wire.ToolCall{a, b}); err != nil {
		t.Errorf("CheckTurn(distinct ids) = %v, want nil", err)
	}
}

func TestParse(t *testing.T) {
	args, err := presets.ReadFile.ParseArguments([]byte(`{"path":"a.txt","length":10}`))
	if err != nil {
		t.Fatal(err)
	}
	if args.Path != "a.txt" || args.Offset != nil || args.Length == nil || *args.Length != 10 {
		t.Errorf("ParseArguments = %+v, want path a.txt, no offset, length 10", args)
	}
	res, err := presets.CurrentTime.ParseResult([]byte(`{"timeZone":"Asia/Tokyo","timestamp":"2025-01-02T03:04:05+09:00"}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2025, 1, 1, 18, 4, 5, 0, time.UTC); !res.Timestamp.Equal(want) {
		t.Errorf("timestamp = %v, want %v", res.Timestamp, want)
	}
	if _, err := presets.WebSearch.ParseArguments([]byte(`{"query":"q","limit":0}`)); !errors.Is(err, presets.ErrInvalidArguments) {
		t.Errorf("ParseArguments(limit 0) error = %v, want ErrInvalidArguments", err)
	}
}

func TestCanonical(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{`{ "b": 1, "a": {"d": [3, 2], "c": null} }`, `{"a":{"c":null,"d":[3,2]},"b":1}`},
		{`{"html":"<a href=\"x\">&</a>"}`, `{"html":"<a href=\"x\">&</a>"}`},
		{`{"n":1.50,"big":12345678901234567890,"e":1e3}`, `{"big":12345678901234567890,"e":1e3,"n":1.50}`},
		{"\n[1, \"é\"]\n", `[1,"é"]`},
	}
	for _, tc := range tests {
		got, err := presets.Canonical([]byte(tc.in))
		if err != nil {
			t.Errorf("Canonical(%s): %v", tc.in, err)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("Canonical(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{``, `{`, `{} {}`, `{"a":1}x`} {
		if _, err := presets.Canonical([]byte(bad)); err == nil {
			t.Errorf("Canonical(%q) succeeded, want an error", bad)
		}
	}
}

// TestSchemasClosed walks every schema and checks that each object schema
// rejects unknown properties.
func TestSchemasClosed(t *testing.T) {
	if got := duplicateKey(t, []byte(`{"a":{},"b":[{"c":1,"c":2}]}`)); got != "c" {
		t.Fatalf("duplicateKey found %q, want c", got)
	}
	var walk func(name string, path string, v any)
	walk = func(name, path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if v["type"] == "object" {
				if ap, ok := v["additionalProperties"]; !ok || ap != false {
					t.Errorf("%s %s: additionalProperties = %v, want false", name, path, ap)
				}
			}
			for k, child := range v {
				walk(name, path+"/"+k, child)
			}
		case []any:
			for _, child := range v {
				walk(name, path+"/[]", child)
			}
		}
	}
	for _, d := range presets.All() {
		for part, raw := range map[string][]byte{"arguments": d.ArgumentsSchema(), "result": d.ResultSchema(), "error": d.ErrorSchema()} {
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatalf("%s %s schema: %v", d.Name(), part, err)
			}
			if got := v.(map[string]any)["$schema"]; got != "https://json-schema.org/draft/2020-12/schema" {
				t.Errorf("%s %s: $schema = %v, want draft 2020-12", d.Name(), part, got)
			}
			walk(d.Name()+" "+part, "", v)
		}
		for shape, raw := range map[string][]byte{
			"arguments": d.ArgumentsSchema(), "result": d.ResultSchema(), "error": d.ErrorSchema(),
			"openai chat": d.OpenAIChatTool(), "responses": d.ResponsesTool(),
			"anthropic": d.AnthropicTool(), "gemini": d.GeminiFunctionDeclaration(),
		} {
			if dup := duplicateKey(t, raw); dup != "" {
				t.Errorf("%s %s: key %q appears twice in one object", d.Name(), shape, dup)
			}
		}
	}
}

// duplicateKey returns a key that appears twice in one object of raw, or "".
func duplicateKey(t *testing.T, raw []byte) string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	type frame struct {
		object bool
		keys   map[string]bool
		key    bool // the next string token is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			if err == io.EOF {
				return ""
			}
			t.Fatalf("tokens of %s: %v", raw, err)
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if k, ok := tok.(string); ok && top != nil && top.object && top.key {
			if top.keys[k] {
				return k
			}
			top.keys[k] = true
			top.key = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, keys: map[string]bool{}, key: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value ended; in an object, a key comes next.
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].key = true
		}
	}
}

func TestParams(t *testing.T) {
	got := presets.ReadFile.Params()
	want := []presets.Param{{Name: "path", Required: true}, {Name: "offset"}, {Name: "length"}}
	if !slices.Equal(got, want) {
		t.Errorf("ReadFile.Params() = %+v, want %+v", got, want)
	}
}

func TestDescriptorJSON(t *testing.T) {
	raw, err := json.Marshal(presets.All())
	if err != nil {
		t.Fatal(err)
	}
	var got []struct {
		Name            string          `json:"name"`
		Description     string          `json:"description"`
		ArgumentsSchema json.RawMessage `json:"argumentsSchema"`
		ResultSchema    json.RawMessage `json:"resultSchema"`
		ErrorSchema     json.RawMessage `json:"errorSchema"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(names) {
		t.Fatalf("catalogue JSON has %d presets, want %d", len(got), len(names))
	}
	for i, d := range presets.All() {
		if got[i].Name != d.Name() || !bytes.Equal(got[i].ResultSchema, d.ResultSchema()) {
			t.Errorf("entry %d = %s, want %s", i, got[i].Name, d.Name())
		}
	}
}

// TestConcurrentValidation runs first uses of the lazily compiled schemas
// from many goroutines at once; run it with -race.
func TestConcurrentValidation(t *testing.T) {
	var wg sync.WaitGroup
	for range 8 {
		for _, d := range presets.All() {
			wg.Go(func() {
				if err := d.ValidateError([]byte(`{"error":{"code":"c","message":"m","retryable":false}}`)); err != nil {
					t.Errorf("%s: %v", d.Name(), err)
				}
				if err := d.ValidateArguments([]byte(`{"surprise":true}`)); !errors.Is(err, presets.ErrInvalidArguments) {
					t.Errorf("%s: error = %v, want ErrInvalidArguments", d.Name(), err)
				}
			})
		}
	}
	wg.Wait()
}
