package proxy_test

// The npm @aws-sdk/client-bedrock-runtime client (examples/node-bedrock:
// Converse, then a ConverseStream tool round) through the proxy: recorded
// from the fake Bedrock that checks every SigV4 signature, replayed with
// other credentials byte for byte, and answered by a scenario in mock.

import (
	"bytes"
	"context"
	"io"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/exampletest"
	"github.com/llmproxy/llmproxy/proxy"
)

// nodeBedrockExample returns the path of examples/node-bedrock/bedrock.mjs
// once node and the example's packages are there (see exampletest.NodeProject).
func nodeBedrockExample(t *testing.T) string {
	t.Helper()
	return filepath.Join(exampletest.NodeProject(t, "../examples/node-bedrock"), "bedrock.mjs")
}

// runNodeBedrock runs the example script with the given endpoint, signing
// target ("" for none), credentials and prompt, and returns what it printed.
func runNodeBedrock(t *testing.T, script, endpoint, signFor string, creds aws.Credentials, prompt string) string {
	t.Helper()
	stdout, stderr, err := nodeBedrock(script, endpoint, signFor, creds, prompt)
	if err != nil {
		t.Fatalf("node %s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(script), err, stdout, stderr)
	}
	return stdout
}

// nodeBedrock runs the example script and returns its output and exit error.
func nodeBedrock(script, endpoint, signFor string, creds aws.Credentials, prompt string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "BEDROCK_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "BEDROCK_ENDPOINT="+endpoint, "BEDROCK_MODEL="+bedrockModel, "BEDROCK_PROMPT="+prompt,
		"AWS_ACCESS_KEY_ID="+creds.AccessKeyID, "AWS_SECRET_ACCESS_KEY="+creds.SecretAccessKey,
		"AWS_SESSION_TOKEN="+creds.SessionToken, "AWS_REGION="+bedrockRegion)
	if signFor != "" {
		cmd.Env = append(cmd.Env, "BEDROCK_SIGN_FOR="+signFor)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), err
}

// tapTo is a reverse proxy to base that keeps the Host the client sent
// (the one it signed) and every response body it delivers, for byte
// comparisons of what a client that is not Go received.
func tapTo(t *testing.T, base string) (*httptest.Server, *tapeTransport) {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	tape := &tapeTransport{}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.Out.Host = r.In.Host
			// The request goes on as a copy: once the tap writes its
			// answer's head, net/http refuses reads of r.In.Body, and a
			// transport whose last read (for EOF) is refused closes the
			// connection the answer is still being read from.
			if b, err := io.ReadAll(r.In.Body); err == nil {
				r.Out.Body, r.Out.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
			}
		},
		Transport:     tape,
		FlushInterval: -1,
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv, tape
}

