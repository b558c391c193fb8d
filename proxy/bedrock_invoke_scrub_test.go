package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/tidwall/gjson"

	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/wire"
)

// novaModel is an Amazon Nova model id, whose InvokeModel bodies are
// Converse-like.
const novaModel = "us.amazon.nova-lite-v1:0"

// invokeFamilyAnswer answers InvokeModel as each model family does, from
// the captures: a request holding a tool result gets the family's text
// answer (whole), any other its tool use (streamed).
func invokeFamilyAnswer(path string, body []byte) (string, []byte) {
	nova := strings.Contains(path, "amazon.nova")
	switch {
	case nova && bytes.Contains(body, []byte(`"toolResult"`)):
		return "application/json", fake.Captured("bedrock/invoke-nova-text.response.json")
	case nova:
		return eventStreamType, fake.Captured("bedrock/invoke-stream-nova-tooluse.eventstream")
	case strings.Contains(path, "amazon.titan"):
		if strings.HasSuffix(path, "-stream") {
			return eventStreamType, fake.Captured("bedrock/invoke-stream-titan-text.eventstream")
		}
		return "application/json", fake.Captured("bedrock/invoke-titan-text.response.json")
	case strings.Contains(path, "meta.llama"):
		if strings.HasSuffix(path, "-stream") {
			return eventStreamType, fake.Captured("bedrock/invoke-stream-llama-text.eventstream")
		}
		return "application/json", fake.Captured("bedrock/invoke-llama-text.response.json")
	}
	return bedrockAnswer(path, body)
}

// novaBody is a Nova InvokeModel request: the weather question, and with a
// call id the tool round's second turn answering it.
func novaBody(callID string) []byte {
	msgs := []any{map[string]any{"role": "user", "content": []any{map[string]any{"text": weatherPrompt}}}}
	if callID != "" {
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": []any{map[string]any{"toolUse": map[string]any{"toolUseId": callID, "name": "weather", "input": map[string]any{"location": "Paris", "unit": "celsius"}}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"toolResult": map[string]any{"toolUseId": callID, "content": []any{map[string]any{"text": weatherResult}}}}}})
	}
	b, _ := json.Marshal(map[string]any{"schemaVersion": "messages-v1", "messages": msgs,
		"toolConfig": map[string]any{"tools": []any{map[string]any{"toolSpec": map[string]any{"name": "weather", "inputSchema": map[string]any{"json": map[string]any{"type": "object"}}}}}}})
	return b
}

// invokeRound runs the weather tool round over InvokeModel: the question
// streamed (InvokeModelWithResponseStream), the call it names answered
// with the weather result in a whole InvokeModel. It says the call id and
// name the chunks carried and the answer's text.
func invokeRound(ctx context.Context, c *bedrockruntime.Client, model string, body func(callID string) []byte) (string, error) {
	out, err := c.InvokeModelWithResponseStream(ctx, &bedrockruntime.InvokeModelWithResponseStreamInput{ModelId: aws.String(model),
		ContentType: aws.String("application/json"), Body: body("")})
	if err != nil {
		return "", err
	}
	var id, name string
	es := out.GetStream()
	for ev := range es.Events() {
		if ch, ok := ev.(*types.ResponseStreamMemberChunk); ok {
			d := gjson.ParseBytes(ch.Value.Bytes)
			for _, p := range []string{"content_block", "contentBlockStart.start.toolUse"} {
				if v := d.Get(p+".id").Str + d.Get(p+".toolUseId").Str; v != "" {
					id, name = v, d.Get(p+".name").Str
				}
			}
		}
	}
	es.Close()
	if err := es.Err(); err != nil {
		return "", err
	}
	if id == "" {
		return "", fmt.Errorf("the stream named no call")
	}
	whole, err := c.InvokeModel(ctx, &bedrockruntime.InvokeModelInput{ModelId: aws.String(model), ContentType: aws.String("application/json"), Body: body(id)})
	if err != nil {
		return "", err
	}
	text := gjson.GetBytes(whole.Body, "content.0.text").Str + gjson.GetBytes(whole.Body, "output.message.content.0.text").Str
	return fmt.Sprintf("call=%s/%s text=%q", id, name, text), nil
}

