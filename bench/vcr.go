package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"

	"go.yaml.in/yaml/v4"
	"gopkg.in/dnaeon/go-vcr.v4/pkg/cassette"
	"gopkg.in/dnaeon/go-vcr.v4/pkg/recorder"
)

// handlerTransport answers requests with a handler, in memory; go-vcr
// records the bench's JSON interaction through it.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rr := httptest.NewRecorder()
	t.h.ServeHTTP(rr, r)
	return rr.Result(), nil
}

// recordVCR records the JSON interaction (request 0), then the streamed one,
// with go-vcr itself and returns the cassette name (the path without
// ".yaml").
func recordVCR(dir string) (string, error) {
	name := filepath.Join(dir, "vcr-1")
	rec, err := recorder.New(name, recorder.WithMode(recorder.ModeRecordOnly),
		recorder.WithRealTransport(handlerTransport{newUpstream()}), recorder.WithSkipRequestLatency(true))
	if err != nil {
		return "", err
	}
	for _, stream := range []bool{false, true} {
		status, body, err := fetch(rec.GetDefaultClient(), vcrBase, requestBody(0, stream))
		if err != nil {
			return "", err
		}
		want := jsonResponse()
		if stream {
			want = bytes.Join(sseStream(), nil)
		}
		if err := check(status, body, want); err != nil {
			return "", fmt.Errorf("go-vcr recording: %w", err)
		}
	}
	return name, rec.Stop()
}

// buildVCRCassette writes a go-vcr cassette of n distinct requests (the
// scale scenario's), copying the shape of the interaction go-vcr recorded
// itself.
func buildVCRCassette(dir, recorded string, n int) (string, error) {
	tmpl, err := cassette.Load(recorded)
	if err != nil {
		return "", err
	}
	if len(tmpl.Interactions) == 0 {
		return "", fmt.Errorf("go-vcr template %s: no interactions", recorded)
	}
	t := tmpl.Interactions[0] // the JSON one
	name := filepath.Join(dir, "vcr-"+strconv.Itoa(n))
	c := cassette.New(name)
	c.MarshalFunc = yaml.Marshal // what recorder.New sets; cassette.New leaves it nil
	for k := range n {
		i := *t
		body := requestBody(k, false)
		i.Request.Body = string(body)
		i.Request.ContentLength = int64(len(body))
		answer := scaleAnswer(k)
		i.Response.Body = string(answer)
		i.Response.ContentLength = int64(len(answer))
		c.AddInteraction(&i)
	}
	return name, c.Save()
}
