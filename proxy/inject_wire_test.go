package proxy_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/wire"
)

// faultWire is one provider API asked for the weather, whole and streamed.
type faultWire struct {
	name               string
	path, streamPath   string
	body, streamBody   string
	streamErrorMarkers string // what the stream error event carries on this wire
	// streamWhole is what a whole stream carries ("call_paris" when "").
	streamWhole string
}

func faultWires() []faultWire {
	q := `"` + weatherPrompt + `"`
	return []faultWire{
		{"openai-chat", "/v1/chat/completions", "/v1/chat/completions",
			`{"model":"gpt-4o-mini","messages":[{"role":"user","content":` + q + `}]}`,
			`{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":` + q + `}]}`, `data: {"error"`, ""},
		{"openai-responses", "/v1/responses", "/v1/responses",
			`{"model":"gpt-4o-mini","input":[{"role":"user","content":` + q + `}]}`,
			`{"model":"gpt-4o-mini","stream":true,"input":[{"role":"user","content":` + q + `}]}`, "event: error", ""},
		{"anthropic", "/anthropic/v1/messages", "/anthropic/v1/messages",
			`{"model":"claude-sonnet-4-6","max_tokens":512,"messages":[{"role":"user","content":` + q + `}]}`,
			`{"model":"claude-sonnet-4-6","max_tokens":512,"stream":true,"messages":[{"role":"user","content":` + q + `}]}`, "event: error", ""},
		{"gemini", "/gemini/v1beta/models/gemini-2.5-flash:generateContent", "/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
			`{"contents":[{"role":"user","parts":[{"text":` + q + `}]}]}`,
			`{"contents":[{"role":"user","parts":[{"text":` + q + `}]}]}`, `data: {"error"`, ""},
		{"ollama", "/ollama/api/chat", "/ollama/api/chat",
			`{"model":"llama3.2","stream":false,"messages":[{"role":"user","content":` + q + `}]}`,
			`{"model":"llama3.2","messages":[{"role":"user","content":` + q + `}]}`, `{"error"`, ""},
		{"bedrock-converse", "/bedrock/model/m/converse", "/bedrock/model/m/converse-stream",
			`{"messages":[{"role":"user","content":[{"text":` + q + `}]}]}`,
			`{"messages":[{"role":"user","content":[{"text":` + q + `}]}]}`, ":exception-type", ""},
		{"bedrock-invoke", "/bedrock/model/" + bedrockModel + "/invoke", "/bedrock/model/" + bedrockModel + "/invoke-with-response-stream",
			string(invokeBody("")), string(invokeBody("")), ":exception-type", invokeChunk(`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"call_paris"`)},
	}
}

// invokeChunk is what an InvokeModelWithResponseStream chunk whose event
// starts with prefix carries: the prefix in base64, up to its last whole
// group of three bytes.
func invokeChunk(prefix string) string {
	return base64.StdEncoding.EncodeToString([]byte(prefix[:len(prefix)/3*3]))
}

// faultResult is what a client got from a faulted request.
type faultResult struct {
	err     error // no response at all
	status  int
	header  http.Header
	body    []byte
	readErr error
}

func postFault(t *testing.T, base, path, body, conv, fault string) faultResult {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(proxy.ConversationHeader, conv)
	if fault != "" {
		req.Header.Set(proxy.FaultHeader, fault)
	}
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return faultResult{err: err}
	}
	defer resp.Body.Close()
	b, rerr := io.ReadAll(resp.Body)
	return faultResult{status: resp.StatusCode, header: resp.Header, body: b, readErr: rerr}
}

