package proxy_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/proxy"
)

// secretPlace is one place a provider's key travels: a request header, or a
// query parameter when query is set.
type secretPlace struct {
	name   string // header or query parameter name
	place  string // creds.key argument
	prefix string // what the header value holds before the key ("Bearer ")
	query  bool
}

// providerCase is one provider wire, driven by a client through the proxy.
type providerCase struct {
	name     string
	script   fake.Script
	loop     providerLoop
	secrets  []secretPlace
	kind     string // the API kind stored for each interaction
	upstream string // the routing name the client's base URL uses
	// missAt is the JSON path where a changed prompt differs; the miss
	// message must name it.
	missAt string
	// idless: the provider sends no call id, so the transcript shows none.
	idless bool
}

func providerCases() []providerCase {
	return []providerCase{
		{
			name: "anthropic-sdk-go", script: fake.AnthropicMessages(weatherLoop), loop: anthropicLoop,
			secrets: []secretPlace{
				{name: "Authorization", place: "anthropic-bearer", prefix: "Bearer "},
				{name: "X-Api-Key", place: "anthropic-x-api-key"},
			},
			kind: "anthropic-messages", upstream: "anthropic", missAt: "messages.0.content.0.text",
		},
		{
			name: "openai-go-responses", script: fake.OpenAIResponses(weatherLoop), loop: responsesLoop,
			secrets: []secretPlace{{name: "Authorization", place: "openai", prefix: "Bearer "}},
			kind:    "openai-responses", upstream: "openai", missAt: "input",
		},
		{
			name: "genai", script: fake.Gemini(weatherLoop), loop: geminiLoop,
			secrets: []secretPlace{
				{name: "X-Goog-Api-Key", place: "gemini-header"},
				{name: "key", place: "gemini-query", query: true},
			},
			kind: "gemini", upstream: "gemini", missAt: "contents.0.parts.0.text", idless: true,
		},
		{
			name: "ollama-http", script: fake.Ollama(weatherLoop), loop: ollamaLoop,
			secrets: []secretPlace{{name: "Authorization", place: "ollama", prefix: "Bearer "}},
			kind:    "ollama", upstream: "ollama", missAt: "messages.0.content",
		},
		{
			name: "openai-go-azure", script: fake.OpenAIChat(weatherLoop), loop: azureLoop,
			secrets: []secretPlace{{name: "Api-Key", place: "azure"}},
			kind:    "openai-chat", upstream: "azure", missAt: "messages.0.content",
		},
	}
}

// requirements make the fake upstream refuse a request without the record
// credentials in every place, so a recording proves the key got through.
func (pc providerCase) requirements() []fake.Option {
	var opts []fake.Option
	for _, s := range pc.secrets {
		if s.query {
			opts = append(opts, fake.RequireQuery(s.name, recordCreds.key(s.place)))
		} else {
			opts = append(opts, fake.RequireHeader(s.name, s.prefix+recordCreds.key(s.place)))
		}
	}
	return opts
}

const (
	parisPrompt = "What's the weather in Paris?"
	romePrompt  = "What's the weather in Rome?"
)

