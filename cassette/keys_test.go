package cassette_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/wire"
)

// Key-shaped test strings. They have the form of real credentials and are
// none: the random parts are made up.
const (
	keyOpenAIProject = "sk-proj-Xq3vT9mLp2RkZ8wYc4NfHb6JdS1aUe7GiO5tKr0PzQmVx2LsWn8Ej4BhCy6DoFu9TgIa3MlRp7KzNq1vXc5Yw"
	keyOpenAILegacy  = "sk-Zt4Lm9Qx2Vb7Nc1Rk8Wp3Ys6Jd0Hf5GaTe2Ui7Oo4Pq9Lr3Mw"
	keyAnthropic     = "sk-ant-api03-Bq7Xz2Lk9Mv4Np1Rt6Ws3Yc8Jd5Hf0Ga7Te2Ui9Oo4Pq1Lr6Mw3Kx8Zb5Vn2Ct7Ys0Jd4Hf9Ga1Te6Ui3Oo8Pq5Lr2Mw7Kx4Zb9VnAA"
	keyGoogle        = "AIzaSyD3vT9mLp2RkZ8wYc4NfHb6JdS1aUe7G-Q"
	keyAWS           = "AKIAIOSFODNN7EXAMPLE"
	keyAWSSession    = "ASIAY34FZKBOKMUTVV7A"
	keyJWT           = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
	keyJWTUnsigned   = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ0ZXN0LXVzZXIifQ."
)

func TestRedactKeys(t *testing.T) {
	r := cassette.Redacted
	for _, tc := range []struct {
		name, in, want string
	}{
		// Redacted: every shape, in the places it turns up.
		{"OpenAI project key in prose", "my key is " + keyOpenAIProject + ", use it", "my key is " + r + ", use it"},
		{"legacy OpenAI key", keyOpenAILegacy, r},
		{"Anthropic key in JSON", `{"api_key":"` + keyAnthropic + `"}`, `{"api_key":"` + r + `"}`},
		{"Google key in a URL", "https://x.test/v1?key=" + keyGoogle + "&alt=sse", "https://x.test/v1?key=" + r + "&alt=sse"},
		{"AWS access key id", "aws_access_key_id = " + keyAWS + "\n", "aws_access_key_id = " + r + "\n"},
		{"AWS session key id", "[" + keyAWSSession + "]", "[" + r + "]"},
		{"JWT as a bearer token", "Bearer " + keyJWT, "Bearer " + r},
		{"unsigned JWT", `"` + keyJWTUnsigned + `"`, `"` + r + `"`},
		{"JWT ending a sentence", "token " + keyJWT + ".", "token " + r + "."},
		{"key after a JSON \\n escape", `"line one\n` + keyOpenAIProject + `"`, `"line one\n` + r + `"`},
		{"key after a JSON \\t escape", `"\t` + keyAnthropic + `"`, `"\t` + r + `"`},
		{"two keys side by side", keyGoogle + "," + keyAWS, r + "," + r},
		{"key in an SSE event", "data: {\"delta\":\"" + keyOpenAILegacy + "\"}\n\n", "data: {\"delta\":\"" + r + "\"}\n\n"},
		{"key in a path", "/v1/keys/" + keyOpenAIProject + "/usage", "/v1/keys/" + r + "/usage"},
		{"key inside a JWT's signature", keyJWTUnsigned + keyOpenAILegacy, r},
		{"the whole input", keyAWS, r},

		// Kept: ids, words and data that look a little like keys.
		{"chat completion id", `"id":"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG"`, ""},
		{"tool call id", `"id":"call_Zt4Lm9Qx2Vb7Nc1Rk8Wp3Ys6"`, ""},
		{"Anthropic message id", `"id":"msg_01XFDUDYJgAACzvnptvVoYEL"`, ""},
		{"Anthropic tool use id", `"id":"toolu_01A09q90qw90lq917835lq9"`, ""},
		{"responses id", `"id":"resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b"`, ""},
		{"sk- inside a word", "risk-Assessment-2024-for-the-Q3-launch", ""},
		{"sk-learn", "pip install sk-learn", ""},
		{"sk- slug without upper case", "sk-annual-report-2024-final-draft-v2", ""},
		{"sk- too short", "sk-Ab3dEf6hIj9kLm2", ""},
		{"AIza one short", "AIzaSyD3vT9mLp2RkZ8wYc4NfHb6JdS1aUe7G-", ""},
		{"AIza one long", "AIzaSyD3vT9mLp2RkZ8wYc4NfHb6JdS1aUe7G-QQ", ""},
		{"AIza inside a token", "xAIzaSyD3vT9mLp2RkZ8wYc4NfHb6JdS1aUe7G-Q", ""},
		{"AKIA with lower case", "AKIAiosfodnn7example", ""},
		{"AKIA too long", "AKIAIOSFODNN7EXAMPLEX", ""},
		{"the word ASIAN", "ASIAN MARKETS REPORT", ""},
		{"base64 JSON, one segment", `"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"`, ""},
		{"two segments only", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0", ""},
		{"dotted eyJ inside a domain", "a.eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig", ""},
		{"data URL", "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==", ""},
		{"redacted already", "Bearer " + r + " sk-" + r, ""},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if want == "" {
				want = tc.in
			}
			got := cassette.RedactKeys([]byte(tc.in))
			if string(got) != want {
				t.Errorf("RedactKeys(%q)\n got %q\nwant %q", tc.in, got, want)
			}
			if again := cassette.RedactKeys(got); !bytes.Equal(again, got) {
				t.Errorf("redacting twice changed it: %q", again)
			}
			if s := cassette.RedactKeysString(tc.in); s != want {
				t.Errorf("RedactKeysString = %q, want %q", s, want)
			}
		})
	}
}

