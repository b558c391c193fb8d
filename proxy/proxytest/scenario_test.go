package proxytest_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/llmproxy/llmproxy/presets"
	"github.com/llmproxy/llmproxy/proxy/proxytest"
	"github.com/llmproxy/llmproxy/scenario"
)

// weatherBuilt is the weather round built in Go.
func weatherBuilt(t *testing.T) *scenario.Scenario {
	t.Helper()
	paris, err := presets.Weather.Success(presets.WeatherArgs{Location: "Paris"},
		presets.WeatherResult{Location: "Paris", Temperature: 21, Unit: "celsius", Condition: "sunny"})
	if err != nil {
		t.Fatal(err)
	}
	b := scenario.New("weather")
	b.Fixture("paris", paris)
	b.Step("ask").WhenLatestUser(scenario.Equals("Weather in Paris?")).CallsFixture("paris")
	b.Step("answer").WhenFixtureResult("paris").Text("Sunny, 21 °C.").Complete()
	s, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// chatRound asks and, when the answer calls a tool, sends result back.
func chatRound(ctx context.Context, base, question, result string) (string, error) {
	client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("none"), option.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(question)}}
	for range 2 {
		cc, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			return "", err
		}
		msg := cc.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			return msg.Content, nil
		}
		params.Messages = append(params.Messages, msg.ToParam())
		for _, tc := range msg.ToolCalls {
			params.Messages = append(params.Messages, openai.ToolMessage(result, tc.ID))
		}
	}
	return "", nil
}

const parisResult = `{"location":"Paris","temperature":21,"unit":"celsius","condition":"sunny"}`

func TestServeScenarioBuiltInGo(t *testing.T) {
	m := proxytest.ServeScenario(t, weatherBuilt(t))
	got, err := chatRound(context.Background(), m.BaseURL(), "Weather in Paris?", parisResult)
	if err != nil || got != "Sunny, 21 °C." {
		t.Fatalf("got %q, %v", got, err)
	}
	log, err := m.Log()
	if err != nil || len(log) != 2 || log[0].Step != "ask" || log[1].Step != "answer" {
		t.Errorf("log %+v, %v", log, err)
	}
	// Built in Go, it has no file to name.
	if page := scenarioPage(t, m); !strings.Contains(page, "weather") || strings.Contains(page, "<small>") {
		t.Errorf("the scenario page of a scenario built in Go names a file:\n%.3000s", page)
	}
}

func TestNewScenarioFromFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "weather.yaml")
	text := `version: 1
steps:
  - when: {latest-user: {contains: Paris}}
    respond: {text: "Sunny."}
`
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	m := proxytest.NewScenario(t, path)
	if got, err := chatRound(context.Background(), m.BaseURL(), "Paris?", ""); err != nil || got != "Sunny." {
		t.Fatalf("got %q, %v", got, err)
	}
	// The web view's scenario page names the file it was loaded from.
	if page := scenarioPage(t, m); !strings.Contains(page, "<small>"+path+"</small>") {
		t.Errorf("the scenario page does not name %s:\n%.3000s", path, page)
	}
}

// scenarioPage is the web view's scenario page of m.
func scenarioPage(t *testing.T, m *proxytest.Mock) string {
	t.Helper()
	resp, err := http.Get(m.BaseURL() + "/_llmproxy/ui/scenario")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scenario page: %s, %v", resp.Status, err)
	}
	return string(body)
}

// spiedScenario runs ServeScenario on a spy, so that its failures can be
// read.
func spiedScenario(t *testing.T, s *scenario.Scenario, opts ...proxytest.Option) (*spy, *proxytest.Mock) {
	sp := &spy{TB: t}
	var m *proxytest.Mock
	done := make(chan struct{})
	go func() {
		defer close(done)
		m = proxytest.ServeScenario(sp, s, opts...)
	}()
	<-done
	return sp, m
}

func TestScenarioMissFailsTheTest(t *testing.T) {
	sp, m := spiedScenario(t, weatherBuilt(t))
	_, err := chatRound(context.Background(), m.BaseURL(), "Weather in Rome?", parisResult)
	if err == nil {
		t.Fatal("a miss reached the client as an answer")
	}
	sp.end()
	all := strings.Join(sp.errors, "\n")
	if !strings.Contains(all, `step "ask": latest-user`) {
		t.Errorf("the test was not failed with the miss:\n%s", all)
	}
	if strings.Contains(all, "no conversation reached") {
		t.Errorf("a failed test also reported unreached steps:\n%s", all)
	}
}

func TestScenarioUnreachedStepsFailTheTest(t *testing.T) {
	sp, m := spiedScenario(t, weatherBuilt(t))
	if _, err := chatRound(context.Background(), m.BaseURL(), "Weather in Paris?", ""); err == nil {
		t.Log("the answer step was met by an empty result")
	}
	if u := m.Unused(); len(u) != 1 || u[0] != "answer" {
		t.Errorf("Unused %v, want [answer]", u)
	}
	sp.errors = nil // the miss of the empty result, if any
	sp.end()
	if all := strings.Join(sp.errors, "\n"); !strings.Contains(all, "1 step(s) no conversation reached: answer") {
		t.Errorf("unreached step not reported:\n%s", all)
	}

	sp, m = spiedScenario(t, weatherBuilt(t), proxytest.AllowUnused())
	sp.end()
	if len(sp.errors) > 0 {
		t.Errorf("AllowUnused still failed: %v", sp.errors)
	}
	_ = m
}

func TestServeScenarioRefusesInvalid(t *testing.T) {
	s := weatherBuilt(t)
	s.Steps[0].Then = []string{"nowhere"}
	sp, m := spiedScenario(t, s)
	if m != nil || !strings.Contains(sp.fatal, "nowhere") {
		t.Errorf("an invalid scenario was served: fatal %q", sp.fatal)
	}
}

// TestScenarioSharedBySubtests: one mock serves parallel subtests, each
// running the weather round with no conversation header and in any order;
// each subtest's requests carry its own history, so each has its own
// conversation (the position rule), and none meets another's steps.
func TestScenarioSharedBySubtests(t *testing.T) {
	m := proxytest.ServeScenario(t, weatherBuilt(t))
	for n := range 8 {
		t.Run("round"+string(rune('a'+n)), func(t *testing.T) {
			t.Parallel()
			got, err := chatRound(context.Background(), m.BaseURL(), "Weather in Paris?", parisResult)
			if err != nil || got != "Sunny, 21 °C." {
				t.Errorf("round: %q %v", got, err)
			}
		})
	}
}
