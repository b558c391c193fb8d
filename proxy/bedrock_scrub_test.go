package proxy_test

import (
	"bytes"
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/fixture"
	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/wire"
)

// TestBedrockScrub: scrub turns a recorded ConverseStream tool round into
// the weather preset's fixture, renaming the call id inside the event
// stream messages (framed anew), and the SDK replays the scrubbed cassette
// and sees the preset's id.
func TestBedrockScrub(t *testing.T) {
	ctx := context.Background()
	up := newSigv4Upstream(t, bedrockRecordCreds, bedrockAnswer)
	path := cassettePath(t)
	rec := startProxy(t, proxy.ModeRecord, path, up.srv.URL, withBedrock(up.srv.URL))
	if _, err := converseStreamRound(ctx, bedrockClient(t, up.srv.URL, rec.URL()+"/bedrock", bedrockRecordCreds)); err != nil {
		t.Fatal(err)
	}
	rec.stop()
	scrubToWeather(ctx, t, path)
	all := recordedIn(t, path)
	for _, e := range all[0].Response.Events {
		if _, err := wire.DecodeEventStream(e.Data); err != nil {
			t.Errorf("a scrubbed message does not decode: %v", err)
		}
	}
	rep := startProxy(t, proxy.ModeReplay, path, "", func(c *proxy.Config) { c.Upstreams = map[string]*url.URL{} }, withBedrock(up.srv.URL))
	saw, err := converseStreamRound(ctx, bedrockClient(t, up.srv.URL, rep.URL()+"/bedrock", bedrockReplayCreds))
	if err != nil {
		t.Fatalf("replay of the scrubbed cassette: %v", err)
	}
	if !strings.Contains(saw, "call=call_weather/weather/") || !strings.Contains(saw, "sunny in Paris") {
		t.Errorf("replay saw %s, want the preset's call id and the answer", saw)
	}
}

// scrubToWeather scrubs the cassette at path as `llmproxy scrub` does
// (the default indexer) and fails the test unless exactly one recorded
// call became the weather preset's call_weather; it returns the id the
// call had.
func scrubToWeather(ctx context.Context, t *testing.T, path string) (oldID string) {
	t.Helper()
	x, err := cassette.DefaultIndexer()
	if err != nil {
		t.Fatal(err)
	}
	res, err := fixture.ScrubFile(ctx, path, fixture.ScrubOptions{Indexer: x})
	if err != nil || len(res.Report.Substituted) != 1 || res.Report.Substituted[0].NewID != "call_weather" {
		t.Fatalf("scrub: %+v, %v; want the call renamed call_weather", res.Report, err)
	}
	return res.Report.Substituted[0].OldID
}

// sameBodies fails the test for each replayed body that is not the
// recorded one byte for byte.
func sameBodies(t *testing.T, got, want [][]byte) {
	t.Helper()
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("replay body %d differs from the recorded one:\n%q\n%q", i+1, got[i], want[i])
		}
	}
}
