package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/sjson"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/proxy"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// numberedAnswers is an OpenAI chat upstream whose n-th answer (from 1) says
// "answer n", so a test can tell which recording replay served. A streamed
// answer has a role event, "answer n", pieces-1 empty content events, a
// finish event and [DONE]; each chunk carries padding bytes of obfuscation,
// as OpenAI's do, to make the stream as large as a test needs.
func numberedAnswers(pieces, padding int) fake.Script {
	return fake.ScriptFunc(func(req *fake.Request) *fake.Response {
		n := req.N + 1
		id := fmt.Sprintf("chatcmpl-%d", n)
		if !bytes.Contains(req.Body, []byte(`"stream":true`)) {
			body := fmt.Sprintf(`{"id":%q,"object":"chat.completion","created":1700000000,"model":"gpt-4o-mini",`+
				`"choices":[{"index":0,"message":{"role":"assistant","content":"answer %d"},"finish_reason":"stop"}]}`, id, n)
			return &fake.Response{Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(body)}
		}
		pad := strings.Repeat("x", padding)
		chunk := func(delta, finish string) []byte {
			return fmt.Appendf(nil, `data: {"id":%q,"object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini",`+
				`"choices":[{"index":0,"delta":%s,"finish_reason":%s}],"obfuscation":%q}`+"\n\n", id, delta, finish, pad)
		}
		events := [][]byte{chunk(`{"role":"assistant","content":""}`, "null")}
		events = append(events, chunk(fmt.Sprintf(`{"content":"answer %d"}`, n), "null"))
		for range pieces - 1 {
			events = append(events, chunk(`{"content":""}`, "null"))
		}
		events = append(events, chunk(`{}`, `"stop"`), []byte("data: [DONE]\n\n"))
		return &fake.Response{Header: http.Header{"Content-Type": {"text/event-stream; charset=utf-8"}}, Events: events}
	})
}

// askChat sends one chat completion with openai-go and returns its text.
func askChat(ctx context.Context, baseURL, prompt string, stream bool, opts ...option.RequestOption) (string, error) {
	client := openai.NewClient(append([]option.RequestOption{
		option.WithBaseURL(baseURL + "/v1/"), option.WithAPIKey(testKey), option.WithMaxRetries(0),
	}, opts...)...)
	params := openai.ChatCompletionNewParams{
		Model:    openai.ChatModelGPT4oMini,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
	}
	if !stream {
		resp, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			return "", err
		}
		return resp.Choices[0].Message.Content, nil
	}
	s := client.Chat.Completions.NewStreaming(ctx, params)
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	if err := s.Err(); err != nil {
		return "", err
	}
	return acc.Choices[0].Message.Content, nil
}

// missOf returns the cassette_miss message of an SDK error, or "".
func missOf(err error) string {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusBadRequest && apiErr.Type == "cassette_miss" {
		return apiErr.Message
	}
	return ""
}

// recordNumbered records prompts through a proxy in front of up and returns
// the cassette's path.
func recordNumbered(t *testing.T, up *fake.Upstream, stream bool, prompts ...string) string {
	t.Helper()
	path := cassettePath(t)
	rec := startProxy(t, proxy.ModeRecord, path, up.URL())
	for n, p := range prompts {
		got, err := askChat(context.Background(), rec.URL(), p, stream)
		if want := fmt.Sprintf("answer %d", n+1); err != nil || got != want {
			t.Fatalf("recording %q: got %q, %v; want %q", p, got, err, want)
		}
	}
	rec.stop()
	return path
}

// apiGet decodes the JSON answer of a GET on the proxy's own API.
func apiGet(t *testing.T, base, path string, v any) {
	t.Helper()
	resp, err := http.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v in %s", path, err, b)
	}
}

func unusedIDs(t *testing.T, base, query string) []uint64 {
	t.Helper()
	var got struct{ Unused []cassette.Summary }
	apiGet(t, base, "/_llmproxy/unused"+query, &got)
	ids := []uint64{}
	for _, s := range got.Unused {
		ids = append(ids, s.ID)
	}
	return ids
}

