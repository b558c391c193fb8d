package wire

import (
	"path/filepath"
	"testing"

	"github.com/tidwall/gjson"
)

// TestStreamOptionsAsTheBodySays: the stream options OptionsOf takes from
// the parsed request are what a search of the body for stream_options
// finds, on the chat and Responses wires, for every seed of readChat's
// fuzz target and every captured request; and readChat reads a body that
// has them itself, leaving nothing to the general path.
func TestStreamOptionsAsTheBodySays(t *testing.T) {
	bodies := append([]string(nil), chatReadSeeds...)
	paths, err := filepath.Glob("../internal/fake/captured/*.request.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no captured requests: %v", err)
	}
	for _, p := range paths {
		bodies = append(bodies, string(readFile(t, p)))
	}
	checked := 0
	for _, b := range bodies {
		so := gjson.Get(b, "stream_options")
		wantUsage, wantObfuscation := so.Get("include_usage").Type == gjson.True, so.Get("include_obfuscation").Type != gjson.False
		for _, k := range []struct {
			kind Kind
			path string
		}{{KindOpenAIChat, "/v1/chat/completions"}, {KindOpenAIResponses, "/v1/responses"}} {
			o, err := OptionsFor(k.kind, k.path, []byte(b))
			if err != nil {
				continue // a body ParseRequest refuses has no options
			}
			checked++
			if o.IncludeUsage != wantUsage || o.Obfuscation != wantObfuscation {
				t.Errorf("%s %.200q: IncludeUsage %t, Obfuscation %t; the body says %t, %t",
					k.kind, b, o.IncludeUsage, o.Obfuscation, wantUsage, wantObfuscation)
			}
		}
	}
	if pairs := 2 * len(bodies); checked*4 < pairs*3 { // a few seeds are bodies ParseRequest refuses
		t.Errorf("ParseRequest read %d of the %d bodies on the two wires, want at least three quarters", checked, pairs)
	}
	body := `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`
	req, ok := readChat(KindOpenAIChat, []byte(body))
	if !ok || !req.streamOptions.includeUsage {
		t.Errorf("readChat(%s) = %+v, %t: want it read, with include_usage", body, req.streamOptions, ok)
	}
}
