package fake_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/wire"
)

var updateBedrock = flag.Bool("update-bedrock", false, "rewrite captured/bedrock/*.eventstream from their .messages.json")

// bedrockMessages is a .messages.json file: each message's string headers
// in order and its payload's exact text.
type bedrockMessages []struct {
	Headers [][2]string `json:"headers"`
	Payload string      `json:"payload"`
}

// TestBedrockCapturesDecodeWithAWSSDK: each captured/bedrock/X.eventstream
// is the messages of X.messages.json framed as the AWS event stream format
// says (wire.EncodeEventStream), and the AWS SDK's own decoder
// (aws/protocol/eventstream, which checks both CRCs) reads from it exactly
// those headers and payloads. No capture comes from AWS itself: this test
// is what ties the bytes to the format AWS sends.
func TestBedrockCapturesDecodeWithAWSSDK(t *testing.T) {
	n := 0
	for _, name := range fake.CapturedFiles() {
		stem, ok := strings.CutSuffix(name, ".messages.json")
		if !ok || !strings.HasPrefix(name, "bedrock/") {
			continue
		}
		n++
		var msgs bedrockMessages
		if err := json.Unmarshal(fake.Captured(name), &msgs); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var want []byte
		for _, m := range msgs {
			var hs []wire.EventStreamHeader
			for _, h := range m.Headers {
				hs = append(hs, wire.StringHeader(h[0], h[1]))
			}
			b, err := wire.EncodeEventStream(hs, []byte(m.Payload))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			want = append(want, b...)
		}
		if *updateBedrock {
			if err := os.WriteFile(filepath.Join("captured", stem+".eventstream"), want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got := fake.Captured(stem + ".eventstream")
		if !bytes.Equal(got, want) {
			t.Errorf("%s.eventstream is not %s framed (go test ./internal/fake -update-bedrock)", stem, name)
		}
		dec := eventstream.NewDecoder()
		r := bytes.NewReader(got)
		for k, m := range msgs {
			sdk, err := dec.Decode(r, nil)
			if err != nil {
				t.Fatalf("%s message %d: the AWS SDK's decoder: %v", stem, k, err)
			}
			if string(sdk.Payload) != m.Payload || len(sdk.Headers) != len(m.Headers) {
				t.Errorf("%s message %d: the SDK read payload %q and %d headers, want %q and %d", stem, k, sdk.Payload, len(sdk.Headers), m.Payload, len(m.Headers))
			}
			for _, h := range m.Headers {
				if v := sdk.Headers.Get(h[0]); v == nil || v.String() != h[1] {
					t.Errorf("%s message %d: the SDK read header %s = %v, want %q", stem, k, h[0], v, h[1])
				}
			}
		}
		if r.Len() != 0 {
			t.Errorf("%s: %d bytes after the last message", stem, r.Len())
		}
	}
	if n < 4 {
		t.Errorf("found %d bedrock captures, want 4", n)
	}
}