func TestOnExhausted(t *testing.T) {
	// Each step sends "same" (recorded twice, answered "answer 1" then
	// "answer 2") or "other" (never recorded). want is the answer, or
	// "miss" / "exhausted" for the two kinds of miss.
	type step struct{ prompt, want string }
	tests := []struct {
		policy proxy.Exhausted
		steps  []step
		unused []uint64
	}{
		{proxy.ExhaustedReject, []step{
			{"other", "miss"}, {"same", "answer 1"}, {"other", "miss"}, {"same", "answer 2"},
			{"same", "exhausted"}, {"same", "exhausted"},
		}, []uint64{}},
		{proxy.ExhaustedRepeatLast, []step{
			{"same", "answer 1"}, {"other", "miss"}, {"same", "answer 2"}, {"same", "answer 2"}, {"same", "answer 2"},
		}, []uint64{}},
		{proxy.ExhaustedRestart, []step{
			{"same", "answer 1"}, {"same", "answer 2"}, {"other", "miss"}, {"same", "answer 1"}, {"same", "answer 2"},
			{"same", "answer 1"},
		}, []uint64{2}},
	}
	for _, stream := range []bool{false, true} {
		up := fake.New(t, numberedAnswers(3, 0))
		path := recordNumbered(t, up, stream, "same", "same")
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/stream=%v", tt.policy, stream), func(t *testing.T) {
				rep := startProxy(t, proxy.ModeReplay, path, "", func(c *proxy.Config) { c.OnExhausted = tt.policy })
				for n, st := range tt.steps {
					got, err := askChat(context.Background(), rep.URL(), st.prompt, stream)
					switch miss := missOf(err); {
					case st.want == "miss" && strings.Contains(miss, "closest is interaction"):
					case st.want == "exhausted" && strings.Contains(miss, "was already served from all 2 recordings, interactions 1, 2; --on-exhausted is reject"):
					case err == nil && got == st.want:
					default:
						t.Fatalf("step %d (%s): got %q, %v; want %s", n+1, st.prompt, got, err, st.want)
					}
				}
				if got := unusedIDs(t, rep.URL(), ""); fmt.Sprint(got) != fmt.Sprint(tt.unused) {
					t.Errorf("unused after the steps = %v, want %v", got, tt.unused)
				}
			})
		}
	}
}

// sendAndHangUp sends a streamed chat request on a raw connection, reads
// until it holds `events` complete SSE events (0: only the request is sent),
// and closes the connection.
func sendAndHangUp(t *testing.T, base, prompt string, events int) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A small receive buffer, so that a large answer cannot all be in
	// flight when the client goes.
	if err := conn.(*net.TCPConn).SetReadBuffer(4 << 10); err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":%q}],"stream":true}`, prompt)
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	if events == 0 {
		return
	}
	br := bufio.NewReader(conn)
	var got []byte
	for bytes.Count(got, []byte("\n\n")) < events+1 { // +1: the end of the response head
		line, err := br.ReadBytes('\n')
		if err != nil {
			t.Fatalf("reading the stream: %v after %q", err, got)
		}
		got = append(got, bytes.TrimRight(line, "\r\n")...)
		got = append(got, '\n')
		if bytes.HasPrefix(got, []byte("HTTP/1.1 ")) && !bytes.HasPrefix(got, []byte("HTTP/1.1 200")) {
			t.Fatalf("the proxy answered %q", got)
		}
	}
}

func TestClientLeavingLeavesInteractionForRetry(t *testing.T) {
	tests := []struct {
		name     string
		events   int // read before hanging up
		pieces   int
		padding  int
		upstream []fake.Option
		cfg      func(*proxy.Config)
	}{
		{"mid-stream at recorded pace", 1, 20, 0, []fake.Option{fake.EventDelay(5 * time.Millisecond)},
			func(c *proxy.Config) { c.Pace = proxy.PaceRecorded }},
		{"before the first byte", 0, 3, 0, nil,
			func(c *proxy.Config) { c.Latency = 300 * time.Millisecond }},
		// Instant pace, with small socket buffers on both sides (see
		// smallBuffers), so the proxy is still writing when the client goes.
		{"mid-stream at instant pace", 2, 64, 8 << 10, nil, func(c *proxy.Config) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := fake.New(t, numberedAnswers(tt.pieces, tt.padding), tt.upstream...)
			path := recordNumbered(t, up, true, "same", "same")
			rep := startProxy(t, proxy.ModeReplay, path, "", tt.cfg)
			rep.srv.Close()
			rep.srv = httptest.NewUnstartedServer(rep.p)
			rep.srv.Listener = smallBuffers{rep.srv.Listener}
			rep.srv.Start()
			sendAndHangUp(t, rep.URL(), "same", tt.events)
			if tt.events == 0 {
				// Hanging up before any answer, the request may not even
				// have been read yet: wait for its log entry, so that it
				// surely came first.
				waitLog(t, rep.URL(), 1)
			}
			// Otherwise the serve may still be running: the retry waits for
			// it to end, then gets the same interaction.
			got, err := askChat(context.Background(), rep.URL(), "same", true)
			if err != nil || got != "answer 1" {
				var log struct{ Entries []proxy.LogEntry }
				apiGet(t, rep.URL(), "/_llmproxy/log", &log)
				t.Fatalf("retry after hanging up: got %q, %v; want answer 1; log %+v", got, err, log.Entries)
			}
			var log struct{ Entries []proxy.LogEntry }
			apiGet(t, rep.URL(), "/_llmproxy/log", &log)
			if len(log.Entries) != 2 || !log.Entries[0].Incomplete || log.Entries[0].Interaction != 1 ||
				log.Entries[1].Incomplete || log.Entries[1].Interaction != 1 {
				t.Errorf("log = %+v, want interaction 1 incomplete, then interaction 1 delivered", log.Entries)
			}
			if got := unusedIDs(t, rep.URL(), ""); fmt.Sprint(got) != "[2]" {
				t.Errorf("unused = %v, want [2]", got)
			}
		})
	}
}