// TestNodeBedrockSDK records Converse and a ConverseStream tool round made
// by @aws-sdk/client-bedrock-runtime, signed for the fake Bedrock (which
// checks each signature), then replays them with other credentials through
// the endpoint override alone: the script sees the same answers, every
// body is the recorded bytes, and the cassette file holds no access key
// id, secret, session token or signature. Scrubbed to the weather preset,
// it replays with the preset's call id.
func TestNodeBedrockSDK(t *testing.T) {
	script := nodeBedrockExample(t)
	up := newSigv4Upstream(t, bedrockRecordCreds, bedrockAnswer)
	path := cassettePath(t)
	rec := startProxy(t, proxy.ModeRecord, path, up.srv.URL, withBedrock(up.srv.URL))
	recTap, recTape := tapTo(t, rec.URL())
	saw := runNodeBedrock(t, script, recTap.URL+"/bedrock", up.srv.URL, bedrockRecordCreds, "Weather in Paris?")
	for _, w := range []string{
		`{"op":"Converse","text":"Paris is sunny, 22 C.","calls":[],"stop":"end_turn","usage":19}`,
		`"call":{"id":"tooluse_paris01","name":"weather"},"input":"{\"location\": \"Paris\", \"unit\": \"celsius\"}","stop":"tool_use","usage":460`,
		`"text":"It is 21 °C and sunny in Paris.","call":null,"input":"","stop":"end_turn","usage":503`,
	} {
		if !strings.Contains(saw, w) {
			t.Errorf("record: the script printed\n%s\nwant %s in it", saw, w)
		}
	}
	up.mu.Lock()
	n := len(up.requests)
	up.mu.Unlock()
	if n != 3 {
		t.Errorf("the fake Bedrock got %d requests, want 3 (Converse and two ConverseStream turns)", n)
	}
	rec.stop()
	up.srv.Close()
	checkNoAWSSecrets(t, "the cassette file", rawCassette(t, path), bedrockRecordCreds, signatures(up.requests))
	checkNodeBedrockCassette(t, path)

	rep := startProxy(t, proxy.ModeReplay, path, "", func(c *proxy.Config) { c.Upstreams = map[string]*url.URL{} }, withBedrock(up.srv.URL))
	repTap, repTape := tapTo(t, rep.URL())
	again := runNodeBedrock(t, script, repTap.URL+"/bedrock", "", bedrockReplayCreds, "Weather in Paris?")
	if again != saw {
		t.Errorf("replay: the script printed\n%s\nwant\n%s", again, saw)
	}
	// A changed prompt is a miss the SDK reports with its code and the
	// JSON path where the request differs.
	_, stderr, err := nodeBedrock(script, repTap.URL+"/bedrock", "", bedrockReplayCreds, "Weather in Lyon?")
	if err == nil {
		t.Error("a changed prompt replayed, want a miss")
	}
	for _, w := range []string{"cassette_miss", "messages.0.content.0.text", "Lyon"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("the miss the script reported does not say %q:\n%s", w, stderr)
		}
	}
	got, want := repTape.bodies()[:3], recTape.bodies()
	if len(got) != 3 || len(got) != len(want) {
		t.Fatalf("replay delivered %d bodies, record %d; want 3 each", len(got), len(want))
	}
	sameBodies(t, got, want)
	rep.stop()

	// Scrubbed to the weather preset, the cassette replays to the script
	// with the preset's call id.
	scrubToWeather(context.Background(), t, path)
	scrubbed := startProxy(t, proxy.ModeReplay, path, "", func(c *proxy.Config) { c.Upstreams = map[string]*url.URL{} })
	after := runNodeBedrock(t, script, scrubbed.URL()+"/bedrock", "", bedrockReplayCreds, "Weather in Paris?")
	if want := strings.ReplaceAll(saw, "tooluse_paris01", "call_weather"); after != want {
		t.Errorf("replay of the scrubbed cassette: the script printed\n%s\nwant\n%s", after, want)
	}
}

// checkNodeBedrockCassette checks the three recorded interactions: Converse
// whole, the two ConverseStream turns as event stream messages, each with
// its Authorization and session token redacted.
func checkNodeBedrockCassette(t *testing.T, path string) {
	t.Helper()
	all := recordedIn(t, path)
	if len(all) != 3 {
		t.Fatalf("cassette holds %d interactions, want 3", len(all))
	}
	for n, i := range all {
		framing := "eventstream"
		if n == 0 {
			framing = ""
		}
		if i.Upstream != "bedrock" || i.Kind != "bedrock-converse" || i.Response.Framing != framing {
			t.Errorf("interaction %d: upstream %s kind %s framing %q, want bedrock bedrock-converse %q", i.ID, i.Upstream, i.Kind, i.Response.Framing, framing)
		}
		for _, h := range []string{"Authorization", "X-Amz-Security-Token"} {
			if v := i.Request.Headers.Get(h); v != cassette.Redacted {
				t.Errorf("interaction %d: %s stored as %q, want %s", i.ID, h, v, cassette.Redacted)
			}
		}
	}
}

// TestNodeBedrockSDKMock: a scenario answers @aws-sdk/client-bedrock-runtime
// in mock, Converse and the ConverseStream tool round, through the endpoint
// override alone; the SDK checks every event stream message's CRCs.
func TestNodeBedrockSDKMock(t *testing.T) {
	script := nodeBedrockExample(t)
	m := startMock(t, []string{weatherScenario})
	saw := runNodeBedrock(t, script, m.srv.URL+"/bedrock", "", bedrockReplayCreds, weatherPrompt)
	for _, w := range []string{
		`{"op":"Converse","text":"","calls":["call_paris/weather/{\"location\":\"Paris\",\"unit\":\"celsius\"}"],"stop":"tool_use"`,
		`"call":{"id":"call_paris","name":"weather"},"input":"{\"location\":\"Paris\",\"unit\":\"celsius\"}","stop":"tool_use"`,
		`"text":"Paris is sunny, 21 °C.","call":null,"input":"","stop":"end_turn"`,
	} {
		if !strings.Contains(saw, w) {
			t.Errorf("mock: the script printed\n%s\nwant %s in it", saw, w)
		}
	}
	if entries := m.log(); len(entries) != 3 {
		t.Errorf("the mock logged %d answers, want 3", len(entries))
	}
}
