package main

import (
	"github.com/llmproxy/llmproxy/internal/exampletest"
	"strings"
	"testing"
)

// mapScenario answers a result for the weather fixture, whose function
// name --map decides.
const mapScenario = `version: 1
name: mapped
fixtures:
  paris:
    preset: weather
    arguments: {location: Paris, unit: celsius}
    result: {location: Paris, temperature: 21, unit: celsius, condition: sunny}
steps:
  - when: {tool-result: {fixture: paris}}
    respond: {text: "Sunny."}
`

// mapResultBody sends the paris result for the application's get_weather
// call.
const mapResultBody = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Weather?"},` +
	`{"role":"assistant","tool_calls":[{"id":"call_get_weather","type":"function","function":{"name":"get_weather","arguments":"{\"location\":\"Paris\",\"unit\":\"celsius\"}"}}]},` +
	`{"role":"tool","tool_call_id":"call_get_weather","content":"{\"location\":\"Paris\",\"temperature\":21,\"unit\":\"celsius\",\"condition\":\"sunny\"}"}]}`

// TestMockMap: --map get_weather=weather makes the scenario's weather
// fixture the application's get_weather (name and default id), as scrub's
// --map does for a cassette; without it the same request misses.
func TestMockMap(t *testing.T) {
	exampletest.Unsetenv(t, "LLMPROXY_LISTEN")
	file := writeFile(t, "mapped.yaml", mapScenario)
	tests := []struct {
		name  string
		flags []string
		code  int
	}{
		{"mapped", []string{"--map", "get_weather=weather"}, 0},
		{"unmapped", nil, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(childRole, "post="+mapResultBody)
			args := append([]string{"mock", "--scenario", file, "--pace", "instant"}, tt.flags...)
			code, stdout, stderr := cli(t, append(append(args, "--"), self(t))...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstdout %s\nstderr %s", code, tt.code, stdout, stderr)
			}
		})
	}
}

func TestMockMapUsage(t *testing.T) {
	file := writeFile(t, "mapped.yaml", mapScenario)
	tests := []struct {
		maps []string
		says string
	}{
		{[]string{"get_weather=wether"}, `unknown preset "wether"`},
		{[]string{"get_weather"}, "want TOOL=PRESET"},
		{[]string{"a=weather", "b=weather"}, "the preset weather is already named a"},
	}
	for _, tt := range tests {
		args := []string{"mock", "--scenario", file, "--listen", "127.0.0.1:0"}
		for _, m := range tt.maps {
			args = append(args, "--map", m)
		}
		code, _, stderr := runCLI(t, args...)
		if code != 2 || !strings.Contains(stderr, tt.says) {
			t.Errorf("%v: exit %d, stderr %q; want 2 saying %q", tt.maps, code, stderr, tt.says)
		}
	}
}
