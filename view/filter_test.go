package view_test

import (
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/view"
)

// chat is an OpenAI chat interaction: a system prompt, earlier turns, the
// user's latest text, and the answer's text or a call of tool.
func chat(system string, history []string, user, answer, tool string) *cassette.Interaction {
	msgs := []string{fmt.Sprintf(`{"role":"system","content":%q}`, system)}
	for k, h := range history {
		role := "user"
		if k%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, fmt.Sprintf(`{"role":%q,"content":%q}`, role, h))
	}
	msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":%q}`, user))
	req := `{"model":"gpt-4o-mini","messages":[` + strings.Join(msgs, ",") + `]}`
	msg := fmt.Sprintf(`{"role":"assistant","content":%q}`, answer)
	if tool != "" {
		msg = fmt.Sprintf(`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":%q,"arguments":"{}"}}]}`, tool)
	}
	resp := `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":` + msg + `,"finish_reason":"stop"}]}`
	return &cassette.Interaction{Upstream: "openai", Provider: "openai", Kind: "openai-chat",
		Request:  cassette.Request{Method: "POST", Path: "/v1/chat/completions", Body: []byte(req), Headers: http.Header{"Content-Type": {"application/json"}}},
		Response: cassette.Response{Status: 200, Body: []byte(resp), Headers: http.Header{"Content-Type": {"application/json"}}}}
}

// writeCassette writes interactions to a new cassette, opened read-only
// for the view.
func writeCassette(t *testing.T, is []*cassette.Interaction) *cassette.Cassette {
	t.Helper()
	path := filepath.Join(t.TempDir(), "chat.cassette")
	c, err := cassette.Open(path, cassette.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var items []cassette.Keyed
	for k, i := range is {
		items = append(items, cassette.Keyed{Interaction: i, Key: fmt.Sprint(k), Shape: "s"})
	}
	if _, err := c.AppendAll(items); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if c, err = cassette.Open(path, cassette.Options{ReadOnly: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestFilterSearchesConversation: ?q= finds words in the system prompt, the
// user's and the assistant's turns, the answer and the tool names, and the
// list shows each interaction's latest user text.
func TestFilterSearchesConversation(t *testing.T) {
	var is []*cassette.Interaction
	for k := range 18 {
		is = append(is, chat("You are terse.", nil, fmt.Sprintf("Question %d: what is the weather in Paris?", k), "Sunny.", ""))
	}
	is = append(is,
		chat("You answer as a pirate.", nil, "How tall is the tower?", "Arr, 330 metres.", ""),             // 19
		chat("Be brief.", []string{"Hello", "Bonjour from Lyon"}, "And Rome?", "", "lookup_city"),          // 20
		chat("You are terse.", nil, strings.Repeat("a very long question ", 20)+"about Oslo", "Cold.", ""), // 21
	)
	srv, _ := serve(t, view.CassetteSource{C: writeCassette(t, is)}, "")
	ids := regexp.MustCompile(`<td><a href="/_llmproxy/ui/interactions/(\d+)">`)
	for _, tc := range []struct {
		q    string
		want string // the ids listed
	}{
		{"Paris", "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18"},
		{"pirate", "19"},      // the system prompt
		{"330 metres", "19"},  // the answer
		{"lyon", "20"},        // an earlier assistant turn
		{"hello rome", "20"},  // earlier and latest user turns
		{"lookup_city", "20"}, // a tool the answer calls
		{"oslo", "21"},        // the end of a long question
		{"paris pirate", ""},  // every word must appear in one
		{"question 12: paris", "13"},
	} {
		t.Run(tc.q, func(t *testing.T) {
			_, body := get(t, srv.URL+"/_llmproxy/ui/?q="+strings.ReplaceAll(tc.q, " ", "+"))
			var got []string
			for _, m := range ids.FindAllStringSubmatch(body, -1) {
				got = append(got, m[1])
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("?q=%s lists %v, want %s", tc.q, got, tc.want)
			}
		})
	}
	_, body := get(t, srv.URL+"/_llmproxy/ui/")
	for _, want := range []string{
		`<td class="preview">Question 3: what is the weather in Paris?</td>`,
		`<td class="preview">And Rome?</td>`,
		`<td class="preview">a very long question a very long question a very long question a very long question a very long que…</td>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the list lacks %s", want)
		}
	}
}
