package presets_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/presets"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestGolden compares every schema and every provider definition with its
// golden file, testdata/<preset>/<shape>.json. Run with -update to rewrite
// them, then review the diff.
func TestGolden(t *testing.T) {
	for _, d := range presets.All() {
		shapes := []struct {
			file string
			got  []byte
		}{
			{"arguments.schema.json", d.ArgumentsSchema()},
			{"result.schema.json", d.ResultSchema()},
			{"error.schema.json", d.ErrorSchema()},
			{"openai-chat.tool.json", d.OpenAIChatTool()},
			{"openai-responses.tool.json", d.ResponsesTool()},
			{"anthropic.tool.json", d.AnthropicTool()},
			{"gemini.function.json", d.GeminiFunctionDeclaration()},
		}
		for _, s := range shapes {
			t.Run(d.Name()+"/"+s.file, func(t *testing.T) {
				var pretty bytes.Buffer
				if err := json.Indent(&pretty, s.got, "", "  "); err != nil {
					t.Fatalf("output is not JSON: %v\n%s", err, s.got)
				}
				pretty.WriteByte('\n')
				path := filepath.Join("testdata", d.Name(), s.file)
				if *update {
					if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, pretty.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test -update to create it)", err)
				}
				if !bytes.Equal(pretty.Bytes(), want) {
					t.Errorf("%s differs from the output (run go test -update and review the diff)\ngot:\n%s\nwant:\n%s", path, pretty.Bytes(), want)
				}
			})
		}
	}
}

// TestProviderShapes checks the structural promises of each provider's
// tool definition, independently of the golden files.
func TestProviderShapes(t *testing.T) {
	for _, d := range presets.All() {
		t.Run(d.Name(), func(t *testing.T) {
			var chat struct {
				Type     string `json:"type"`
				Function struct {
					Name        string         `json:"name"`
					Description string         `json:"description"`
					Parameters  map[string]any `json:"parameters"`
				} `json:"function"`
			}
			mustUnmarshal(t, d.OpenAIChatTool(), &chat)
			if chat.Type != "function" || chat.Function.Name != d.Name() || chat.Function.Description != d.Description() {
				t.Errorf("OpenAI chat tool = %s", d.OpenAIChatTool())
			}
			if _, ok := chat.Function.Parameters["$schema"]; ok {
				t.Errorf("OpenAI chat parameters carry $schema")
			}
			if chat.Function.Parameters["additionalProperties"] != false {
				t.Errorf("OpenAI chat parameters are not closed")
			}

			var responses map[string]any
			mustUnmarshal(t, d.ResponsesTool(), &responses)
			if responses["type"] != "function" || responses["name"] != d.Name() || responses["strict"] != false || responses["parameters"] == nil {
				t.Errorf("Responses tool = %s", d.ResponsesTool())
			}

			var anthropic map[string]any
			mustUnmarshal(t, d.AnthropicTool(), &anthropic)
			if anthropic["name"] != d.Name() || anthropic["input_schema"] == nil || len(anthropic) != 3 {
				t.Errorf("Anthropic tool = %s", d.AnthropicTool())
			}

			var gemini map[string]any
			mustUnmarshal(t, d.GeminiFunctionDeclaration(), &gemini)
			if gemini["name"] != d.Name() || len(gemini) != 3 {
				t.Errorf("Gemini declaration = %s", d.GeminiFunctionDeclaration())
			}
			params := string(mustMarshal(t, gemini["parameters"]))
			for _, banned := range []string{`"$schema"`, `"additionalProperties"`, `"type":"object"`, `"type":"string"`} {
				if strings.Contains(params, banned) {
					t.Errorf("Gemini parameters contain %s: %s", banned, params)
				}
			}
			if !strings.Contains(params, `"type":"OBJECT"`) {
				t.Errorf("Gemini parameters lack type OBJECT: %s", params)
			}
		})
	}
}

func mustUnmarshal(t *testing.T, raw []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("unmarshal %s: %v", raw, err)
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
