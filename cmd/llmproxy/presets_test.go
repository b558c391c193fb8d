package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

var presetNames = []string{
	"calculator", "current_time", "weather", "web_search", "fetch_url", "file_search",
	"read_file", "write_file", "list_files", "run_code", "shell", "apply_patch",
}

func runPresetsForTest(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = runPresets(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestPresetsTable(t *testing.T) {
	code, stdout, stderr := runPresetsForTest(t)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q; want 0 and nothing", code, stderr)
	}
	lines := strings.Split(stdout, "\n")
	header := lines[0]
	argsCol, descCol := strings.Index(header, "ARGUMENTS"), strings.Index(header, "DESCRIPTION")
	if !strings.HasPrefix(header, "NAME") || argsCol < 0 || descCol < argsCol {
		t.Fatalf("header = %q, want NAME, ARGUMENTS, DESCRIPTION", header)
	}
	rows := lines[1 : 1+len(presetNames)]
	for i, row := range rows {
		if got := strings.Fields(row)[0]; got != presetNames[i] {
			t.Errorf("row %d names %q, want %q", i, got, presetNames[i])
		}
		for _, col := range []int{argsCol, descCol} {
			if len(row) <= col || row[col-1] != ' ' || row[col] == ' ' {
				t.Errorf("row %q is not aligned with the header at column %d", row, col)
			}
		}
	}
	for _, want := range []string{"location, unit?", "path, offset?, length?", "expression"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks arguments %q:\n%s", want, stdout)
		}
	}
}

func TestPresetsOne(t *testing.T) {
	code, stdout, stderr := runPresetsForTest(t, "weather")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q; want 0 and nothing", code, stderr)
	}
	for _, want := range []string{
		"weather: Report the current weather",
		"Arguments schema:\n{\n  \"$schema\": \"https://json-schema.org/draft/2020-12/schema\",",
		"Result schema:\n{",
		"Error schema:\n{",
		`"fahrenheit"`,
		`"retryable"`,
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
}

func TestPresetsJSON(t *testing.T) {
	code, stdout, stderr := runPresetsForTest(t, "--json")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q; want 0 and nothing", code, stderr)
	}
	var all []struct {
		Name            string          `json:"name"`
		ArgumentsSchema json.RawMessage `json:"argumentsSchema"`
	}
	if err := json.Unmarshal([]byte(stdout), &all); err != nil {
		t.Fatalf("output is not a JSON array: %v\n%s", err, stdout)
	}
	if len(all) != len(presetNames) {
		t.Fatalf("got %d presets, want %d", len(all), len(presetNames))
	}
	for i, p := range all {
		if p.Name != presetNames[i] || len(p.ArgumentsSchema) == 0 {
			t.Errorf("preset %d = %q with schema %s, want %q with a schema", i, p.Name, p.ArgumentsSchema, presetNames[i])
		}
	}

	for _, args := range [][]string{{"web_search", "--json"}, {"-json", "web_search"}} {
		code, stdout, stderr := runPresetsForTest(t, args...)
		if code != 0 || stderr != "" {
			t.Fatalf("%q: exit %d, stderr %q; want 0 and nothing", args, code, stderr)
		}
		var one struct {
			Name         string         `json:"name"`
			ResultSchema map[string]any `json:"resultSchema"`
		}
		if err := json.Unmarshal([]byte(stdout), &one); err != nil {
			t.Fatalf("%q: output is not a JSON object: %v\n%s", args, err, stdout)
		}
		if one.Name != "web_search" || one.ResultSchema["type"] != "object" {
			t.Errorf("%q: got %+v, want web_search with its result schema", args, one)
		}
	}
}

func TestPresetsUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string // in stderr
	}{
		{"unknown preset", []string{"teleport"}, []string{`unknown preset "teleport"`, "calculator", "apply_patch"}},
		{"bad flag", []string{"--yaml"}, []string{"flag provided but not defined"}},
		{"two names", []string{"weather", "shell"}, []string{"at most one preset name"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runPresetsForTest(t, tc.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want nothing", stdout)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q lacks %q", stderr, w)
				}
			}
		})
	}
	if _, _, stderr := runPresetsForTest(t, "teleport"); strings.Count(stderr, "\n") != 1 {
		t.Errorf("unknown preset stderr = %q, want one line", stderr)
	}
}

func TestPresetsHelp(t *testing.T) {
	code, stdout, _ := runPresetsForTest(t, "-h")
	if code != 0 || !strings.Contains(stdout, "Usage: llmproxy presets") {
		t.Errorf("exit %d, stdout %q; want 0 and the usage", code, stdout)
	}
}
