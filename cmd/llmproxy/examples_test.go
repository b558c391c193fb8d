package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/internal/exampletest"
	"github.com/llmproxy/llmproxy/internal/fake"
)

// exampleLoop is the conversation the fake providers play for the example
// clients: examples/node/clients.test.mjs and examples/langchaingo expect
// its Answer.
var exampleLoop = fake.ToolLoop{Tool: "weather", Args: `{"location":"Paris","unit":"celsius"}`, CallID: "call_example", Answer: "It is sunny in Paris."}

// openAIScript answers Chat Completions and Responses requests alike, as
// the OpenAI API does on one host.
func openAIScript(l fake.ToolLoop) fake.Script {
	chat, responses := fake.OpenAIChat(l), fake.OpenAIResponses(l)
	return fake.ScriptFunc(func(r *fake.Request) *fake.Response {
		if strings.HasSuffix(r.Path, "/responses") {
			return responses.Respond(r)
		}
		return chat.Respond(r)
	})
}

// cliWait is cli with a longer bound, for commands that run a test suite.
func cliWait(t *testing.T, d time.Duration, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var out, errb bytes.Buffer
	code = run(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

// exampleKeys are the API keys the example clients record with: they must
// reach the fake providers and never the cassette.
const (
	exampleOpenAIKey    = "sk-example-openai-SECRET-7f3a9c"
	exampleAnthropicKey = "sk-ant-example-SECRET-51be02"
)

// recordExample records CMD through the wrapper against fake OpenAI and
// Anthropic providers that insist on the example keys, scrubs the cassette
// strictly, checks that no key is in its bytes, and returns its path. The
// fake providers are shut down when it returns.
func recordExample(t *testing.T, cmd ...string) string {
	t.Helper()
	openaiUp := fake.New(t, openAIScript(exampleLoop), fake.RequireHeader("Authorization", "Bearer "+exampleOpenAIKey))
	// Anthropic clients send the key as X-Api-Key or, the newer ones, as a
	// bearer token: checked below.
	antUp := fake.New(t, fake.AnthropicMessages(exampleLoop))
	t.Setenv("OPENAI_API_KEY", exampleOpenAIKey)
	t.Setenv("ANTHROPIC_API_KEY", exampleAnthropicKey)
	cas := filepath.Join(t.TempDir(), "example.cassette")
	args := []string{"record", "--cassette", cas, "--upstream", openaiUp.URL(), "--upstream", "anthropic=" + antUp.URL(), "--"}
	code, stdout, stderr := cliWait(t, 5*time.Minute, append(args, cmd...)...)
	if code != 0 {
		t.Fatalf("record: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	openaiUp.Close()
	antUp.Close()
	if openaiUp.Hits() == 0 || antUp.Hits() == 0 {
		t.Fatalf("the fake providers saw %d (openai) and %d (anthropic) requests; want some of each", openaiUp.Hits(), antUp.Hits())
	}
	for _, r := range antUp.Requests() {
		if r.Header.Get("X-Api-Key") != exampleAnthropicKey && r.Header.Get("Authorization") != "Bearer "+exampleAnthropicKey {
			t.Errorf("anthropic request %s without the key: X-Api-Key %q, Authorization %q", r.Path, r.Header.Get("X-Api-Key"), r.Header.Get("Authorization"))
		}
	}
	code, stdout, stderr = cliWait(t, time.Minute, "scrub", "--strict", "--cassette", cas)
	if code != 0 {
		t.Fatalf("scrub: exit %d\n%s%s", code, stdout, stderr)
	}
	t.Logf("scrub:\n%s", stdout)
	raw, err := os.ReadFile(cas)
	if err != nil {
		t.Fatal(err)
	}
	code, export, stderr := cliWait(t, time.Minute, "export", "--cassette", cas)
	if code != 0 {
		t.Fatalf("export: exit %d\n%s", code, stderr)
	}
	for _, key := range []string{exampleOpenAIKey, exampleAnthropicKey, "SECRET"} {
		if bytes.Contains(raw, []byte(key)) {
			t.Errorf("the cassette's bytes hold the key %q", key)
		}
		if strings.Contains(export, key) {
			t.Errorf("the cassette's export holds the key %q", key)
		}
	}
	return cas
}

// replayExample replays cas through the wrapper for CMD, with no provider
// and no key in the environment, requiring every interaction to be used.
func replayExample(t *testing.T, cas string, cmd ...string) {
	t.Helper()
	exampletest.Unsetenv(t, "OPENAI_API_KEY")
	exampletest.Unsetenv(t, "ANTHROPIC_API_KEY")
	args := []string{"replay", "--cassette", cas, "--fail-on-unused", "--"}
	code, stdout, stderr := cliWait(t, 5*time.Minute, append(args, cmd...)...)
	if code != 0 {
		t.Fatalf("replay: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// TestNodeClients runs examples/node (the openai, @anthropic-ai/sdk and ai
// packages: Chat Completions, Responses and Messages, streamed and not, each
// a tool round) through `llmproxy record -- npm test` against the fake
// providers, scrubs the cassette, and replays it through `llmproxy replay --
// npm test` with the providers gone, the keys unset and the tool results
// served as fixtures.
// nodeExample returns the absolute path of examples/NAME, a node project
// whose tests run under the proxy, once node, npm and its installed
// packages are there (else the test is skipped, or fails under
// REQUIRE_EXAMPLE_TESTS), with npm quiet and no listen address inherited.
func nodeExample(t *testing.T, name string) string {
	t.Helper()
	dir := exampletest.NodeProject(t, "../../examples/"+name)
	exampletest.Unsetenv(t, "LLMPROXY_LISTEN")
	return dir
}

func TestNodeClients(t *testing.T) {
	dir := nodeExample(t, "node")
	npmTest := []string{"npm", "--prefix", dir, "test"}
	cas := recordExample(t, npmTest...)
	// Six clients, streamed and not, two requests each.
	if n := exampletest.Interactions(t, cas); n != 24 {
		t.Errorf("recorded %d interactions, want 24", n)
	}
	replayExample(t, cas, npmTest...)
}

// TestLangchaingoClients runs examples/langchaingo (a separate Go module: the
// openai and anthropic models of github.com/tmc/langchaingo, streamed and
// not, each a tool round) through `llmproxy record -- go test` against the
// fake providers, scrubs the cassette, and replays it through `llmproxy
// replay -- go test` with the providers gone and the keys unset.
func TestLangchaingoClients(t *testing.T) {
	if testing.Short() {
		t.Skip("builds langchaingo")
	}
	dir, err := filepath.Abs("../../examples/langchaingo")
	if err != nil {
		t.Fatal(err)
	}
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		exampletest.Skip(t, "no go tool to run the langchaingo example with")
	}
	exampletest.Unsetenv(t, "LLMPROXY_LISTEN")
	if out, err := exec.Command(goTool, "-C", dir, "mod", "download").CombinedOutput(); err != nil {
		exampletest.Skip(t, fmt.Sprintf("the langchaingo example's modules cannot be had (no module proxy?): %v\n%s", err, out))
	}
	goTest := []string{goTool, "-C", dir, "test", "-count=1", "-v", "./..."}
	cas := recordExample(t, goTest...)
	// Two models, streamed and not, two requests each.
	if n := exampletest.Interactions(t, cas); n != 8 {
		t.Errorf("recorded %d interactions, want 8", n)
	}
	replayExample(t, cas, goTest...)
}

// TestNodeScenario runs examples/node-scenario — a newcomer's scenario (a
// greeting, a weather round, a 429 the SDK retries, a cut stream) and a
// node:test file for each, using the npm openai package with no baseURL and
// no conversation header — and a structured-output file (zodResponseFormat
// and chat.completions.parse against json answers) under `llmproxy mock --
// npm test`: the four newcomer's files in every order (24 runs; the fifth
// file is not permuted, which would make 120, but runs first before them
// once), all five at once (--test-concurrency=4), and each alone. Every run
// must pass with no miss: each test's conversation is read from its
// requests.
func TestNodeScenario(t *testing.T) {
	dir := nodeExample(t, "node-scenario")
	exampletest.Unsetenv(t, "OPENAI_API_KEY")
	newcomer := []string{"greeting.test.mjs", "weather.test.mjs", "ratelimit.test.mjs", "stream.test.mjs"}
	files := append(slices.Clone(newcomer), "structured.test.mjs")
	var runs [][]string
	for _, order := range permutations(newcomer) {
		runs = append(runs, append([]string{"--test-concurrency=1"}, order...))
	}
	runs = append(runs, append([]string{"--test-concurrency=1", "structured.test.mjs"}, newcomer...))
	runs = append(runs, append([]string{"--test-concurrency=4"}, files...))
	for _, f := range files {
		runs = append(runs, []string{f})
	}
	for _, r := range runs {
		args := append([]string{"mock", "--scenario", filepath.Join(dir, "scenario.yaml"), "--pace", "instant", "--",
			"npm", "--prefix", dir, "test", "--"}, r...)
		if code, stdout, stderr := cliWait(t, 2*time.Minute, args...); code != 0 {
			t.Errorf("npm test %v: exit %d\nstdout:\n%s\nstderr:\n%s", r, code, stdout, stderr)
		}
	}
}

// permutations returns every order of items.
func permutations(items []string) [][]string {
	if len(items) <= 1 {
		return [][]string{slices.Clone(items)}
	}
	var out [][]string
	for i, first := range items {
		rest := append(slices.Clone(items[:i]), items[i+1:]...)
		for _, p := range permutations(rest) {
			out = append(out, append([]string{first}, p...))
		}
	}
	return out
}
