package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime/pprof"
	"strconv"
	"sync"
	"time"

	"gopkg.in/dnaeon/go-vcr.v4/pkg/recorder"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/faults"
	"github.com/llmproxy/llmproxy/internal/batchlog"
	"github.com/llmproxy/llmproxy/internal/heapfloor"
	"github.com/llmproxy/llmproxy/proxy"
)

// upstream serves the bench's two responses: the 2 KB JSON for a request
// without "stream":true, the 200-event SSE stream for one with it. It is
// both the limit (a bare net/http handler serving the bytes replay serves,
// doing the least a handler can) and the fake upstream of the record
// scenario. Its headers are built once: a request copies their slices into
// the response's map. A JSON answer is one Write (net/http adds nothing but
// Date); a stream writes and flushes each event, as replay does.
type upstream struct {
	json []byte
	sse  [][]byte
	// jsonHeader and sseHeader are the headers of each answer, Content-Length
	// included for the JSON one; shared, never modified.
	jsonHeader, sseHeader http.Header
	// bodies are the buffers request bodies are read into.
	bodies sync.Pool
	// gap is the pause before each event after the first.
	gap time.Duration
	// stamp, when set, makes each event anew with stamp() as its id, taken
	// just before the event is written.
	stamp func() int64
}

func newUpstream() *upstream {
	u := &upstream{json: jsonResponse(), sse: sseStream(),
		sseHeader: responseHeaders("text/event-stream; charset=utf-8")}
	u.jsonHeader = responseHeaders("application/json")
	u.jsonHeader["Content-Length"] = []string{strconv.Itoa(len(u.json))}
	u.bodies.New = func() any { return new(bytes.Buffer) }
	return u
}

