package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// missMessage is the snippet README.md and docs/testing.md show for reading
// a miss out of an openai-go error: since v3.100, err.Error() is only the
// status ("OpenAI API error: 400 Bad Request"), and the proxy's explanation
// is the error's Message.
func missMessage(err error) string {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		return fmt.Sprintf("%v: %s", err, apiErr.Message)
	}
	return err.Error()
}

// TestReadAMissFromOpenAIGo: a request the cassette does not hold fails in
// openai-go with an *openai.Error whose Message is the proxy's miss message,
// which its Error() leaves out.
func TestReadAMissFromOpenAIGo(t *testing.T) {
	url, _ := replayDemo(t)
	client := openai.NewClient(option.WithBaseURL(url), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    openai.ChatModelGPT4oMini,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What's the weather in Rome?")},
	})
	if err == nil {
		t.Fatal("a request the cassette does not hold was answered")
	}
	const miss = "has no recording of this request"
	got := missMessage(err)
	if !strings.Contains(got, miss) || !strings.Contains(got, "Rome") {
		t.Errorf("missMessage = %q; want the proxy's miss message (%q, naming the differing value)", got, miss)
	}
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Response.Header.Get("X-Llmproxy-Miss") != "1" {
		t.Errorf("err = %v; want an *openai.Error, status 400, X-Llmproxy-Miss: 1", err)
	}
	if strings.Contains(err.Error(), miss) {
		t.Logf("this openai-go prints the miss in Error() too: %v", err)
	}
}