// TestProviderRecordReplay drives each provider's tool loop through the
// proxy, streamed and not: record against the fake, then replay with the
// upstream shut down and other credentials. The application must see the
// same results, every response body must be the recorded bytes, no key may
// reach the cassette file, and a changed prompt must give an SDK error that
// carries the miss diagnosis.
func TestProviderRecordReplay(t *testing.T) {
	for _, pc := range providerCases() {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", pc.name, stream), func(t *testing.T) {
				ctx := context.Background()
				up := fake.New(t, pc.script, pc.requirements()...)
				path := cassettePath(t)

				rec := startProxy(t, proxy.ModeRecord, path, up.URL())
				want, err := pc.loop(ctx, clientEnv{hc: rec.client(), base: rec.URL(), creds: recordCreds}, parisPrompt, stream)
				if err != nil {
					t.Fatalf("record: %v", err)
				}
				wantID := weatherLoop.CallID + " "
				if pc.idless {
					wantID = " "
				}
				wantCall := wantID + "weather" + sortedArgs(weatherLoop.Args)
				if len(want.calls) != 1 || want.calls[0] != wantCall || want.answer != weatherLoop.Answer {
					t.Fatalf("recorded transcript %v, want calls=[%s] answer=%q", want, wantCall, weatherLoop.Answer)
				}
				recorded := rec.bodies()
				rec.stop()
				if got := up.Hits(); got != 2 {
					t.Fatalf("upstream hits while recording = %d, want 2", got)
				}
				checkSecretsAbsent(t, path, pc.secrets)
				checkStored(t, path, pc, stream)
				up.Close()

				rep := startProxy(t, proxy.ModeReplay, path, up.URL())
				got, err := pc.loop(ctx, clientEnv{hc: rep.client(), base: rep.URL(), creds: replayCreds}, parisPrompt, stream)
				if err != nil {
					text, _ := missText(err)
					t.Fatalf("replay: %v (%s)", err, text)
				}
				if got.String() != want.String() {
					t.Errorf("replay transcript = %v, want %v", got, want)
				}
				if up.Hits() != 2 {
					t.Errorf("upstream hits during replay = %d, want 0", up.Hits()-2)
				}
				replayed := rep.bodies()
				if len(replayed) != len(recorded) {
					t.Fatalf("replay delivered %d bodies, record %d", len(replayed), len(recorded))
				}
				for i := range recorded {
					if !bytes.Equal(recorded[i], replayed[i]) {
						t.Errorf("response %d differs between record and replay:\nrecord: %q\nreplay: %q", i, recorded[i], replayed[i])
					}
				}

				// A changed prompt is a miss the SDK reports with the diagnosis.
				_, err = pc.loop(ctx, clientEnv{hc: rep.client(), base: rep.URL(), creds: replayCreds}, romePrompt, stream)
				if err == nil {
					t.Fatal("a changed prompt replayed without error")
				}
				text, is400 := missText(err)
				t.Logf("miss as the SDK reports it: %s", text)
				if !is400 {
					t.Fatalf("miss error is not an SDK error for HTTP 400: %s", text)
				}
				for _, want := range []string{"cassette_miss", path, "interaction 1", pc.missAt, "Rome", "Paris"} {
					if !strings.Contains(text, want) {
						t.Errorf("SDK miss error %q does not mention %q", text, want)
					}
				}
			})
		}
	}
}

// checkSecretsAbsent fails when any record credential is in the cassette
// file's bytes.
func checkSecretsAbsent(t *testing.T, path string, secrets []secretPlace) {
	t.Helper()
	raw := rawCassette(t, path)
	for _, s := range secrets {
		if key := recordCreds.key(s.place); bytes.Contains(raw, []byte(key)) {
			t.Errorf("the key sent in %s (%s) is in the cassette file", s.name, key)
		}
	}
	if bytes.Contains(raw, []byte(recordCreds)) {
		t.Errorf("part of a record credential (%s) is in the cassette file", recordCreds)
	}
}