// TestFaultKindsOnEveryWire sends each kind of fault, by header, on every
// wire mock writes, whole and streamed, and checks what a client gets.
func TestFaultKindsOnEveryWire(t *testing.T) {
	m := startMock(t, []string{weatherScenario}, func(c *proxy.Config) { c.AllowHeaderFaults = true })
	for _, fw := range faultWires() {
		for _, stream := range []bool{false, true} {
			path, body, marker := fw.path, fw.body, "call_paris"
			if stream {
				path, body = fw.streamPath, fw.streamBody
				if fw.streamWhole != "" {
					marker = fw.streamWhole
				}
			}
			whole := func(t *testing.T, r faultResult) {
				t.Helper()
				if r.err != nil || r.readErr != nil || r.status != 200 || !bytes.Contains(r.body, []byte(marker)) {
					t.Errorf("got %v %v %d %q; want the whole answer", r.err, r.readErr, r.status, r.body)
				}
			}
			n := 0
			send := func(t *testing.T, fault string) faultResult {
				n++
				return postFault(t, m.srv.URL, path, body, fmt.Sprintf("%s-%v-%d", fw.name, stream, n), fault)
			}
			name := fmt.Sprintf("%s/stream=%v", fw.name, stream)
			t.Run(name+"/none", func(t *testing.T) { whole(t, send(t, "")) })
			for _, status := range []int{429, 500, 503, 529} {
				t.Run(fmt.Sprintf("%s/%d", name, status), func(t *testing.T) {
					r := send(t, fmt.Sprintf("%d@retry-after=2s", status))
					if r.err != nil || r.status != status || !strings.Contains(wire.ErrorMessage(r.body), "injected fault") || r.header.Get("Retry-After") != "2" {
						t.Errorf("got %v %d %v %q; want %d in the provider's shape with Retry-After 2", r.err, r.status, r.header, r.body, status)
					}
				})
			}
			for _, fault := range []string{"timeout@after=10ms", "reset"} {
				t.Run(name+"/"+fault, func(t *testing.T) {
					if r := send(t, fault); r.err == nil {
						t.Errorf("got %d %q, want no answer", r.status, r.body)
					}
				})
			}
			t.Run(name+"/cut", func(t *testing.T) {
				if r := send(t, "cut"); r.err != nil || r.status != 200 || r.readErr == nil || len(r.body) != 0 {
					t.Errorf("got %v %d %v %q, want 200, then the connection closed before the body", r.err, r.status, r.readErr, r.body)
				}
			})
			t.Run(name+"/cut@event=1", func(t *testing.T) {
				r := send(t, "cut@event=1")
				if !stream {
					whole(t, r) // not a stream: not injected
					return
				}
				if r.err != nil || r.status != 200 || r.readErr == nil || len(r.body) == 0 {
					t.Errorf("got %v %d %v %q, want 200, one event, then the connection closed", r.err, r.status, r.readErr, r.body)
				}
			})
			t.Run(name+"/529@event=1", func(t *testing.T) {
				r := send(t, "529@event=1")
				if !stream {
					whole(t, r)
					return
				}
				if r.err != nil || r.readErr != nil || r.status != 200 || !bytes.Contains(r.body, []byte(fw.streamErrorMarkers)) || !bytes.Contains(r.body, []byte("injected fault")) {
					t.Errorf("got %v %v %d %q, want one event, then the stream error (%s)", r.err, r.readErr, r.status, r.body, fw.streamErrorMarkers)
				}
			})
			for _, fault := range []string{"stall@event=1,for=10ms", "slow@ttfb=5ms,per-event=1ms", "stall@for=10ms"} {
				t.Run(name+"/"+fault, func(t *testing.T) { whole(t, send(t, fault)) })
			}
			t.Run(name+"/malformed", func(t *testing.T) {
				r := send(t, "malformed")
				if r.err != nil || r.status != 200 || r.readErr != nil || len(r.body) == 0 {
					t.Fatalf("got %v %d %v %q, want 200 and a body", r.err, r.status, r.readErr, r.body)
				}
				plain := send(t, "")
				if bytes.Equal(r.body, plain.body) || len(r.body) >= len(plain.body) {
					t.Errorf("malformed body %q is not shorter than the answer %q", r.body, plain.body)
				}
			})
		}
	}
}

// TestFaultGeminiJSONArray: Gemini's JSON-array stream has no events a
// fault can name (it is a body, as its recording is) and no stream error:
// a fault at an event is not injected and the log says why; a malformed
// one cuts the array in half.
func TestFaultGeminiJSONArray(t *testing.T) {
	m := startMock(t, []string{weatherScenario}, func(c *proxy.Config) { c.AllowHeaderFaults = true })
	const path = "/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent"
	body := `{"contents":[{"role":"user","parts":[{"text":"` + weatherPrompt + `"}]}]}`
	plain := postFault(t, m.srv.URL, path, body, "a", "")
	if plain.status != 200 || !bytes.HasPrefix(bytes.TrimSpace(plain.body), []byte("[")) {
		t.Fatalf("got %d %q, want a JSON array", plain.status, plain.body)
	}
	r := postFault(t, m.srv.URL, path, body, "b", "529@event=1")
	if r.status != 200 || r.readErr != nil || !bytes.Contains(r.body, []byte("call_paris")) {
		t.Errorf("529@event=1: got %d %v %q, want the answer whole", r.status, r.readErr, r.body)
	}
	bad := postFault(t, m.srv.URL, path, body, "c", "malformed")
	if bad.status != 200 || bad.readErr != nil || len(bad.body) != len(plain.body)/2 {
		t.Errorf("malformed: got %d %v %d bytes, want the first half of %d", bad.status, bad.readErr, len(bad.body), len(plain.body))
	}
	log := m.log()
	if len(log) != 3 || log[1].FaultSkipped != "529@event=1 names event 1, but the answer is not a stream" {
		t.Errorf("log %+v: want the 529 not injected, and why", log)
	}
}
