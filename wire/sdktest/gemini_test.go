package sdktest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/llmproxy/llmproxy/wire"
)

func genaiClient(t *testing.T, m *mock) *genai.Client {
	t.Helper()
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey:      "g-key",
		Backend:     genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: m.URL()},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var geminiContents = []*genai.Content{genai.NewContentFromText("What is the weather in Paris?", genai.RoleUser)}

// seenGemini gathers what a genai client makes of a response or chunks.
func seenGemini(t *testing.T, rs []*genai.GenerateContentResponse) seen {
	t.Helper()
	var got seen
	signed := false
	for _, r := range rs {
		if len(r.Candidates) != 1 || r.Candidates[0].Content == nil {
			t.Fatalf("response %+v has no candidate content", r)
		}
		cand := r.Candidates[0]
		for _, p := range cand.Content.Parts {
			switch {
			case p.FunctionCall != nil:
				args, _ := json.Marshal(p.FunctionCall.Args)
				got.calls = append(got.calls, wire.ToolCall{ID: p.FunctionCall.ID, Name: p.FunctionCall.Name, Arguments: args})
				signed = signed || len(p.ThoughtSignature) > 0
			case p.Thought:
				got.reasoning += p.Text
			default:
				got.text += p.Text
			}
		}
		if cand.FinishReason != "" {
			got.finish = string(cand.FinishReason)
		}
		if u := r.UsageMetadata; u != nil {
			got.input, got.output = int(u.PromptTokenCount), int(u.CandidatesTokenCount+u.ThoughtsTokenCount)
			got.thoughts = int(u.ThoughtsTokenCount)
		}
	}
	if len(got.calls) > 0 && !signed {
		t.Errorf("no thoughtSignature beside the function calls")
	}
	return got
}

func TestGemini(t *testing.T) {
	ctx := context.Background()
	for _, c := range contents {
		for _, form := range []string{"json", "sse", "json-array"} {
			t.Run(c.name+"/"+form, func(t *testing.T) {
				m := answering(t, c.a)
				var rs []*genai.GenerateContentResponse
				switch form {
				case "json":
					r, err := genaiClient(t, m).Models.GenerateContent(ctx, "gemini-2.5-flash", geminiContents, nil)
					if err != nil {
						t.Fatalf("generateContent: %v", err)
					}
					rs = append(rs, r)
				case "sse":
					for r, err := range genaiClient(t, m).Models.GenerateContentStream(ctx, "gemini-2.5-flash", geminiContents, nil) {
						if err != nil {
							t.Fatalf("streamGenerateContent: %v", err)
						}
						rs = append(rs, r)
					}
					if reqs := m.requests(); len(reqs) != 1 || !strings.HasSuffix(reqs[0], ":streamGenerateContent?alt=sse") {
						t.Fatalf("requests %v", reqs)
					}
				case "json-array":
					// genai streams only with alt=sse; without it the API
					// answers one JSON array of the same responses.
					rs = jsonArray(t, m.URL()+"/v1beta/models/gemini-2.5-flash:streamGenerateContent")
				}
				got := seenGemini(t, rs)
				last := rs[len(rs)-1]
				if last.ResponseID != c.a.ID || last.ModelVersion != c.a.Model {
					t.Errorf("responseId %q modelVersion %q", last.ResponseID, last.ModelVersion)
				}
				check(t, c.a, got, "STOP")
			})
		}
	}
}

// jsonArray posts a request and decodes the streamed JSON array answer
// element by element, as it arrives, into genai's response type.
func jsonArray(t *testing.T, url string) []*genai.GenerateContentResponse {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(`{"contents":[{"role":"user","parts":[{"text":"Paris?"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		t.Fatalf("array start: %v %v", tok, err)
	}
	var rs []*genai.GenerateContentResponse
	for dec.More() {
		var r genai.GenerateContentResponse
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("element %d: %v", len(rs), err)
		}
		rs = append(rs, &r)
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim(']') {
		t.Fatalf("array end: %v %v", tok, err)
	}
	if rest, _ := io.ReadAll(dec.Buffered()); len(bytes.TrimSpace(rest)) > 0 {
		t.Errorf("bytes after the array: %q", rest)
	}
	return rs
}

func TestGeminiErrors(t *testing.T) {
	ctx := context.Background()
	ok := contents[0].a

	t.Run("429 RESOURCE_EXHAUSTED", func(t *testing.T) {
		m := newMock(t, step{err: &wire.ErrorAnswer{Status: 429, Message: "Resource has been exhausted", RetryAfter: 20 * time.Second}})
		_, err := genaiClient(t, m).Models.GenerateContent(ctx, "gemini-2.5-flash", geminiContents, nil)
		var apiErr genai.APIError
		if !errors.As(err, &apiErr) || apiErr.Code != 429 || apiErr.Status != "RESOURCE_EXHAUSTED" || apiErr.Message != "Resource has been exhausted" {
			t.Fatalf("err = %v, want a 429 RESOURCE_EXHAUSTED", err)
		}
		if len(apiErr.Details) != 1 || apiErr.Details[0]["retryDelay"] != "20s" {
			t.Errorf("details %v, want a RetryInfo of 20s", apiErr.Details)
		}
	})

	t.Run("503 UNAVAILABLE", func(t *testing.T) {
		m := newMock(t, step{err: &wire.ErrorAnswer{Status: 503, Message: "The model is overloaded."}})
		_, err := genaiClient(t, m).Models.GenerateContent(ctx, "gemini-2.5-flash", geminiContents, nil)
		var apiErr genai.APIError
		if !errors.As(err, &apiErr) || apiErr.Code != 503 || apiErr.Status != "UNAVAILABLE" {
			t.Fatalf("err = %v, want a 503 UNAVAILABLE", err)
		}
	})

	t.Run("stream broken by an error event", func(t *testing.T) {
		m := newMock(t, step{answer: &ok, cut: 2})
		var text string
		var streamErr error
		for r, err := range genaiClient(t, m).Models.GenerateContentStream(ctx, "gemini-2.5-flash", geminiContents, nil) {
			if err != nil {
				streamErr = err
				break
			}
			text += r.Text()
		}
		var apiErr genai.APIError
		if !errors.As(streamErr, &apiErr) || apiErr.Code != 529 {
			t.Fatalf("stream error %v, want the API error", streamErr)
		}
		if !strings.HasPrefix(ok.Text, text) || text == "" {
			t.Errorf("text before the error %q", text)
		}
	})
}
