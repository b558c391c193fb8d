package proxy_test

import (
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
	x, err := cassette.DefaultIndexer()
	if err != nil {
		t.Fatal(err)
	}
	res, err := fixture.ScrubFile(ctx, path, fixture.ScrubOptions{Indexer: x})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Report.Substituted) != 1 || res.Report.Substituted[0].NewID != "call_weather" {
		t.Fatalf("scrub report %+v, want the call renamed call_weather", res.Report)
	}
	c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	all, err := c.All()
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
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
