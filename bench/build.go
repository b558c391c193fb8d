package main

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/store"
	"github.com/llmproxy/llmproxy/wire"
)

// recordedAt is the recording time written into bench cassettes.
var recordedAt = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// interaction is a recorded exchange as the record mode would store it,
// before redaction.
func interaction(reqBody []byte, resp cassette.Response) *cassette.Interaction {
	kind := wire.Detect(http.MethodPost, chatPath)
	return &cassette.Interaction{
		Upstream:   cassette.DefaultUpstream,
		Provider:   kind.Provider(),
		Kind:       string(kind),
		RecordedAt: recordedAt,
		Request: cassette.Request{
			Method: http.MethodPost,
			Path:   chatPath,
			Headers: http.Header{
				"Content-Type":  {"application/json"},
				"Authorization": {"Bearer sk-bench"},
			},
			Body: reqBody,
		},
		Response: resp,
	}
}

func jsonRecorded(body []byte) cassette.Response {
	return cassette.Response{Status: http.StatusOK, Headers: responseHeaders("application/json"), Body: body, TTFBMillis: 480, DurationMillis: 574}
}

// writeCassette writes interactions to a new cassette at path in one
// transaction, redacted and indexed as `llmproxy import` writes a cassette
// (cassette.DefaultIndexer), the way replay reads them.
func writeCassette(path string, all []*cassette.Interaction) error {
	r, err := cassette.NewRedactor(nil, nil)
	if err != nil {
		return err
	}
	m, err := cassette.DefaultIndexer()
	if err != nil {
		return err
	}
	for _, i := range all {
		r.Redact(i)
	}
	c, err := cassette.Open(path, cassette.Options{Version: "bench"})
	if err != nil {
		return err
	}
	ct := &cassette.Contents{
		Meta:         store.Meta{Created: recordedAt, Updated: recordedAt, Version: "bench", IndexRules: m.Fingerprint()},
		Interactions: all,
	}
	if err := c.Replace(ct, m.Keys); err != nil {
		c.Close()
		return err
	}
	return c.Close()
}

// buildReplayCassette records the two interactions of the replay scenario
// through llmproxy in record mode, in process, from the bare handler:
// request 0 answered with the 2 KB JSON, and its streamed variant with the
// 200-event SSE stream. Recording, rather than writing the cassette, gives
// it the index a recorded cassette has, whatever rules replay uses.
func buildReplayCassette(path string) error {
	up := httptest.NewServer(newUpstream())
	defer up.Close()
	u, err := url.Parse(up.URL)
	if err != nil {
		return err
	}
	c, err := cassette.Open(path, cassette.Options{Version: "bench"})
	if err != nil {
		return err
	}
	p, err := proxy.New(proxy.Config{Mode: proxy.ModeRecord, Cassette: c, Upstreams: map[string]*url.URL{"openai": u}, Default: u,
		Logger: slog.New(slog.DiscardHandler), Version: "bench"})
	if err != nil {
		c.Close()
		return err
	}
	for _, stream := range []bool{false, true} {
		want := jsonResponse()
		if stream {
			want = bytes.Join(sseStream(), nil)
		}
		r := httptest.NewRequest(http.MethodPost, chatPath, bytes.NewReader(requestBody(0, stream)))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Authorization", "Bearer sk-bench")
		w := httptest.NewRecorder()
		p.ServeHTTP(w, r)
		if err = check(w.Code, w.Body.Bytes(), want); err != nil {
			err = fmt.Errorf("recording the replay cassette (stream %t): %w", stream, err)
			break
		}
	}
	// Close writes what was recorded.
	return errors.Join(err, p.Close(), c.Close())
}

// writeScaleExport writes the export of a cassette of n distinct requests,
// request k answered with scaleAnswer(k): what `llmproxy import` reads to
// build the scale scenario's cassette.
func writeScaleExport(path string, n int) error {
	all := make([]*cassette.Interaction, n)
	for k := range all {
		all[k] = interaction(requestBody(k, false), jsonRecorded(scaleAnswer(k)))
		all[k].ID = uint64(k + 1) // an export numbers its interactions 1..n
	}
	ct := &cassette.Contents{Meta: store.Meta{Created: recordedAt, Updated: recordedAt, Version: "bench"}, Interactions: all}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := cassette.WriteExport(f, ct); err != nil {
		f.Close()
		return fmt.Errorf("export of %d: %w", n, err)
	}
	return f.Close()
}

// buildScaleCassette writes a cassette of n distinct requests, request k
// answered with scaleAnswer(k), in one transaction (for the in-process
// benchmarks; the scale scenario imports an export instead).
func buildScaleCassette(path string, n int) error {
	all := make([]*cassette.Interaction, n)
	for k := range all {
		all[k] = interaction(requestBody(k, false), jsonRecorded(scaleAnswer(k)))
	}
	if err := writeCassette(path, all); err != nil {
		return fmt.Errorf("build cassette of %d: %w", n, err)
	}
	return nil
}
