package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/wire"
)

var updateDemo = flag.Bool("update-demo", false, "re-record cassettes/demo.cassette against the fake OpenAI upstream")

// demoLoop is the conversation the demo cassette holds. The call id is the
// kind OpenAI gives; scrub turns it into call_weather.
var demoLoop = fake.ToolLoop{
	Tool:   "weather",
	Args:   `{"location":"Paris","unit":"celsius"}`,
	CallID: "call_Wm4tXq7bR2vYp9Lk3sHd8JfN",
	Answer: "It is 21 °C and sunny in Paris.",
}

// weatherService stands for the real weather service the demo application
// called when its cassette was recorded.
type weatherService struct{}

func (weatherService) Execute(_ context.Context, call wire.ToolCall) (wire.ToolResult, error) {
	out := `{"location":"Paris","temperature":21,"unit":"celsius","condition":"sunny"}`
	return wire.ToolResult{CallID: call.ID, Name: call.Name, Content: []byte(out)}, nil
}

// TestDemo runs `llmproxy demo` on the committed cassette and compares its
// output with testdata/demo.golden.
func TestDemo(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"demo"}, &out, &errb); code != 0 {
		t.Fatalf("llmproxy demo exited %d: %s", code, errb.String())
	}
	got := regexp.MustCompile(`http://127\.0\.0\.1:\d+`).ReplaceAll(out.Bytes(), []byte("http://127.0.0.1:PORT"))
	golden(t, "demo.golden", got)
}

// TestGenerateDemoCassette records the demo cassette: the demo application
// (demoConversation) through a recording proxy, against the fake OpenAI
// upstream that sends captured OpenAI bytes; then scrubs it, so that the
// weather call becomes call_weather with its fixture stored. Run with
// -update-demo.
func TestGenerateDemoCassette(t *testing.T) {
	if !*updateDemo {
		t.Skip("run with -update-demo to re-record cassettes/demo.cassette")
	}
	up := fake.New(t, fake.OpenAIChat(demoLoop))
	path := filepath.Join(t.TempDir(), "demo.cassette")
	c, err := cassette.Open(path, cassette.Options{Version: version})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(up.URL())
	p, err := proxy.New(proxy.Config{Mode: proxy.ModeRecord, Cassette: c, Default: u, Upstreams: map[string]*url.URL{"openai": u}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	if err := demoConversation(context.Background(), srv.URL+"/v1/", io.Discard, weatherService{}); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	c.Close()
	if up.Hits() != 2 {
		t.Fatalf("upstream hits = %d, want 2", up.Hits())
	}
	if code, out, errs := runCLI(t, "scrub", "--cassette", path); code != 0 || !strings.Contains(out, "1 tool call(s) substituted, 0 left unchanged") {
		t.Fatalf("scrub exited %d: %s%s", code, out, errs)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("../../cassettes/demo.cassette", data, 0o644); err != nil {
		t.Fatal(err)
	}
}
