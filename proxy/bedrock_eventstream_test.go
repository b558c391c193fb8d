package proxy_test

import (
	"bytes"
	"encoding/json"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/wire"
)

// eventStreamUpstream answers every request with body as an event stream.
func eventStreamUpstream(t *testing.T, body []byte) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", eventStreamType)
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// postConverseStream sends a ConverseStream request to the proxy and
// returns what the client received.
func postConverseStream(t *testing.T, base string) []byte {
	t.Helper()
	resp, err := http.Post(base+"/bedrock/model/m/converse-stream", "application/json", strings.NewReader(`{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return b
}

// An upstream stream holding a message that is not one reaches the client
// as the upstream sent it, and nothing is recorded; the log says which
// message is wrong and how. A stream of a 16 MiB message records and
// replays byte for byte.
func TestBedrockEventStreamFromUpstream(t *testing.T) {
	good := fake.Captured("bedrock/converse-stream-text.eventstream")
	first := wire.Split(wire.FramingEventStream, good)[0].Raw
	badCRC := bytes.Clone(good)
	badCRC[len(first)+20] ^= 0x01 // in message 1's headers
	unknownType, _ := wire.EncodeEventStream([]wire.EventStreamHeader{{Name: "x", Type: wire.ESString, Value: []byte("y")}}, []byte(`{}`))
	unknownType[12+2] = 12
	unknownType = fixEventStreamCRCs(unknownType)
	big, err := wire.EncodeEventStream([]wire.EventStreamHeader{wire.StringHeader(":event-type", "chunk")}, bytes.Repeat([]byte("b"), wire.MaxEventStreamPayload))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		body   []byte
		stored int
		says   string
	}{
		{"CRC mismatch", badCRC, 0, "event stream message 1: bad event stream message: message CRC"},
		{"truncated message", good[:len(good)-7], 0, "upstream stream ended mid-event"},
		{"unknown header type", append(bytes.Clone(first), unknownType...), 0, "event stream message 1: bad event stream message: header \"x\": unknown value type 12"},
		{"16 MiB payload", append(bytes.Clone(first), big...), 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := eventStreamUpstream(t, tc.body)
			path := cassettePath(t)
			rec := startProxy(t, proxy.ModeRecord, path, up.URL, withBedrock(up.URL))
			if got := postConverseStream(t, rec.URL()); !bytes.Equal(got, tc.body) {
				t.Errorf("the client got %d bytes, want the upstream's %d as sent", len(got), len(tc.body))
			}
			var log struct{ Entries []proxy.LogEntry }
			resp, err := http.Get(rec.URL() + "/_llmproxy/log")
			if err != nil {
				t.Fatal(err)
			}
			json.NewDecoder(resp.Body).Decode(&log)
			resp.Body.Close()
			if len(log.Entries) != 1 || !strings.Contains(log.Entries[0].Miss, tc.says) {
				t.Errorf("log %+v, want one entry saying %q", log.Entries, tc.says)
			}
			rec.stop()
			c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			n := interactionCount(t, c)
			c.Close()
			if n != tc.stored {
				t.Fatalf("the cassette holds %d interactions, want %d", n, tc.stored)
			}
			if n == 0 {
				return
			}
			rep := startProxy(t, proxy.ModeReplay, path, "", withBedrock(up.URL))
			if got := postConverseStream(t, rep.URL()); !bytes.Equal(got, tc.body) {
				t.Errorf("replay sent %d bytes, want the recorded %d byte for byte", len(got), len(tc.body))
			}
		})
	}
}

// fixEventStreamCRCs recomputes both CRCs of a message edited in place.
func fixEventStreamCRCs(b []byte) []byte {
	m := append([]byte(nil), b...)
	crc := func(p []byte) []byte {
		var out [4]byte
		c := crc32.ChecksumIEEE(p)
		out[0], out[1], out[2], out[3] = byte(c>>24), byte(c>>16), byte(c>>8), byte(c)
		return out[:]
	}
	copy(m[8:], crc(m[:8]))
	copy(m[len(m)-4:], crc(m[:len(m)-4]))
	return m
}
