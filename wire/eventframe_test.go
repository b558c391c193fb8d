package wire

import (
	"bytes"
	"strings"
	"testing"
)

// appendEventFrame writes, after what dst holds, the bytes EncodeEventStream
// writes for the three headers of a Bedrock stream event.
func TestAppendEventFrame(t *testing.T) {
	for _, payload := range []string{`{}`, `{"contentBlockIndex":0,"delta":{"text":"Hi"},"p":"abcdefgh"}`, strings.Repeat("x", 70000)} {
		for _, typ := range []string{"messageStart", "contentBlockDelta", "metadata"} {
			want, err := EncodeEventStream([]EventStreamHeader{
				StringHeader(":event-type", typ), StringHeader(":content-type", "application/json"), StringHeader(":message-type", "event"),
			}, []byte(payload))
			if err != nil {
				t.Fatal(err)
			}
			dst := []byte("before")
			got, data := appendEventFrame(dst, typ, []byte(payload))
			if string(got[:6]) != "before" || !bytes.Equal(got[6:], want) || string(got[data:len(got)-4]) != payload {
				t.Errorf("%s, %d payload bytes: the frame differs from EncodeEventStream's, or its payload is not at %d", typ, len(payload), data)
			}
		}
	}
}