// smallBuffers is a listener whose connections have 4 KiB send buffers.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		err = errors.Join(err, tc.SetWriteBuffer(4<<10))
	}
	return c, err
}

// waitLog waits until the proxy's log holds n entries.
func waitLog(t *testing.T, base string, n int) {
	t.Helper()
	for {
		var log struct{ Entries []proxy.LogEntry }
		apiGet(t, base, "/_llmproxy/log", &log)
		if len(log.Entries) >= n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// timedEvents sends a streamed chat request and returns each SSE event with
// the time it took to arrive, counted from just before the request was sent.
func timedEvents(t *testing.T, base, prompt string) ([][]byte, []time.Duration) {
	t.Helper()
	body := fmt.Sprintf(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":%q}],"stream":true}`, prompt)
	start := time.Now()
	resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	br := bufio.NewReader(resp.Body)
	var events [][]byte
	var at []time.Duration
	var cur []byte
	for {
		line, err := br.ReadBytes('\n')
		cur = append(cur, line...)
		if bytes.Equal(line, []byte("\n")) {
			events, at = append(events, cur), append(at, time.Since(start))
			cur = nil
		}
		if err == io.EOF {
			return events, at
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestPaceAndLatency(t *testing.T) {
	const gap = 15 * time.Millisecond
	up := fake.New(t, numberedAnswers(6, 0), fake.EventDelay(gap))
	path := recordNumbered(t, up, true, "paced")
	c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := c.Get(1)
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rec.Response.Events); n != 9 {
		t.Fatalf("recorded %d events, want 9", n)
	}
	if last := rec.Response.Events[8].AtMillis; last < 9*float64(gap/time.Millisecond) {
		t.Fatalf("the last event was recorded at %.1f ms, before the upstream could send it", last)
	}

	tests := []struct {
		mode    proxy.Mode
		pace    proxy.Pace
		latency time.Duration
	}{
		{proxy.ModeReplay, proxy.PaceRecorded, 0},
		{proxy.ModeReplay, proxy.PaceInstant, 80 * time.Millisecond},
		{proxy.ModeReplay, proxy.PaceRecorded, 50 * time.Millisecond},
		{proxy.ModeAuto, proxy.PaceRecorded, 50 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%s/latency=%s", tt.mode, tt.pace, tt.latency), func(t *testing.T) {
			dir := t.TempDir()
			cp := filepath.Join(dir, "copy.cassette")
			if err := os.WriteFile(cp, rawCassette(t, path), 0o644); err != nil {
				t.Fatal(err)
			}
			p := startProxy(t, tt.mode, cp, up.URL(), func(c *proxy.Config) { c.Pace, c.Latency = tt.pace, tt.latency })
			hits := up.Hits()
			events, at := timedEvents(t, p.URL(), "paced")
			if up.Hits() != hits {
				t.Fatal("the request was forwarded, not replayed")
			}
			if len(events) != len(rec.Response.Events) {
				t.Fatalf("got %d events, want %d", len(events), len(rec.Response.Events))
			}
			for i, e := range rec.Response.Events {
				if !bytes.Equal(events[i], e.Data) {
					t.Errorf("event %d = %q, want %q", i, events[i], e.Data)
				}
				floor := tt.latency
				if tt.pace == proxy.PaceRecorded {
					floor += time.Duration(e.AtMillis * float64(time.Millisecond))
				}
				if at[i] < floor {
					t.Errorf("event %d arrived after %s, before its floor %s (recorded at %.1f ms)", i, at[i], floor, e.AtMillis)
				}
			}
		})
	}
}

func TestMissMessages(t *testing.T) {
	up := fake.New(t, fake.OpenAIChat(weatherLoop))
	path := cassettePath(t)
	rec := startProxy(t, proxy.ModeRecord, path, up.URL())
	if _, err := openaiGoLoop(context.Background(), rec.client(), rec.URL(), "What's the weather in Paris?", false); err != nil {
		t.Fatal(err)
	}
	rec.stop()
	c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	turn1, err1 := c.Get(1)
	turn2, err2 := c.Get(2)
	c.Close()
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	set := func(body []byte, path string, v any) []byte {
		out, err := sjson.SetBytes(body, path, v)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	raw := func(body []byte, path, v string) []byte {
		out, err := sjson.SetRawBytes(body, path, []byte(v))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	b1, b2 := []byte(turn1.Request.Body), []byte(turn2.Request.Body)
	tests := []struct {
		name   string
		target string // request path; "" is /v1/chat/completions
		body   []byte
		before int // times the body is sent before the miss
	}{
		{"prompt changed", "", set(b1, "messages.0.content", "What's the weather in Rome?"), 0},
		{"model changed", "", set(b1, "model", "gpt-4o"), 0},
		{"extra message", "", raw(b2, "messages.-1", `{"role":"user","content":"And tomorrow?"}`), 0},
		{"tool result changed", "", set(b2, "messages.2.content", `{"location":"Paris","temperature":35,"unit":"celsius","condition":"sunny"}`), 0},
		{"tool call arguments changed", "", set(b2, "messages.1.tool_calls.0.function.arguments", `{"location":"Lyon"}`), 0},
		{"tools dropped", "", raw(b1, "tools", `[]`), 0},
		{"long prompt changed at the end", "", set(b1, "messages.0.content", strings.Repeat("What's the weather in Paris? ", 8)+"Or Rome?"), 0},
		{"query added", "/v1/chat/completions?api-version=2024-10-21", b1, 0},
		{"different path", "/v1/chat/completion", b1, 0},
		{"different upstream", "/anthropic/v1/chat/completions", b1, 0},
		{"every recording served", "", b1, 1},
	}
	var out bytes.Buffer
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var misses []string
			rep := startProxy(t, proxy.ModeReplay, path, "", func(c *proxy.Config) {
				c.OnMiss = func(msg string) { misses = append(misses, msg) }
			})
			target := tt.target
			if target == "" {
				target = "/v1/chat/completions"
			}
			var status int
			var resp *http.Response
			var body []byte
			for range tt.before + 1 {
				var err error
				resp, err = http.Post(rep.URL()+target, "application/json", bytes.NewReader(tt.body))
				if err != nil {
					t.Fatal(err)
				}
				body, _ = io.ReadAll(resp.Body)
				resp.Body.Close()
				status = resp.StatusCode
			}
			if status != http.StatusBadRequest || resp.Header.Get(proxy.MissHeader) != "1" {
				t.Fatalf("status %d, %s %q; want 400 and %[2]s: 1", status, proxy.MissHeader, resp.Header.Get(proxy.MissHeader))
			}
			var e struct {
				Error struct{ Message, Type string }
			}
			if err := json.Unmarshal(body, &e); err != nil || e.Error.Type != "cassette_miss" {
				t.Fatalf("body %s is not an OpenAI error of type cassette_miss (%v)", body, err)
			}
			msg := strings.ReplaceAll(strings.ReplaceAll(e.Error.Message, path, "CASSETTE"), rep.URL(), "PROXY")
			if len(misses) != 1 || misses[0] != e.Error.Message {
				t.Errorf("OnMiss got %q, want the message once", misses)
			}
			fmt.Fprintf(&out, "== %s\n%s\n\n", tt.name, msg)
		})
	}
	golden(t, "miss.golden", out.Bytes())
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run go test -update to accept it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// Requests a recording answered leave their memory (exchange, body buffer,
// header map) to the next ones: concurrent replays of different requests,
// with bodies of different lengths, each still get their own answer.
func TestReplayReusesMemorySafely(t *testing.T) {
	up := fake.New(t, numberedAnswers(2, 0))
	prompts := []string{"a short one", "a longer prompt, " + strings.Repeat("with more words ", 40), "third"}
	path := recordNumbered(t, up, false, prompts...)
	rep := startProxy(t, proxy.ModeReplay, path, "", func(c *proxy.Config) { c.OnExhausted = proxy.ExhaustedRepeatLast })
	var wg sync.WaitGroup
	errs := make(chan error, 8*30)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 30 {
				n := (g + k) % len(prompts)
				got, err := askChat(context.Background(), rep.URL(), prompts[n], false)
				if want := fmt.Sprintf("answer %d", n+1); err != nil || got != want {
					errs <- fmt.Errorf("%q: got %q, %v; want %q", prompts[n][:5], got, err, want)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