var streamFlag = []byte(`"stream":true`)

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := u.bodies.Get().(*bytes.Buffer)
	defer u.bodies.Put(body)
	body.Reset()
	if _, err := body.ReadFrom(r.Body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	stream := bytes.Contains(body.Bytes(), streamFlag)
	h, src := w.Header(), u.jsonHeader
	if stream {
		src = u.sseHeader
	}
	for k, v := range src {
		h[k] = v
	}
	w.WriteHeader(http.StatusOK)
	if !stream {
		_, _ = w.Write(u.json)
		return
	}
	rc := http.NewResponseController(w)
	for i := range sseEvents {
		if i > 0 && u.gap > 0 {
			time.Sleep(u.gap)
		}
		ev := u.sse[i]
		if u.stamp != nil {
			ev = sseEvent(i, u.stamp())
		}
		if _, err := w.Write(ev); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}

// vcrBase is the upstream URL the go-vcr cassette was recorded against.
// Recording goes through an in-memory transport, so nothing listens there.
const vcrBase = "http://upstream.bench.invalid"

// vcrHandler puts a go-vcr recorder in replay mode behind net/http, the way
// one would serve a go-vcr cassette to a client in another process: each
// request is re-issued, with the headers a client sets, to the recorder as
// an http.RoundTripper.
type vcrHandler struct{ rec *recorder.Recorder }

func (v vcrHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, vcrBase+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for _, k := range []string{"Content-Type", "Authorization"} {
		if v := r.Header.Values(k); len(v) > 0 {
			out.Header[k] = v
		}
	}
	resp, err := v.rec.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	defer resp.Body.Close()
	h := w.Header()
	for k, vs := range resp.Header {
		h[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// refuse is replay's transport: replay must never reach an upstream.
type refuse struct{}

func (refuse) RoundTrip(r *http.Request) (*http.Response, error) {
	return nil, fmt.Errorf("replay tried to reach %s", r.URL)
}

// serveOptions are the flags of a server child.
type serveOptions struct {
	kind       string // bare, bare-sandbox, replay, record, vcr, mock, mock-bare
	cassette   string
	upstream   string
	cpuprofile string
	// fault, for a replay child, is a --fault spec it injects (seed 1).
	fault string
	// path, when set, is the URL path every request is served at.
	path string
	// exe is the binary the parent starts the child from; "" for this one.
	exe string
	// env is added to the child's environment (GOGC=100 keeps llmproxy's
	// heap floor off; see heapfloor.StartServing).
	env []string
}

// serveChild runs one server under test until its standard input closes.
// It prints "ready ADDR OPEN_MS" once it accepts connections; OPEN_MS is the
// time spent opening the cassette and building the handler.
func serveChild(o serveOptions) error {
	if o.cpuprofile != "" {
		f, err := os.Create(o.cpuprofile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	start := time.Now()
	if llmproxyKind(o.kind) {
		// As llmproxy's serving commands keep it (cmd/llmproxy).
		if f := heapfloor.StartServing(); f != nil {
			defer f.Stop()
		}
	}
	// The children log as llmproxy's serving commands do, at info, in text,
	// in batches (internal/batchlog), into the file the parent gives them.
	lw := batchlog.New(os.Stderr, batchlog.Delay)
	defer lw.Close()
	logger := slog.New(batchlog.Handler(slog.NewTextHandler(lw, nil), lw, slog.LevelWarn))
	var h http.Handler
	switch o.kind {
	case "bare":
		h = newUpstream()
	case "bare-sandbox":
		// The bare handler sending, besides its own, the two headers
		// llmproxy adds to every answer (proxy's sandbox): what those cost a
		// minimal handler (bench/findings.md, replay at 64 connections).
		u := newUpstream()
		u.jsonHeader["X-Content-Type-Options"] = []string{"nosniff"}
		u.jsonHeader["Content-Security-Policy"] = []string{"sandbox"}
		h = u
	case "mock-floor":
		f, err := newMockFloor()
		if err != nil {
			return err
		}
		h = f
	case "replay-floor", "replay-floor-plain":
		f, err := newFloorReplay(o.kind == "replay-floor")
		if err != nil {
			return err
		}
		h = f
	case "replay", "record":
		mode := proxy.ModeReplay
		if o.kind == "record" {
			mode = proxy.ModeRecord
		}
		c, err := cassette.Open(o.cassette, cassette.Options{ReadOnly: mode == proxy.ModeReplay, Version: "bench"})
		if err != nil {
			return err
		}
		defer c.Close()
		cfg := proxy.Config{Mode: mode, Cassette: c, OnExhausted: proxy.ExhaustedRepeatLast, Logger: logger, Version: "bench"}
		if mode == proxy.ModeReplay {
			cfg.Transport = refuse{}
			if o.fault != "" {
				fs, err := faults.ParseAll([]string{o.fault})
				if err != nil {
					return fmt.Errorf("-fault: %w", err)
				}
				cfg.Faults = faults.Plan{Seed: 1, Faults: fs}
			}
		} else {
			u, err := url.Parse(o.upstream)
			if err != nil {
				return err
			}
			cfg.Upstreams = map[string]*url.URL{"openai": u}
			cfg.Default = u
		}
		p, err := proxy.New(cfg)
		if err != nil {
			return err
		}
		defer p.Close()
		h = p
	case "vcr":
		rec, err := recorder.New(o.cassette,
			recorder.WithMode(recorder.ModeReplayOnly),
			recorder.WithReplayableInteractions(true),
			recorder.WithSkipRequestLatency(true),
			recorder.WithRealTransport(refuse{}))
		if err != nil {
			return err
		}
		h = vcrHandler{rec}
	case "frames":
		fs, err := newFrameServer()
		if err != nil {
			return err
		}
		h = fs
	case "mock", "mock-bare":
		mh, closeMock, err := mockHandlerFor(o.kind, logger)
		if err != nil {
			return err
		}
		defer closeMock()
		h = mh
	default:
		return fmt.Errorf("unknown server kind %q", o.kind)
	}
	if o.path != "" {
		h = atPath(o.path, h)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	open := time.Since(start)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	if llmproxyKind(o.kind) {
		// llmproxy's children run behind the server its commands use, with
		// the default --idle-timeout.
		srv = proxy.HTTPServer(h, 2*time.Minute, log.New(io.Discard, "", 0))
	}
	go func() { _ = srv.Serve(ln) }()
	fmt.Printf("ready %s %.3f\n", ln.Addr(), float64(open.Microseconds())/1000)
	_, _ = io.Copy(io.Discard, bufio.NewReader(os.Stdin))
	if err := srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// llmproxyKind reports whether a child of kind serves llmproxy's proxy.
func llmproxyKind(kind string) bool {
	switch kind {
	case "replay", "record", "mock":
		return true
	}
	return false
}
