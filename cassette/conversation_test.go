package cassette_test

import (
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/wire"
)

// TestConversations: requests are grouped by message history (the latest
// conversation whose last turns begin the request's, whitespace aside) or
// by previous_response_id, and numbered by turn.
func TestConversations(t *testing.T) {
	type req struct {
		kind       wire.Kind
		body       string
		responseID string
		conv, turn int
	}
	u1 := `{"role":"user","content":"one"}`
	a1 := `{"role":"assistant","content":"A"}`
	u2 := `{"role":"user","content":"two"}`
	chat := func(turns ...string) string {
		s := `{"model":"m","messages":[`
		for n, t := range turns {
			if n > 0 {
				s += ","
			}
			s += t
		}
		return s + "]}"
	}
	reqs := []req{
		{wire.KindOpenAIChat, chat(u1), "", 0, 0},
		{wire.KindOpenAIChat, chat(u1), "", 1, 0},                                             // the same start again: a conversation of its own
		{wire.KindOpenAIChat, chat(u1, a1, u2), "", 1, 1},                                     // continues the latest
		{wire.KindOpenAIChat, chat(`{ "role": "user", "content": "one" }`, a1, u2), "", 0, 1}, // then the other, spelled otherwise
		{wire.KindOpenAIChat, chat(u2), "", 2, 0},
		{wire.KindOpenAIChat, chat(), "", 3, 0},
		{wire.KindOpenAIResponses, `{"model":"m","input":"hi"}`, "resp_1", 4, 0},
		{wire.KindOpenAIResponses, `{"model":"m","previous_response_id":"resp_1","input":"more"}`, "resp_2", 4, 1},
		{wire.KindOpenAIResponses, `{"model":"m","previous_response_id":"resp_1","input":"again"}`, "", 5, 0}, // resp_1 no longer ends a conversation
		{wire.KindOpenAIResponses, `{"model":"m","previous_response_id":"resp_2","input":"last"}`, "", 4, 2},
	}
	var c cassette.Conversations
	for n, r := range reqs {
		path := "/v1/chat/completions"
		if r.kind == wire.KindOpenAIResponses {
			path = "/v1/responses"
		}
		parsed, err := wire.ParseRequest(r.kind, path, []byte(r.body))
		if err != nil {
			t.Fatal(err)
		}
		conv, turn := c.Add(parsed, []byte(r.body), r.responseID)
		if conv != r.conv || turn != r.turn {
			t.Errorf("request %d: conversation %d turn %d, want %d turn %d", n, conv, turn, r.conv, r.turn)
		}
	}
	if c.Len() != 6 {
		t.Errorf("Len %d, want 6", c.Len())
	}
}
