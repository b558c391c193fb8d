package main

import (
	"bytes"
	"strings"
	"testing"
)

// maskAnswerID must cut what answerID matches, on mock's own answers and on
// the edges of the pattern.
func TestMaskAnswerID(t *testing.T) {
	rounds, err := mockRounds()
	if err != nil {
		t.Fatal(err)
	}
	cases := [][]byte{
		nil, []byte("weather-"), []byte("weather-x text-1"), []byte(`"obfuscation":"abc`), []byte(`x"obfuscation":"" text-12-3weather-9`),
		[]byte("contexttext-7 weather-weather-3"), []byte(`"obfuscation":"a" "obfuscation":"b"`),
	}
	for _, answers := range rounds {
		for _, a := range answers {
			cases = append(cases, a.body)
		}
	}
	for _, b := range cases {
		want := answerID.ReplaceAll(b, nil)
		if got := maskAnswerID([]byte("prefix"), b); !bytes.Equal(got, append([]byte("prefix"), want...)) {
			t.Errorf("maskAnswerID(%.200q) = %.200q, want %.200q", b, got[len("prefix"):], want)
		}
	}
}

// Mock's answers and aimock's fixtures say the same: chatSummary reads
// both shapes, and tells a changed answer from the right one.
func TestChatSummary(t *testing.T) {
	rounds, err := mockRounds()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		payloadMockJSON:     {`text "", finish "tool_calls", call call_paris weather({"location":"Paris","unit":"celsius"})`, `text "Paris is sunny, 21 °C.", finish "stop"`},
		payloadMockSSE:      {`text "", finish "tool_calls", call call_paris weather({"location":"Paris","unit":"celsius"})`, `text "Paris is sunny, 21 °C.", finish "stop"`},
		payloadMockTextJSON: {`text "` + jsonContent(chatAnswerID) + `", finish "stop"`},
		payloadMockTextSSE:  {`text "` + sseContent() + `", finish "stop"`},
	}
	for _, c := range mockCases() {
		for i, a := range rounds[c.payload] {
			got, err := chatSummary(a.body, c.stream)
			if err != nil || got != want[c.payload][i] {
				t.Errorf("%s, answer %d: %q, %v; want %q", c.payload, i+1, got, err, want[c.payload][i])
			}
		}
	}
	if _, err := chatSummary([]byte("data: {}\n\n"), true); err == nil {
		t.Error("a stream without [DONE] was read")
	}
	if _, err := chatSummary([]byte("{"), false); err == nil {
		t.Error("a broken answer was read")
	}
}

// The report's target of mock against aimock: met only above 1×, skipped
// (not failed) when aimock did not run or answered otherwise.
func TestMockPeerTarget(t *testing.T) {
	r := &report{mock: []replayRow{
		{Payload: payloadMockJSON, Conns: 1, Server: nameAimock, t: &tally{}, VsReplay: 1.2},
		{Payload: payloadMockJSON, Conns: 64, Server: nameAimock, t: &tally{}, VsReplay: 0.8},
		{Payload: payloadMockSSE, Conns: 1, Server: nameAimock, Failed: "answers otherwise: x"},
	}}
	for _, c := range []struct {
		payload        string
		conns          int
		met, skipped   bool
		measuredPrefix string
	}{
		{payloadMockJSON, 1, true, false, "1.20×"},
		{payloadMockJSON, 64, false, false, "0.80×"},
		{payloadMockSSE, 1, false, true, "answers otherwise"},
		{payloadMockSSE, 64, false, true, "not run"},
	} {
		got := r.mockPeerTarget(c.payload, c.conns, nameAimock)
		if got.met != c.met || got.skipped != c.skipped || !strings.HasPrefix(got.measured, c.measuredPrefix) {
			t.Errorf("%s ×%d: %+v, want met %v, skipped %v, measured %q…", c.payload, c.conns, got, c.met, c.skipped, c.measuredPrefix)
		}
	}
}
