package node_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"github.com/llmproxy/llmproxy/internal/exampletest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestNodeTestPackage runs the own tests of clients/node (@llmproxy/test):
// names, the control client, starting a proxy and per-test sessions, against
// the package's fake binary. They need node and no installed package.
func TestNodeTestPackage(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		exampletest.Skip(t, "node is not installed")
	}
	dir, err := filepath.Abs("../../clients/node")
	if err != nil {
		t.Fatal(err)
	}
	out, err := nodeRun(t, dir, nil, "node", "--test", "test/package.test.js")
	if err != nil {
		t.Fatalf("node --test in clients/node: %v\n%s", err, out)
	}
}

// pluginRunner is how examples/node-plugins runs its two tests under one
// test runner: the command, and how to read each test's outcome and failure
// text from the run.
type pluginRunner struct {
	name string
	// args runs the tests, writing a report to the file report names.
	args func(report, tmp string) []string
	// outcomes reads the report into test name -> outcome.
	outcomes func(t *testing.T, report string, stdout []byte) map[string]pluginOutcome
	// parallel: the two test files run at once in two workers, each with
	// its own proxy.
	parallel bool
}

// pluginOutcome is one test's status (passed or failed) and failure text.
type pluginOutcome struct {
	status  string
	failure string
}

// jsonOutcomes reads the report vitest's json reporter and jest's --json
// write alike.
func jsonOutcomes(t *testing.T, report string, _ []byte) map[string]pluginOutcome {
	t.Helper()
	raw, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		TestResults []struct {
			AssertionResults []struct {
				FullName        string   `json:"fullName"`
				Status          string   `json:"status"`
				FailureMessages []string `json:"failureMessages"`
			} `json:"assertionResults"`
		} `json:"testResults"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("%s: %v", report, err)
	}
	out := map[string]pluginOutcome{}
	for _, f := range r.TestResults {
		for _, a := range f.AssertionResults {
			out[a.FullName] = pluginOutcome{a.Status, strings.Join(a.FailureMessages, "\n")}
		}
	}
	return out
}

// tapOutcomes reads node --test's TAP output: "ok N - name" or "not ok N -
// name", each followed by its indented YAML block.
func tapOutcomes(t *testing.T, _ string, stdout []byte) map[string]pluginOutcome {
	t.Helper()
	out := map[string]pluginOutcome{}
	var last string
	for _, line := range strings.Split(string(stdout), "\n") {
		trimmed := strings.TrimSpace(line)
		status := ""
		rest := ""
		if s, ok := strings.CutPrefix(trimmed, "not ok "); ok {
			status, rest = "failed", s
		} else if s, ok := strings.CutPrefix(trimmed, "ok "); ok {
			status, rest = "passed", s
		}
		if _, name, ok := strings.Cut(rest, " - "); ok && status != "" {
			last = name
			out[name] = pluginOutcome{status: status}
			continue
		}
		if o, ok := out[last]; ok && last != "" {
			o.failure += line + "\n"
			out[last] = o
		}
	}
	return out
}

var pluginRunners = []pluginRunner{
	{
		name: "vitest",
		args: func(report, _ string) []string {
			return []string{"node", "node_modules/vitest/vitest.mjs", "run", "--pool=threads", "--maxWorkers=2", "--minWorkers=2",
				"--reporter=json", "--outputFile=" + report}
		},
		outcomes: jsonOutcomes,
		parallel: true,
	},
	{
		name: "jest",
		args: func(report, tmp string) []string {
			// A cache of no earlier run, not even the record step's of the
			// same test (report names the step): with the timings of a run
			// whose files took under a second each, jest runs them in band.
			return []string{"node", "--experimental-vm-modules", "node_modules/jest/bin/jest.js", "--maxWorkers=2",
				"--cacheDirectory=" + filepath.Join(tmp, "jest-cache-"+filepath.Base(report)), "--json", "--outputFile=" + report}
		},
		outcomes: jsonOutcomes,
		parallel: true,
	},
	{
		name: "node",
		args: func(string, string) []string {
			// node/openai.test.js imports the helper, node/anthropic.test.js
			// relies on --import.
			return []string{"node", "--import", "@llmproxy/test/node", "--test", "--test-reporter=tap", "node/"}
		},
		outcomes: tapOutcomes,
	},
}

// The tests of examples/node-plugins by their full names: vitest and jest
// name the describe block, node:test has none.
const (
	pluginOpenAITest    = "answers the weather in a city"
	pluginAnthropicTest = "streams the weather in Tokyo"
)

// TestNodePlugins runs examples/node-plugins — two tests, OpenAI Chat
// Completions and a streamed Anthropic Messages call through the npm SDKs —
// under vitest (--pool=threads, two files at once), jest (two workers) and
// node:test with @llmproxy/test: recorded per test through the example's
// fake upstream into a cassette each, replayed per test with no upstream and
// no key, and replayed with the OpenAI question changed, which must fail
// that test alone with the difference in its report.
func TestNodePlugins(t *testing.T) {
	dir := exampletest.NodeProject(t, "../../examples/node-plugins")
	bin := exampletest.BuildLLMProxy(t)
	upstream := startFakeUpstream(t, dir)
	for _, r := range pluginRunners {
		t.Run(r.name, func(t *testing.T) {
			tmp := t.TempDir()
			cas := filepath.Join(tmp, "cas")
			base := map[string]string{"LLMPROXY_BIN": bin, "LLMPROXY_CASSETTE_DIR": cas}
			run := func(step string, extra map[string]string) map[string]pluginOutcome {
				t.Helper()
				report := filepath.Join(tmp, step+".json")
				env := map[string]string{}
				for k, v := range base {
					env[k] = v
				}
				for k, v := range extra {
					env[k] = v
				}
				out, err := nodeRun(t, dir, env, r.args(report, tmp)...)
				got := r.outcomes(t, report, out)
				if len(got) != 2 {
					t.Fatalf("%s: %d test outcomes, want 2 (%v)\n%s", step, len(got), err, out)
				}
				return got
			}
			recorded := run("record", map[string]string{
				"LLMPROXY_MODE": "record", "LLMPROXY_UPSTREAM": upstream + ",anthropic=" + upstream,
				"OPENAI_API_KEY": pluginOpenAIKey, "ANTHROPIC_API_KEY": pluginAnthropicKey,
			})
			wantOutcomes(t, "record", recorded, "passed", "passed")
			for _, name := range []string{"openai.test/" + pluginOpenAITest, "anthropic.test/" + pluginCassetteName(r, pluginAnthropicTest)} {
				file, test, _ := strings.Cut(name, "/")
				path := filepath.Join(cas, "cassettes", r.name, file, nonName.ReplaceAllString(test, "_")+".cassette")
				if n := exampletest.Interactions(t, path); n != 1 {
					t.Errorf("%s: %d interactions, want 1", path, n)
				}
				raw, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				for _, key := range []string{pluginOpenAIKey, pluginAnthropicKey} {
					if bytes.Contains(raw, []byte(key)) {
						t.Errorf("%s holds the key %q", path, key)
					}
				}
			}
			trace := filepath.Join(tmp, "trace")
			if err := os.Mkdir(trace, 0o755); err != nil {
				t.Fatal(err)
			}
			wantOutcomes(t, "replay", run("replay", map[string]string{"EXAMPLE_TRACE_DIR": trace}), "passed", "passed")
			if r.parallel {
				wantTwoWorkers(t, trace)
			}
			changed := run("changed", map[string]string{"EXAMPLE_CITY": "Lyon"})
			wantOutcomes(t, "changed", changed, "failed", "passed")
			failure := pluginOutcomeOf(r, changed, pluginOpenAITest).failure
			for _, want := range []string{
				"1 request of this test missed its cassette",
				`got "What is the weather in Lyon?", recorded "What is the weather in Paris?"`,
			} {
				if !strings.Contains(failure, want) {
					t.Errorf("changed: the failure of %q lacks %q:\n%s", pluginOpenAITest, want, failure)
				}
			}
		})
	}
}

// nonName matches what @llmproxy/test's sanitize turns into one underscore
// in a test's cassette name.
var nonName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// pluginCassetteName is the Anthropic test's full name as the runner gives
// it: vitest and jest put its describe block first.
func pluginCassetteName(r pluginRunner, test string) string {
	switch r.name {
	case "vitest":
		return "anthropic > " + test
	case "jest":
		return "anthropic " + test
	}
	return test
}

// pluginOutcomeOf is the outcome of test in got, under the runner's full name.
func pluginOutcomeOf(r pluginRunner, got map[string]pluginOutcome, test string) pluginOutcome {
	if o, ok := got[test]; ok {
		return o
	}
	return got[pluginCassetteName(r, test)]
}

// wantOutcomes checks the OpenAI and the Anthropic test's status.
func wantOutcomes(t *testing.T, step string, got map[string]pluginOutcome, openai, anthropic string) {
	t.Helper()
	for _, name := range []string{pluginOpenAITest, pluginAnthropicTest} {
		want := openai
		if name == pluginAnthropicTest {
			want = anthropic
		}
		var o pluginOutcome
		var found bool
		for full, v := range got {
			if strings.HasSuffix(full, name) {
				o, found = v, true
			}
		}
		if !found || o.status != want {
			t.Errorf("%s: %q is %q (found %v), want %q\n%s", step, name, o.status, found, want, o.failure)
		}
	}
}

// wantTwoWorkers checks the example's trace: its two tests ran in two
// workers, each with a proxy of its own.
func wantTwoWorkers(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	workers, proxies := map[string]bool{}, map[string]bool{}
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var tr struct{ Worker, Proxy string }
		if err := json.Unmarshal(raw, &tr); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		workers[tr.Worker], proxies[tr.Proxy] = true, true
	}
	if len(entries) != 2 || len(workers) != 2 || len(proxies) != 2 {
		t.Errorf("%d traced tests in workers %v with proxies %v; want 2 tests in 2 workers with 2 proxies", len(entries), workers, proxies)
	}
}

// The keys the runners record with; they must never reach a cassette.
const (
	pluginOpenAIKey    = "sk-plugin-openai-SECRET-41c7e2"
	pluginAnthropicKey = "sk-ant-plugin-SECRET-9d0b5a"
)

// startFakeUpstream starts examples/node-plugins/fake-upstream.js and
// returns its URL; it is killed when the test ends.
func startFakeUpstream(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command("node", "fake-upstream.js")
	cmd.Dir = dir
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "fake upstream listening on ")
	if err != nil || !ok {
		t.Fatalf("fake upstream: first line %q: %v", line, err)
	}
	return url
}

// nodeRun runs args in dir with the environment of the test less the
// variables of llmproxy, the provider keys and the SDK base URLs, plus env;
// it returns the combined output.
func nodeRun(t *testing.T, dir string, env map[string]string, args ...string) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "LLMPROXY_") || strings.HasSuffix(name, "_API_KEY") || strings.HasSuffix(name, "_BASE_URL") ||
			name == "OLLAMA_HOST" || name == "NODE_TEST_CONTEXT" {
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Env = append(cmd.Env, "NO_COLOR=1", "npm_config_update_notifier=false")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd.CombinedOutput()
}