// checkStored checks what the cassette says about the recording: upstream,
// kind, framing, redacted secret places.
func checkStored(t *testing.T, path string, pc providerCase, stream bool) {
	t.Helper()
	c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	n := 0
	err = c.ForEach(func(i *cassette.Interaction) error {
		n++
		if i.Upstream != pc.upstream || i.Kind != pc.kind {
			t.Errorf("interaction %d: upstream %q kind %q, want %q %q", i.ID, i.Upstream, i.Kind, pc.upstream, pc.kind)
		}
		if i.Response.Streamed() != stream {
			t.Errorf("interaction %d: streamed = %v, want %v", i.ID, i.Response.Streamed(), stream)
		}
		for _, s := range pc.secrets {
			if s.query {
				if !strings.Contains(i.Request.Query, s.name+"="+cassette.Redacted) {
					t.Errorf("interaction %d: query %q does not hold %s=%s", i.ID, i.Request.Query, s.name, cassette.Redacted)
				}
				continue
			}
			if got := i.Request.Headers.Get(s.name); got != cassette.Redacted {
				t.Errorf("interaction %d: header %s = %q, want %s", i.ID, s.name, got, cassette.Redacted)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("cassette holds %d interactions, want 2", n)
	}
}

// embeddingsScript answers POST /v1/embeddings like OpenAI (float
// encoding), and GET /v1/models with a model list.
func embeddingsScript() fake.Script {
	const floats = `{
  "object": "list",
  "data": [
    {
      "object": "embedding",
      "index": 0,
      "embedding": [
        -0.0069292835,
        -0.005336422,
        0.024047505,
        -0.0028210669
      ]
    }
  ],
  "model": "text-embedding-3-small",
  "usage": {
    "prompt_tokens": 5,
    "total_tokens": 5
  }
}
`
	const models = `{
  "object": "list",
  "data": [
    {
      "id": "gpt-4o-mini",
      "object": "model",
      "created": 1721172741,
      "owned_by": "system"
    },
    {
      "id": "text-embedding-3-small",
      "object": "model",
      "created": 1705948997,
      "owned_by": "system"
    }
  ]
}
`
	jsonHeader := http.Header{"Content-Type": {"application/json"}, "Openai-Processing-Ms": {"42"}}
	return fake.ScriptFunc(func(r *fake.Request) *fake.Response {
		switch {
		case r.Method == http.MethodGet && r.Path == "/v1/models":
			return &fake.Response{Header: jsonHeader.Clone(), Body: []byte(models)}
		case r.Method == http.MethodPost && r.Path == "/v1/embeddings":
			return &fake.Response{Header: jsonHeader.Clone(), Body: []byte(floats)}
		}
		return &fake.Response{Status: http.StatusNotFound, Header: jsonHeader.Clone(),
			Body: []byte(`{"error":{"message":"no route","type":"invalid_request_error"}}`)}
	})
}

// TestEmbeddingsAndModelsRecordReplay records POST /v1/embeddings and
// GET /v1/models through openai-go and replays them byte for byte.
func TestEmbeddingsAndModelsRecordReplay(t *testing.T) {
	ctx := context.Background()
	type seen struct{ embeddings, models string }
	run := func(h *harness, key string) (seen, error) {
		client := openai.NewClient(option.WithBaseURL(h.URL()+"/v1/"), option.WithAPIKey(key),
			option.WithHTTPClient(h.client()), option.WithMaxRetries(0))
		var s seen
		emb, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{
			Model:          openai.EmbeddingModelTextEmbedding3Small,
			Input:          openai.EmbeddingNewParamsInputUnion{OfString: openai.String("The food was delicious")},
			EncodingFormat: openai.EmbeddingNewParamsEncodingFormatFloat,
		})
		if err != nil {
			return s, fmt.Errorf("embeddings: %w", err)
		}
		if len(emb.Data) != 1 {
			return s, fmt.Errorf("embeddings: %d vectors, want 1", len(emb.Data))
		}
		s.embeddings = fmt.Sprint(emb.Data[0].Embedding)
		page, err := client.Models.List(ctx)
		if err != nil {
			return s, fmt.Errorf("models: %w", err)
		}
		var ids []string
		for _, m := range page.Data {
			ids = append(ids, m.ID)
		}
		s.models = strings.Join(ids, ",")
		return s, nil
	}

	up := fake.New(t, embeddingsScript(), fake.RequireHeader("Authorization", "Bearer "+recordCreds.key("openai")))
	path := cassettePath(t)
	rec := startProxy(t, proxy.ModeRecord, path, up.URL())
	want, err := run(rec, recordCreds.key("openai"))
	if err != nil {
		t.Fatalf("record: %v", err)
	}
	if want.embeddings != "[-0.0069292835 -0.005336422 0.024047505 -0.0028210669]" || want.models != "gpt-4o-mini,text-embedding-3-small" {
		t.Fatalf("recorded %+v, not the fake's answers", want)
	}
	recorded := rec.bodies()
	rec.stop()
	checkSecretsAbsent(t, path, []secretPlace{{name: "Authorization", place: "openai"}})
	kinds := map[string]string{}
	c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	_ = c.ForEach(func(i *cassette.Interaction) error {
		kinds[i.Request.Method+" "+i.Request.Path] = i.Kind
		return nil
	})
	c.Close()
	if kinds["POST /v1/embeddings"] != "embeddings" || kinds["GET /v1/models"] != "generic" || len(kinds) != 2 {
		t.Errorf("stored kinds %v, want embeddings for POST /v1/embeddings and generic for GET /v1/models", kinds)
	}
	up.Close()

	rep := startProxy(t, proxy.ModeReplay, path, up.URL())
	got, err := run(rep, "sk-other")
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if got != want {
		t.Errorf("replay saw %+v, want %+v", got, want)
	}
	replayed := rep.bodies()
	if len(replayed) != len(recorded) {
		t.Fatalf("replay delivered %d bodies, record %d", len(replayed), len(recorded))
	}
	for i := range recorded {
		if !bytes.Equal(recorded[i], replayed[i]) {
			t.Errorf("response %d differs:\nrecord: %q\nreplay: %q", i, recorded[i], replayed[i])
		}
	}
}

// TestKeysStayOutOfLogsWhenUpstreamFails sends every provider's keys to an
// upstream that refuses connections: the request log (GET /_llmproxy/log),
// the server log and the cassette must not hold any of them.
func TestKeysStayOutOfLogsWhenUpstreamFails(t *testing.T) {
	ctx := context.Background()
	up := fake.New(t, fake.Gemini(weatherLoop))
	up.Close() // every request now fails to connect
	var logs syncBuffer
	path := cassettePath(t)
	rec := startProxy(t, proxy.ModeRecord, path, up.URL(), func(c *proxy.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	var secrets []secretPlace
	for _, pc := range providerCases() {
		secrets = append(secrets, pc.secrets...)
		if _, err := pc.loop(ctx, clientEnv{hc: rec.client(), base: rec.URL(), creds: recordCreds}, parisPrompt, false); err == nil {
			t.Errorf("%s: a request to a closed upstream succeeded", pc.name)
		}
	}
	resp, err := http.Get(rec.URL() + "/_llmproxy/log")
	if err != nil {
		t.Fatal(err)
	}
	journal, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if n := bytes.Count(journal, []byte("upstream failed")); n != len(providerCases()) {
		t.Errorf("request log holds %d upstream failures, want %d:\n%s", n, len(providerCases()), journal)
	}
	rec.stop()
	serverLog := logs.Bytes()
	if !bytes.Contains(serverLog, []byte("upstream failed")) {
		t.Errorf("the server log does not report the failures:\n%s", serverLog)
	}
	for _, s := range secrets {
		key := recordCreds.key(s.place)
		for what, b := range map[string][]byte{"request log": journal, "server log": serverLog} {
			if bytes.Contains(b, []byte(key)) {
				t.Errorf("the key sent in %s is in the %s", s.name, what)
			}
		}
	}
	checkSecretsAbsent(t, path, secrets)
}

// syncBuffer is a bytes.Buffer the server's goroutines can write to.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.buf.Bytes())
}

// TestRawProviderRequestsRecordReplay covers the wire variants no SDK here
// sends: Gemini's JSON-array stream (streamGenerateContent without alt=sse)
// and the key in ?key= alone, as curl users send them, and an Ollama chat
// that streams by default because it says nothing about "stream". Replay,
// with another key, must answer with the recorded status, Content-Type and
// bytes.
func TestRawProviderRequestsRecordReplay(t *testing.T) {
	geminiBody := `{"contents":[{"role":"user","parts":[{"text":"What's the weather in Paris?"}]}],"tools":[{"functionDeclarations":[{"name":"weather"}]}]}`
	cases := []struct {
		name        string
		script      fake.Script
		path, query string // query holds %s for the key
		body        string
		wantCT      string
		wantFraming string
	}{
		{"gemini-generate-key-query", fake.Gemini(weatherLoop), "/gemini/v1beta/models/gemini-2.5-flash:generateContent", "key=%s",
			geminiBody, "application/json; charset=UTF-8", ""},
		{"gemini-stream-json-array", fake.Gemini(weatherLoop), "/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent", "key=%s",
			geminiBody, "application/json; charset=UTF-8", ""},
		{"gemini-stream-sse-key-first", fake.Gemini(weatherLoop), "/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent", "key=%s&alt=sse",
			geminiBody, "text/event-stream", "sse"},
		{"ollama-default-stream", fake.Ollama(weatherLoop), "/ollama/api/chat", "",
			`{"model":"llama3.2","messages":[{"role":"user","content":"What's the weather in Paris?"}]}`, "application/x-ndjson", "ndjson"},
	}
	type answer struct {
		status int
		ct     string
		cl     string
		body   []byte
	}
	send := func(t *testing.T, base, path, query, body string) answer {
		t.Helper()
		u := base + path
		if query != "" {
			u += "?" + query
		}
		resp, err := http.Post(u, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return answer{resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Content-Length"), b}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := recordCreds.key("raw")
			var opts []fake.Option
			if tc.query != "" {
				opts = append(opts, fake.RequireQuery("key", key))
			}
			up := fake.New(t, tc.script, opts...)
			path := cassettePath(t)
			rec := startProxy(t, proxy.ModeRecord, path, up.URL())
			q := tc.query
			if q != "" {
				q = fmt.Sprintf(q, key)
			}
			want := send(t, rec.URL(), tc.path, q, tc.body)
			rec.stop()
			if want.status != http.StatusOK || want.ct != tc.wantCT || !bytes.Contains(want.body, []byte("weather")) {
				t.Fatalf("record: %d %q %q, want 200 %q and a weather call", want.status, want.ct, want.body, tc.wantCT)
			}
			checkSecretsAbsent(t, path, []secretPlace{{name: "key", place: "raw", query: true}})
			c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			i, err := c.Get(1)
			c.Close()
			if err != nil {
				t.Fatal(err)
			}
			if i.Response.Framing != tc.wantFraming {
				t.Errorf("stored framing %q, want %q", i.Response.Framing, tc.wantFraming)
			}
			up.Close()

			rep := startProxy(t, proxy.ModeReplay, path, up.URL())
			q = tc.query
			if q != "" {
				q = fmt.Sprintf(q, replayCreds.key("raw"))
			}
			got := send(t, rep.URL(), tc.path, q, tc.body)
			if got.status != want.status || got.ct != want.ct || !bytes.Equal(got.body, want.body) {
				t.Errorf("replay: %d %q %q\nwant: %d %q %q", got.status, got.ct, got.body, want.status, want.ct, want.body)
			}
			if tc.wantFraming == "" && got.cl != fmt.Sprint(len(want.body)) {
				t.Errorf("replay Content-Length %q, want %d", got.cl, len(want.body))
			}
		})
	}
}

// TestReplayNeedsNoUpstreamNames replays cassettes recorded under the names
// ollama and azure on a proxy given no upstreams at all, as `llmproxy replay`
// is started without --upstream flags: the recordings must still be found,
// and a changed prompt must be diagnosed against them, not as a routing
// difference.
func TestReplayNeedsNoUpstreamNames(t *testing.T) {
	noUpstreams := func(c *proxy.Config) { c.Upstreams, c.Default = nil, nil }
	for _, pc := range providerCases() {
		if pc.upstream != "ollama" && pc.upstream != "azure" {
			continue
		}
		t.Run(pc.name, func(t *testing.T) {
			ctx := context.Background()
			up := fake.New(t, pc.script)
			path := cassettePath(t)
			rec := startProxy(t, proxy.ModeRecord, path, up.URL())
			want, err := pc.loop(ctx, clientEnv{hc: rec.client(), base: rec.URL(), creds: recordCreds}, parisPrompt, true)
			if err != nil {
				t.Fatalf("record: %v", err)
			}
			rec.stop()
			up.Close()

			rep := startProxy(t, proxy.ModeReplay, path, "", noUpstreams)
			got, err := pc.loop(ctx, clientEnv{hc: rep.client(), base: rep.URL(), creds: replayCreds}, parisPrompt, true)
			if err != nil {
				text, _ := missText(err)
				t.Fatalf("replay without upstream names: %s", text)
			}
			if got.String() != want.String() {
				t.Errorf("replay transcript = %v, want %v", got, want)
			}
			_, err = pc.loop(ctx, clientEnv{hc: rep.client(), base: rep.URL(), creds: replayCreds}, romePrompt, true)
			text, is400 := missText(err)
			if !is400 || !strings.Contains(text, "differs at "+pc.missAt) {
				t.Errorf("miss = %s, want a 400 that differs at %s", text, pc.missAt)
			}
		})
	}
}
