package presets_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/presets"
	"github.com/llmproxy/llmproxy/proxy"
)

// fixtureCassette writes a cassette holding the given stored fixtures.
func fixtureCassette(t *testing.T, fixtures map[string]json.RawMessage) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fixtures.cassette")
	c, err := cassette.Open(path, cassette.Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	keys := func(i *cassette.Interaction) (string, string, error) {
		return "k" + strconv.FormatUint(i.ID, 10), "s", nil
	}
	if err := c.Replace(&cassette.Contents{Fixtures: fixtures}, keys); err != nil {
		t.Fatal(err)
	}
	return path
}

// storedFixtures are a success (for a mapped tool) and a failure, as scrub
// stores them.
func storedFixtures(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	weather, err := presets.Weather.Success(
		presets.WeatherArgs{Location: "Paris", Unit: presets.Celsius},
		presets.WeatherResult{Location: "Paris", Temperature: 21, Unit: presets.Celsius, Condition: "sunny"},
		presets.WithID("call_weather"))
	if err != nil {
		t.Fatal(err)
	}
	shell, err := presets.Shell.Failure(presets.ShellArgs{Command: "rm -rf /"},
		presets.ToolError{Code: "denied", Message: "not allowed"}, presets.WithID("call_shell"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]json.RawMessage{}
	for _, f := range []presets.CassetteFixture{{Fixture: weather, Function: "get_weather"}, {Fixture: shell}} {
		raw, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		out[f.Call.ID] = raw
	}
	return out
}

const deniedEnvelope = `{"error":{"code":"denied","message":"not allowed","retryable":false}}`

// executors returns the two kinds of executor over the same fixtures: one
// reading the cassette file, one asking a replaying proxy serving it.
func executors(t *testing.T) map[string]*presets.Executor {
	t.Helper()
	path := fixtureCassette(t, storedFixtures(t))
	fromFile, err := presets.NewCassetteExecutor(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	p, err := proxy.New(proxy.Config{Mode: proxy.ModeReplay, Cassette: c, AdminToken: "admin-secret"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	fromProxy, err := presets.NewProxyExecutor(srv.URL+"/", presets.WithAdminToken("admin-secret"), presets.WithHTTPClient(srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	return map[string]*presets.Executor{"cassette": fromFile, "proxy": fromProxy}
}

func TestExecutor(t *testing.T) {
	ctx := context.Background()
	for name, exec := range executors(t) {
		t.Run(name, func(t *testing.T) {
			cases := []struct {
				call    presets.ToolCall
				content string
				isError bool
				err     error
			}{
				{presets.ToolCall{ID: "call_weather", Name: "get_weather", Arguments: json.RawMessage(`{"location":"Paris"}`)},
					`{"condition":"sunny","location":"Paris","temperature":21,"unit":"celsius"}`, false, nil},
				{presets.ToolCall{ID: "call_shell", Name: "shell"}, deniedEnvelope, true, nil},
				{presets.ToolCall{ID: "call_other", Name: "shell"}, "", false, presets.ErrNoFixture},
				{presets.ToolCall{Name: "shell"}, "", false, presets.ErrNoFixture},
			}
			for _, tc := range cases {
				got, err := exec.Execute(ctx, tc.call)
				if !errors.Is(err, tc.err) {
					t.Errorf("Execute(%s %s): %v, want %v", tc.call.Name, tc.call.ID, err, tc.err)
					continue
				}
				if err != nil {
					if !strings.Contains(err.Error(), tc.call.Name) || !strings.Contains(err.Error(), tc.call.ID) {
						t.Errorf("error %q should name the call", err)
					}
					continue
				}
				if string(got.Content) != tc.content || got.IsError != tc.isError || got.CallID != tc.call.ID || got.Name != tc.call.Name {
					t.Errorf("Execute(%s) = %+v (%s), want %s, isError %t", tc.call.ID, got, got.Content, tc.content, tc.isError)
				}
			}
		})
	}
}

func TestExecutorErrors(t *testing.T) {
	ctx := context.Background()
	missing := filepath.Join(t.TempDir(), "missing.cassette")
	if _, err := presets.NewCassetteExecutor(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("NewCassetteExecutor(missing) = %v, want an error naming the file", err)
	}
	bad := fixtureCassette(t, map[string]json.RawMessage{"call_bad": json.RawMessage(`{"preset":"weather","call":{"id":"call_bad","name":"weather","arguments":{}}}`)})
	if _, err := presets.NewCassetteExecutor(bad); err == nil || !strings.Contains(err.Error(), "call_bad") || !strings.Contains(err.Error(), bad) {
		t.Errorf("NewCassetteExecutor(bad fixture) = %v, want an error naming the call and the file", err)
	}
	for _, u := range []string{"", "127.0.0.1:7878", "ftp://host/"} {
		if _, err := presets.NewProxyExecutor(u); err == nil {
			t.Errorf("NewProxyExecutor(%q) accepted it", u)
		}
	}
	// Without the admin token the proxy refuses, and the error says so.
	path := fixtureCassette(t, storedFixtures(t))
	c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := proxy.New(proxy.Config{Mode: proxy.ModeReplay, Cassette: c, AdminToken: "admin-secret"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	exec, err := presets.NewProxyExecutor(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, err = exec.Execute(ctx, presets.ToolCall{ID: "call_weather", Name: "weather"})
	if err == nil || errors.Is(err, presets.ErrNoFixture) || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "call_weather") {
		t.Errorf("Execute without the admin token: %v, want a 401 naming the call", err)
	}
}
