package proxy_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/proxy"
)

// askAnthropic sends one weather question with anthropic-sdk-go and
// returns the stream events it saw (0 when not streamed) and the error.
func askAnthropic(ctx context.Context, base string, stream bool, opts ...anthropicoption.RequestOption) (events int, stop string, err error) {
	client := anthropic.NewClient(append([]anthropicoption.RequestOption{
		anthropicoption.WithBaseURL(base + "/anthropic/"), anthropicoption.WithAPIKey("sk-ant-test"), anthropicoption.WithMaxRetries(0),
	}, opts...)...)
	params := anthropic.MessageNewParams{
		Model: "claude-sonnet-4-6", MaxTokens: 1024,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(weatherPrompt))},
	}
	if !stream {
		m, err := client.Messages.New(ctx, params)
		if err != nil {
			return 0, "", err
		}
		return 0, string(m.StopReason), nil
	}
	s := client.Messages.NewStreaming(ctx, params)
	var m anthropic.Message
	for s.Next() {
		events++
		if err := m.Accumulate(s.Current()); err != nil {
			return events, "", err
		}
	}
	return events, string(m.StopReason), s.Err()
}

// recordAnthropic records one weather question, whole or streamed.
func recordAnthropic(t *testing.T, stream bool) string {
	t.Helper()
	up := fake.New(t, fake.AnthropicMessages(weatherLoop))
	path := cassettePath(t)
	rec := startProxy(t, proxy.ModeRecord, path, up.URL())
	if _, stop, err := askAnthropic(context.Background(), rec.URL(), stream); err != nil || stop != "tool_use" {
		t.Fatalf("recording: %q, %v", stop, err)
	}
	rec.stop()
	return path
}

// TestFaultsThroughAnthropicSDK: anthropic-sdk-go meets each fault as it
// would meet Anthropic failing: its default retry gets the recording after
// a 429 or a 529; a cut stream and a malformed event are errors; a
// mid-stream overloaded error event is an error after the events before
// it; a stall past its timeout is its timeout.
func TestFaultsThroughAnthropicSDK(t *testing.T) {
	for _, stream := range []bool{false, true} {
		path := recordAnthropic(t, stream)
		name := map[bool]string{false: "json", true: "stream"}[stream]
		t.Run(name+"/retry", func(t *testing.T) {
			for _, spec := range []string{"429@request=1,retry-after=10ms", "529@request=1,retry-after=10ms"} {
				rep := startProxy(t, proxy.ModeReplay, path, "", withFaults(t, 1, spec))
				if _, stop, err := askAnthropic(context.Background(), rep.URL(), stream, anthropicoption.WithMaxRetries(2)); err != nil || stop != "tool_use" {
					t.Errorf("%s: %q, %v; want the recording after a retry", spec, stop, err)
				}
				if log := logEntries(t, rep.URL()); len(log) != 2 || log[0].Fault != spec || log[1].Fault != "" || log[1].Status != 200 {
					t.Errorf("%s: log %+v, want the fault, then the recording", spec, log)
				}
				rep.stop()
			}
		})
		t.Run(name+"/malformed", func(t *testing.T) {
			rep := startProxy(t, proxy.ModeReplay, path, "", withFaults(t, 1, "malformed@request=1"))
			var apiErr *anthropic.Error
			if _, _, err := askAnthropic(context.Background(), rep.URL(), stream); err == nil || errors.As(err, &apiErr) {
				t.Errorf("err = %v, want the SDK's decoding error", err)
			}
			if _, stop, err := askAnthropic(context.Background(), rep.URL(), stream); err != nil || stop != "tool_use" {
				t.Errorf("then %q, %v; want the recording", stop, err)
			}
		})
		t.Run(name+"/stall", func(t *testing.T) {
			spec := map[bool]string{false: "stall@for=1m", true: "stall@event=2,for=1m"}[stream]
			rep := startProxy(t, proxy.ModeReplay, path, "", withFaults(t, 1, spec))
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			want := map[bool]int{false: 0, true: 2}[stream]
			if events, _, err := askAnthropic(ctx, rep.URL(), stream); !errors.Is(err, context.DeadlineExceeded) || events != want {
				t.Errorf("%d events, err %v; want %d events, then the client's deadline", events, err, want)
			}
		})
		if !stream {
			continue
		}
		t.Run("cut", func(t *testing.T) {
			// On the wire: message_start, content_block_start, ping (which the
			// SDK does not surface), then content_block_delta.
			rep := startProxy(t, proxy.ModeReplay, path, "", withFaults(t, 1, "cut@event=4,request=1"))
			if events, _, err := askAnthropic(context.Background(), rep.URL(), true); err == nil || events != 3 {
				t.Errorf("%d events, err %v; want 3 events, then an error", events, err)
			}
		})
		t.Run("overloaded mid-stream", func(t *testing.T) {
			rep := startProxy(t, proxy.ModeReplay, path, "", withFaults(t, 1, "529@event=2,request=1"))
			_, _, err := askAnthropic(context.Background(), rep.URL(), true)
			if err == nil || !strings.Contains(err.Error(), "overloaded_error") || !strings.Contains(err.Error(), "injected fault") {
				t.Errorf("err = %v, want the overloaded error event", err)
			}
		})
	}
}