// TestBedrockInvokeScrub: scrub turns a recorded InvokeModel tool round —
// Anthropic's body and Nova's, the call streamed in chunk messages whose
// base64 bytes hold it, the result in a whole InvokeModel — into the
// weather preset's fixture, renaming the call id inside the chunks (each
// message framed anew) and in the request; aws-sdk-go-v2 replays the
// scrubbed cassette with other credentials and sees the preset's id.
func TestBedrockInvokeScrub(t *testing.T) {
	for _, tc := range []struct {
		name, model, recorded string
		body                  func(string) []byte
	}{
		{"anthropic", bedrockModel, "toolu_bdrk_01Paris", invokeBody},
		{"nova", novaModel, "tooluse_nova01Paris", novaBody},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			up := newSigv4Upstream(t, bedrockRecordCreds, invokeFamilyAnswer)
			path := cassettePath(t)
			rec := startProxy(t, proxy.ModeRecord, path, up.srv.URL, withBedrock(up.srv.URL))
			saw, err := invokeRound(ctx, bedrockClient(t, up.srv.URL, rec.URL()+"/bedrock", bedrockRecordCreds), tc.model, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			rec.stop()
			if !strings.Contains(saw, "call="+tc.recorded+"/weather") {
				t.Fatalf("record saw %s", saw)
			}
			if old := scrubToWeather(ctx, t, path); old != tc.recorded {
				t.Fatalf("scrub renamed %s, want %s renamed call_weather", old, tc.recorded)
			}
			all := recordedIn(t, path)
			for _, e := range all[0].Response.Events {
				if _, err := wire.DecodeEventStream(e.Data); err != nil {
					t.Errorf("a scrubbed message does not decode: %v", err)
				}
			}
			if bytes.Contains(all[0].Response.Bytes(), []byte(tc.recorded)) || bytes.Contains([]byte(all[1].Request.Body), []byte(tc.recorded)) {
				t.Errorf("the scrubbed cassette still holds %s", tc.recorded)
			}
			rep := startProxy(t, proxy.ModeReplay, path, "", func(c *proxy.Config) { c.Upstreams = map[string]*url.URL{} }, withBedrock(up.srv.URL))
			got, err := invokeRound(ctx, bedrockClient(t, up.srv.URL, rep.URL()+"/bedrock", bedrockReplayCreds), tc.model, tc.body)
			if err != nil {
				t.Fatalf("replay of the scrubbed cassette: %v", err)
			}
			if want := strings.Replace(saw, tc.recorded, "call_weather", 1); got != want {
				t.Errorf("replay saw %s, want %s", got, want)
			}
		})
	}
}

// TestBedrockInvokeModelsMiss: recorded InvokeModel calls with Nova, Titan
// and Llama bodies replay with other credentials, each body the recorded
// bytes; a changed prompt is a miss naming the JSON path of the model's
// own body.
func TestBedrockInvokeModelsMiss(t *testing.T) {
	ctx := context.Background()
	up := newSigv4Upstream(t, bedrockRecordCreds, invokeFamilyAnswer)
	path := cassettePath(t)
	rec := startProxy(t, proxy.ModeRecord, path, up.srv.URL, withBedrock(up.srv.URL))
	calls := []struct{ model, file, changed, where string }{
		{novaModel, "invoke-nova-toolresult.request.json", `"Weather in Lyon?"`, "messages.0.content.0.text"},
		{"amazon.titan-text-express-v1", "invoke-titan-text.request.json", `"User: Weather in Lyon?\nBot:"`, "inputText"},
		{"meta.llama3-8b-instruct-v1:0", "invoke-llama-text.request.json", `"Weather in Lyon?"`, "prompt"},
	}
	c := bedrockClient(t, up.srv.URL, rec.URL()+"/bedrock", bedrockRecordCreds)
	recorded := map[string][]byte{}
	for _, k := range calls {
		out, err := c.InvokeModel(ctx, &bedrockruntime.InvokeModelInput{ModelId: aws.String(k.model), ContentType: aws.String("application/json"), Body: fake.Captured("bedrock/" + k.file)})
		if err != nil {
			t.Fatalf("record %s: %v", k.model, err)
		}
		recorded[k.model] = out.Body
	}
	rec.stop()
	rep := startProxy(t, proxy.ModeReplay, path, "", func(c *proxy.Config) { c.Upstreams = map[string]*url.URL{} }, withBedrock(up.srv.URL))
	c = bedrockClient(t, up.srv.URL, rep.URL()+"/bedrock", bedrockReplayCreds)
	for _, k := range calls {
		body := fake.Captured("bedrock/" + k.file)
		out, err := c.InvokeModel(ctx, &bedrockruntime.InvokeModelInput{ModelId: aws.String(k.model), ContentType: aws.String("application/json"), Body: body})
		if err != nil || !bytes.Equal(out.Body, recorded[k.model]) {
			t.Errorf("replay %s: %s, %v; want the recorded %s", k.model, bodyOf(out), err, recorded[k.model])
		}
		changed := []byte(gjson.ParseBytes(body).Get(k.where).Raw)
		body = bytes.Replace(body, changed, []byte(k.changed), 1)
		_, err = c.InvokeModel(ctx, &bedrockruntime.InvokeModelInput{ModelId: aws.String(k.model), ContentType: aws.String("application/json"), Body: body})
		if err == nil || !strings.Contains(err.Error(), "cassette_miss") || !strings.Contains(err.Error(), k.where) || !strings.Contains(err.Error(), "Lyon") {
			t.Errorf("%s with a changed prompt: %v, want a miss naming %s", k.model, err, k.where)
		}
	}
}
