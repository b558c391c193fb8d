package proxytest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"google.golang.org/genai"

	"github.com/llmproxy/llmproxy/proxy/proxytest"
	"github.com/llmproxy/llmproxy/scenario"
)

// report is what the structured-output tests ask each SDK for.
type report struct {
	City        string   `json:"city"`
	Temperature float64  `json:"temperature"`
	Unit        string   `json:"unit"`
	Tags        []string `json:"tags"`
}

// reportSchema is report's schema, as OpenAI's strict mode wants it.
func reportSchema() map[string]any {
	return map[string]any{
		"type":                 "object",
		"additionalProperties": false,
		"properties": map[string]any{
			"city":        map[string]any{"type": "string", "minLength": 2},
			"temperature": map[string]any{"type": "number", "minimum": -90},
			"unit":        map[string]any{"type": "string", "enum": []string{"celsius", "fahrenheit"}},
			"tags":        map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		},
		"required": []string{"city", "temperature", "unit", "tags"},
	}
}

// The answers: a value the test gives, and the one generate makes.
var (
	givenReport     = report{City: "Paris", Temperature: 21.5, Unit: "celsius", Tags: []string{"sunny"}}
	generatedReport = report{City: "aa", Temperature: 0, Unit: "celsius", Tags: []string{}}
)

// serveJSON serves a scenario whose every answer is the given value, or
// the generated one.
func serveJSON(t *testing.T, generate bool) *proxytest.Mock {
	t.Helper()
	b := scenario.New("structured").OnExhausted(scenario.RepeatLast)
	if generate {
		b.Step("").GenerateJSON()
	} else {
		b.Step("").JSON(json.RawMessage(`{"city":"Paris","temperature":21.5,"unit":"celsius","tags":["sunny"]}`))
	}
	s, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return proxytest.ServeScenario(t, s)
}

// decodeStrict decodes raw into a report, refusing unknown fields.
func decodeStrict(t *testing.T, raw string) report {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.DisallowUnknownFields()
	var r report
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("the SDK's structured output %q does not decode: %v", raw, err)
	}
	return r
}

// structuredClients ask for a report through each SDK's structured-output
// path and return the JSON the SDK hands the application.
var structuredClients = map[string]func(ctx context.Context, t *testing.T, base string) string{
	"openai chat response_format": func(ctx context.Context, t *testing.T, base string) string {
		client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("none"), option.WithMaxRetries(0))
		cc, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model:    "gpt-4o-mini",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?")},
			ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &openai.ResponseFormatJSONSchemaParam{
				JSONSchema: openai.ResponseFormatJSONSchemaJSONSchemaParam{Name: "report", Schema: reportSchema(), Strict: openai.Bool(true)},
			}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return cc.Choices[0].Message.Content
	},
	"openai responses text.format": func(ctx context.Context, t *testing.T, base string) string {
		client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("none"), option.WithMaxRetries(0))
		resp, err := client.Responses.New(ctx, responses.ResponseNewParams{
			Model: "gpt-4o-mini",
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Weather in Paris?")},
			Text:  responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigParamOfJSONSchema("report", reportSchema())},
		})
		if err != nil {
			t.Fatal(err)
		}
		return resp.OutputText()
	},
	"genai responseSchema": func(ctx context.Context, t *testing.T, base string) string {
		return geminiStructured(ctx, t, base, &genai.GenerateContentConfig{
			ResponseMIMEType: "application/json",
			ResponseSchema: &genai.Schema{
				Type: genai.TypeObject,
				Properties: map[string]*genai.Schema{
					"city":        {Type: genai.TypeString, MinLength: genai.Ptr[int64](2)},
					"temperature": {Type: genai.TypeNumber, Minimum: genai.Ptr(-90.0)},
					"unit":        {Type: genai.TypeString, Enum: []string{"celsius", "fahrenheit"}},
					"tags":        {Type: genai.TypeArray, Items: &genai.Schema{Type: genai.TypeString}},
				},
				PropertyOrdering: []string{"city", "temperature", "unit", "tags"},
				Required:         []string{"city", "temperature", "unit", "tags"},
			},
		})
	},
	"genai responseJsonSchema": func(ctx context.Context, t *testing.T, base string) string {
		return geminiStructured(ctx, t, base, &genai.GenerateContentConfig{ResponseMIMEType: "application/json", ResponseJsonSchema: reportSchema()})
	},
	"anthropic forced tool": func(ctx context.Context, t *testing.T, base string) string {
		client := anthropic.NewClient(anthropicoption.WithBaseURL(base+"/anthropic/"), anthropicoption.WithAPIKey("none"), anthropicoption.WithMaxRetries(0))
		schema := reportSchema()
		msg, err := client.Messages.New(ctx, anthropic.MessageNewParams{
			Model:     "claude-sonnet-4-5",
			MaxTokens: 256,
			Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Paris?"))},
			Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{
				Name:        "record_report",
				InputSchema: anthropic.ToolInputSchemaParam{Properties: schema["properties"], Required: schema["required"].([]string), ExtraFields: map[string]any{"additionalProperties": false}},
			}}},
			ToolChoice: anthropic.ToolChoiceParamOfTool("record_report"),
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, block := range msg.Content {
			if use := block.AsToolUse(); block.Type == "tool_use" && use.Name == "record_report" {
				if msg.StopReason != anthropic.StopReasonToolUse {
					t.Errorf("stop reason %q", msg.StopReason)
				}
				return string(use.Input)
			}
		}
		t.Fatalf("no record_report tool_use in %+v", msg.Content)
		return ""
	},
}

func geminiStructured(ctx context.Context, t *testing.T, base string, config *genai.GenerateContentConfig) string {
	client, err := genai.NewClient(ctx, &genai.ClientConfig{APIKey: "none", Backend: genai.BackendGeminiAPI, HTTPOptions: genai.HTTPOptions{BaseURL: base + "/gemini"}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Models.GenerateContent(ctx, "gemini-2.5-flash", genai.Text("Weather in Paris?"), config)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Text()
}

// TestStructuredOutputThroughSDKs: json: VALUE and json: {generate: true}
// answers parse through each SDK's structured-output path into the
// application's type.
func TestStructuredOutputThroughSDKs(t *testing.T) {
	for name, ask := range structuredClients {
		for _, generate := range []bool{false, true} {
			t.Run(name+map[bool]string{false: "/value", true: "/generate"}[generate], func(t *testing.T) {
				m := serveJSON(t, generate)
				got := decodeStrict(t, ask(context.Background(), t, m.BaseURL()))
				want := givenReport
				if generate {
					want = generatedReport
				}
				if got.City != want.City || got.Temperature != want.Temperature || got.Unit != want.Unit || len(got.Tags) != len(want.Tags) || got.Tags == nil {
					t.Errorf("got %+v, want %+v", got, want)
				}
			})
		}
	}
}
