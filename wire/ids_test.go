package wire

import "testing"

func TestResponseIDAndPrevious(t *testing.T) {
	cases := []struct {
		name string
		kind Kind
		f    Framing
		body string
		want string
	}{
		{"responses object", KindOpenAIResponses, FramingNone,
			`{"id":"resp_1","object":"response","status":"completed","output":[]}`, "resp_1"},
		{"responses stream", KindOpenAIResponses, FramingSSE,
			"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_2\",\"object\":\"response\",\"status\":\"in_progress\"}}\n\n" +
				"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_2\",\"object\":\"response\",\"status\":\"completed\",\"output\":[]}}\n\n", "resp_2"},
		{"chat has none", KindOpenAIChat, FramingNone,
			`{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := ParseResponse(c.kind, c.f, []byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if r.ResponseID != c.want {
				t.Errorf("ResponseID = %q, want %q", r.ResponseID, c.want)
			}
		})
	}
	req, err := ParseRequest(KindOpenAIResponses, "/v1/responses", []byte(`{"model":"m","previous_response_id":"resp_1","input":[{"type":"function_call_output","call_id":"c1","output":"22"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if req.Previous != "resp_1" {
		t.Errorf("Previous = %q, want resp_1", req.Previous)
	}
}

func TestErrorMessageReadsEveryShape(t *testing.T) {
	for _, kind := range []Kind{KindOpenAIChat, KindAnthropicMessages, KindGemini, KindOllama} {
		_, body := ErrorBody(kind, 429, "rate_limit_error", "slow down")
		if got := ErrorMessage(body); got != "slow down" {
			t.Errorf("%s: ErrorMessage(%s) = %q", kind, body, got)
		}
	}
	if got := ErrorMessage([]byte(`{"message":"top"}`)); got != "top" {
		t.Errorf("top-level message: %q", got)
	}
	if got := ErrorMessage([]byte(`not json`)); got != "" {
		t.Errorf("not JSON: %q", got)
	}
}