// TestRedactKeysKeepsBase64 runs random base64 (an image, audio) through
// the scan: none of it is taken for a key.
func TestRedactKeysKeepsBase64(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	raw := make([]byte, 3<<20)
	for i := range raw {
		raw[i] = byte(rng.Uint32())
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		body := []byte(`{"b64_json":"` + enc.EncodeToString(raw) + `"}`)
		if got := cassette.RedactKeys(body); !bytes.Equal(got, body) {
			t.Errorf("a 4 MB base64 body was changed (%d bytes differ in length)", len(body)-len(got))
		}
	}
}

// TestRedactorKeysEverywhere puts key-shaped strings in every place of an
// interaction: none survives Redact, and what is redacted stays usable (a
// JSON body stays JSON, an SSE event stays one event, a path stays a path).
func TestRedactorKeysEverywhere(t *testing.T) {
	red, err := cassette.NewRedactor(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	i := &cassette.Interaction{
		Request: cassette.Request{
			Method: "POST",
			Path:   "/v1/keys/" + keyOpenAIProject + "/x/sk%2DZt4Lm9Qx2Vb7Nc1Rk8Wp3Ys6Jd0Hf5GaTe2Ui7Oo4Pq9Lr3Mw",
			Query:  "api_key=plain-secret-1;access_token=plain-secret-2&API_KEY=plain-secret-3&note=" + keyAWS + "&q=" + strings.ReplaceAll(keyGoogle, "-", "%2D"),
			Headers: map[string][]string{
				"Openai-Organization":       {"org-plainsecret4"},
				"Openai-Project":            {"proj_plainsecret5"},
				"Anthropic-Api-Key":         {"plain-secret-6"},
				"Ocp-Apim-Subscription-Key": {"plain-secret-7"},
				"X-Custom":                  {"token " + keyJWT},
				"Content-Type":              {"application/json"},
			},
			Body: cassette.Body(`{"messages":[{"role":"user","content":"use ` + keyAnthropic + `"}]}`),
		},
		Response: cassette.Response{
			Status: 200,
			Headers: map[string][]string{
				"Openai-Organization": {"user-plainsecret8"},
				"Openai-Project":      {"proj_plainsecret9"},
				"X-Echo":              {keyOpenAILegacy},
				"Content-Type":        {"text/event-stream"},
			},
			Framing: "sse",
			Events: []cassette.Event{
				{Data: cassette.Body("data: {\"choices\":[{\"delta\":{\"content\":\"" + keyAWSSession + "\"}}]}\n\n")},
				{Data: cassette.Body("data: [DONE]\n\n")},
			},
		},
	}
	red.Redact(i)
	var export bytes.Buffer
	if err := cassette.WriteExport(&export, &cassette.Contents{Interactions: []*cassette.Interaction{i}}); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{keyOpenAIProject, "Zt4Lm9Qx2Vb7Nc1Rk8Wp3Ys6Jd0Hf5GaTe2Ui7Oo4Pq9Lr3Mw", "plain-secret", "plainsecret", keyAWS, "SyD3vT9mLp2RkZ8wYc4NfHb6JdS1aUe7G", keyJWT[:40], keyAnthropic, keyAWSSession} {
		if bytes.Contains(export.Bytes(), []byte(secret)) {
			t.Errorf("the redacted interaction still holds %q:\n%s", secret, export.Bytes())
		}
	}
	if p := i.Request.Path; p != "/v1/keys/REDACTED/x/REDACTED" {
		t.Errorf("path = %q", p)
	}
	if q := i.Request.Query; q != "api_key=REDACTED;access_token=REDACTED&API_KEY=REDACTED&note=REDACTED&q=REDACTED" {
		t.Errorf("query = %q", q)
	}
	if !gjson.ValidBytes(i.Request.Body) || gjson.GetBytes(i.Request.Body, "messages.0.content").String() != "use REDACTED" {
		t.Errorf("body = %s", i.Request.Body)
	}
	if e := string(i.Response.Events[0].Data); e != `data: {"choices":[{"delta":{"content":"REDACTED"}}]}`+"\n\n" {
		t.Errorf("event = %q", e)
	}
	if h := i.Response.Headers.Get("X-Echo"); h != cassette.Redacted {
		t.Errorf("response header X-Echo = %q", h)
	}
	before := fmt.Sprint(i)
	red.Redact(i)
	if after := fmt.Sprint(i); after != before {
		t.Errorf("a second Redact changed the interaction:\n%s\n%s", before, after)
	}
}

// chatBody is a valid JSON chat request of about 1 MB, with ids and words
// that come close to the key shapes.
func chatBody() []byte {
	turn := `{"role":"user","content":"Summarise the risk-assessment for the Q3 launch; ids chatcmpl-B9MHDbslfk, call_Zt4Lm9Qx, msg_01XFDUDY. "},`
	body := `{"model":"gpt-4o-mini","messages":[` + strings.Repeat(turn, (1<<20)/len(turn)) + `{"role":"user","content":"end"}]}`
	return []byte(body)
}

// keyBodies are 1 MB request bodies for the redaction benchmarks: an
// ordinary chat with no key, the same with a key every 4 KB, and inputs
// built to make a naive scanner backtrack.
func keyBodies(size int) map[string][]byte {
	fill := func(unit string) []byte {
		return []byte(strings.Repeat(unit, size/len(unit)+1)[:size])
	}
	withKeys := chatBody()
	for at := 64; at+len(keyOpenAIProject)+2 < len(withKeys)-64; at += 4096 {
		copy(withKeys[at:], " "+keyOpenAIProject+" ")
	}
	out := map[string][]byte{
		"sk-run":       append([]byte("sk-"), fill("a")...),
		"sk-repeated":  fill("sk-"),
		"AKIA-run":     fill("AKIA"),
		"eyJ-dots":     fill("eyJ."),
		"eyJ-segments": fill("eyJhbGciOiJIUzI1NiJ9."),
		"keys-only":    fill(" " + keyAWS),
	}
	if size == 1<<20 {
		out["chat"], out["keys"] = chatBody(), withKeys
	}
	return out
}

// BenchmarkRedactKeys scans 1 MB bodies, and 128 KB ones of the hostile
// kinds: the time per byte is the same at both sizes (linear time).
// BenchmarkRedactKeysBaseline is what it is compared with: gjson's
// validity check of the chat body, which matching runs on every JSON
// request anyway.
func BenchmarkRedactKeys(b *testing.B) {
	bodies := keyBodies(1 << 20)
	for name, body := range keyBodies(128 << 10) {
		bodies[name+"-128KB"] = body
	}
	for name, body := range bodies {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				cassette.RedactKeys(body)
			}
		})
	}
}

