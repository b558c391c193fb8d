package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// aimock in the mock scenario: one process serving the weather round and
// the 2 KB text from its fixtures, with the bench's envelope (id, created,
// model, fingerprint) so that its answers repeat byte for byte.

// aimockWeatherFixtures are the weather round's two answers: the text for
// a request whose last message is the result of call_paris (first, as
// both requests carry the same question), the tool call for the question.
func aimockWeatherFixtures() []any {
	text := aimockEnvelope("stop")
	text.Content = "Paris is sunny, 21 °C."
	call := aimockEnvelope("tool_calls")
	call.ToolCalls = []aimockToolCall{{ID: "call_paris", Name: "weather", Arguments: `{"location":"Paris","unit":"celsius"}`}}
	return []any{
		map[string]any{"match": map[string]string{"toolCallId": "call_paris"}, "response": text},
		map[string]any{"match": map[string]string{"userMessage": "weather in Paris"}, "response": call},
	}
}

// startMockAimock starts aimock for the mock scenario when the run has it,
// or returns the row saying why not.
func startMockAimock(p plan, dir string, ps peerSet) (*server, []replayRow) {
	if why, ok := ps.skipped[nameAimock]; ok {
		return nil, []replayRow{{Server: nameAimock, Failed: "not run: " + why}}
	}
	if !p.peers["aimock"] {
		return nil, nil
	}
	port, err := freePort()
	if err == nil {
		err = os.MkdirAll(filepath.Join(dir, "aimock-mock"), 0o755)
	}
	var c *child
	if err == nil {
		c, err = runAimock(ps.npm, filepath.Join(dir, "aimock-mock"), port, append(aimockWeatherFixtures(), aimockTextFixtures()...))
	}
	if err != nil {
		p.logf("mock: aimock did not start: %v", err)
		return nil, []replayRow{{Server: nameAimock, Failed: "did not start: " + err.Error()}}
	}
	p.logf("mock: %s ready in %v (%s)", nameAimock, c.Open.Round(time.Millisecond), c.URL)
	for _, pr := range peers {
		if pr.name == nameAimock {
			return &server{name: nameAimock, base: c.URL, client: newClient, proc: c, warm: time.Duration(pr.warm) * p.warm}, nil
		}
	}
	return &server{name: nameAimock, base: c.URL, client: newClient, proc: c, warm: p.warm}, nil
}

// aimockServes checks aimock's answers to the case's round: each must say
// what mock's does (summary) and repeat byte for byte when asked again.
// It returns aimock as a server whose load wants those bytes.
func aimockServes(s server, l load, cs mockCase, mock []mockAnswer) (server, error) {
	c := s.client(1)
	defer c.CloseIdleConnections()
	want := make([][]byte, len(cs.round))
	for i, body := range cs.round {
		var got [2][]byte
		for k := range got {
			status, b, err := fetch(c, s.base, body)
			if err != nil {
				return s, fmt.Errorf("request %d: %w", i+1, err)
			}
			if status != 200 {
				return s, fmt.Errorf("request %d: status %d: %.200s", i+1, status, b)
			}
			got[k] = b
		}
		if !bytes.Equal(got[0], got[1]) {
			return s, fmt.Errorf("request %d: two answers differ:\n%s\n%s", i+1, got[0], got[1])
		}
		a, err := chatSummary(got[0], cs.stream)
		if err != nil {
			return s, fmt.Errorf("request %d: %w", i+1, err)
		}
		m, err := chatSummary(mock[i].body, cs.stream)
		if err != nil {
			return s, fmt.Errorf("request %d, mock's answer: %w", i+1, err)
		}
		if a != m {
			return s, fmt.Errorf("request %d: aimock says %s where mock says %s", i+1, a, m)
		}
		want[i] = got[0]
	}
	s.adjust = func(l load) load {
		l.mask = nil
		l.want = func(n int) []byte { return want[n%len(want)] }
		return l
	}
	return s, nil
}

// chatSummary is what a chat answer says, JSON or streamed: its text, its
// tool calls (id, name, arguments as compact JSON) and its finish reason.
func chatSummary(body []byte, stream bool) (string, error) {
	type call struct {
		Index    int    `json:"index"`
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	type choice struct {
		Message, Delta struct {
			Content   *string `json:"content"`
			ToolCalls []call  `json:"tool_calls"`
		}
		FinishReason *string `json:"finish_reason"`
	}
	var text strings.Builder
	var calls []call
	finish := ""
	add := func(doc []byte) error {
		var v struct{ Choices []choice }
		if err := json.Unmarshal(doc, &v); err != nil {
			return err
		}
		for _, ch := range v.Choices {
			for _, m := range [2]struct {
				Content   *string `json:"content"`
				ToolCalls []call  `json:"tool_calls"`
			}{ch.Message, ch.Delta} {
				if m.Content != nil {
					text.WriteString(*m.Content)
				}
				for k, tc := range m.ToolCalls {
					if !stream {
						tc.Index = k
					}
					for len(calls) <= tc.Index {
						calls = append(calls, call{})
					}
					at := &calls[tc.Index]
					at.ID += tc.ID
					at.Function.Name += tc.Function.Name
					at.Function.Arguments += tc.Function.Arguments
				}
			}
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
		return nil
	}
	if !stream {
		if err := add(body); err != nil {
			return "", fmt.Errorf("answer: %w", err)
		}
	} else {
		done := false
		for ev := range bytes.SplitSeq(body, []byte("\n\n")) {
			data, ok := bytes.CutPrefix(ev, []byte("data: "))
			switch {
			case len(ev) == 0:
			case !ok:
				return "", fmt.Errorf("event %.80q is not a data event", ev)
			case string(data) == "[DONE]":
				done = true
			default:
				if err := add(data); err != nil {
					return "", fmt.Errorf("event %.80q: %w", ev, err)
				}
			}
		}
		if !done {
			return "", fmt.Errorf("stream without data: [DONE]")
		}
	}
	out := fmt.Sprintf("text %q, finish %q", text.String(), finish)
	for _, c := range calls {
		var args bytes.Buffer
		if err := json.Compact(&args, []byte(c.Function.Arguments)); err != nil {
			return "", fmt.Errorf("call %s: arguments: %w", c.ID, err)
		}
		out += fmt.Sprintf(", call %s %s(%s)", c.ID, c.Function.Name, args.Bytes())
	}
	return out, nil
}