func BenchmarkRedactKeysBaseline(b *testing.B) {
	body := chatBody()
	if !gjson.ValidBytes(body) {
		b.Fatal("the chat body is not JSON")
	}
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		gjson.ValidBytes(body)
	}
}

// AWS credentials as SDKs, credentials files and STS answers spell them:
// the session token by its shape, the secret key where it is named.
func TestRedactAWSCredentials(t *testing.T) {
	r := cassette.Redacted
	const secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	token := "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQD6" + strings.Repeat("Zm9vYmFy+/", 30) + "=="
	oldToken := "FwoGZXIvYXdzEJr//////////wEaDOOmM3cG" + strings.Repeat("YmF6cXV4", 20)
	for _, tc := range []struct{ name, in, want string }{
		{"session token in JSON", `{"SessionToken":"` + token + `"}`, `{"SessionToken":"` + r + `"}`},
		{"older session token in a header value", oldToken, r},
		{"secret in STS JSON", `{"SecretAccessKey": "` + secret + `"}`, `{"SecretAccessKey": "` + r + `"}`},
		{"secret in SDK JSON", `{"secretAccessKey":"` + secret + `"}`, `{"secretAccessKey":"` + r + `"}`},
		{"secret in a credentials file", "aws_secret_access_key = " + secret + "\n", "aws_secret_access_key = " + r + "\n"},
		{"secret in the environment", "AWS_SECRET_ACCESS_KEY=" + secret, "AWS_SECRET_ACCESS_KEY=" + r},
		{"secret in escaped JSON", `"{\"secretAccessKey\":\"` + secret + `\"}"`, `"{\"secretAccessKey\":\"` + r + `\"}"`},
		// Kept: a short token-like string, a named value of another length,
		// the name without a value.
		{"short token prefix", "IQoJb3JpZ2luX2Vj", ""},
		{"named value of 39 bytes", "aws_secret_access_key=" + secret[1:], ""},
		{"named value of 41 bytes", "aws_secret_access_key=" + secret + "A", ""},
		{"name alone", "set aws_secret_access_key in your profile", ""},
	} {
		want := tc.want
		if want == "" {
			want = tc.in
		}
		if got := string(cassette.RedactKeys([]byte(tc.in))); got != want {
			t.Errorf("%s: RedactKeys(%q) = %q, want %q", tc.name, tc.in, got, want)
		}
	}
}

// A key in an event stream message's payload is redacted and the message
// framed anew: it still decodes, CRCs and lengths right.
func TestRedactEventStreamMessage(t *testing.T) {
	msg, err := wire.EncodeEventStream([]wire.EventStreamHeader{wire.StringHeader(":event-type", "contentBlockDelta")},
		[]byte(`{"contentBlockIndex":0,"delta":{"text":"use `+keyOpenAILegacy+`"}}`))
	if err != nil {
		t.Fatal(err)
	}
	red, err := cassette.NewRedactor(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	i := &cassette.Interaction{Response: cassette.Response{Framing: "eventstream", Events: []cassette.Event{{Data: msg}}}}
	red.Redact(i)
	m, err := wire.DecodeEventStream(i.Response.Events[0].Data)
	if err != nil {
		t.Fatalf("the redacted message does not decode: %v", err)
	}
	if want := `{"contentBlockIndex":0,"delta":{"text":"use ` + cassette.Redacted + `"}}`; string(m.Payload) != want || m.Header(":event-type") != "contentBlockDelta" {
		t.Errorf("redacted payload %s, want %s", m.Payload, want)
	}
}
