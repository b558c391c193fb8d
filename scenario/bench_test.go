package scenario_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/scenario"
	"github.com/llmproxy/llmproxy/wire"
)

// linear is a scenario of n steps in a line, each wanting the same question
// and the last restarting, so that a conversation walks through all of them.
func linear(b *testing.B, n int) *scenario.Engine {
	sb := scenario.New(fmt.Sprintf("linear-%d", n)).OnExhausted(scenario.Restart)
	for i := range n {
		sb.Step(fmt.Sprintf("s%d", i)).WhenLatestUser(scenario.Equals("next?")).Text("step " + fmt.Sprint(i))
	}
	return build(b, sb)
}

// answerLoop answers and commits b.N requests of one conversation.
func answerLoop(b *testing.B, e *scenario.Engine) {
	req := request(b, "bench", wire.KindOpenAIChat, chat(user("next?")))
	b.ReportAllocs()
	for b.Loop() {
		p, err := e.Answer(req)
		if err != nil {
			b.Fatal(err)
		}
		p.Commit()
	}
}

// BenchmarkAnswer answers from linear scenarios of 10 and 10 000 steps.
func BenchmarkAnswer(b *testing.B) {
	for _, n := range []int{10, 10000} {
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) { answerLoop(b, linear(b, n)) })
	}
}

// BenchmarkAnswerFlat answers alternately from a 10-step and a 10 000-step
// linear scenario and reports how much slower the large one is, measured in
// the same run (ratio-10000/10; 1.0 is flat).
func BenchmarkAnswerFlat(b *testing.B) {
	engines := [2]*scenario.Engine{linear(b, 10), linear(b, 10000)}
	req := request(b, "bench", wire.KindOpenAIChat, chat(user("next?")))
	var spent [2]time.Duration
	for b.Loop() {
		for i, e := range engines {
			start := time.Now()
			p, err := e.Answer(req)
			if err != nil {
				b.Fatal(err)
			}
			p.Commit()
			spent[i] += time.Since(start)
		}
	}
	b.ReportMetric(float64(spent[1])/float64(spent[0]), "ratio-10000/10")
	b.ReportMetric(float64(spent[0].Nanoseconds())/float64(b.N), "ns/answer-10")
	b.ReportMetric(float64(spent[1].Nanoseconds())/float64(b.N), "ns/answer-10000")
}

// brokenFile is a scenario file of n steps, each with a problem the decoder
// finds (an unknown key) and one compile finds (an unknown preset), as a
// large generated file with a systematic mistake has.
func brokenFile(n int) []byte {
	var b bytes.Buffer
	b.WriteString("version: 1\nsteps:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - id: s%d\n    colour: red\n    respond: {tool-calls: [{preset: nope%d}]}\n", i, i)
	}
	return b.Bytes()
}

// BenchmarkCheckBroken checks files of 1 000, 10 000 and 50 000 steps, each
// with two problems, and reports the time per step (flat when the check is
// linear).
func BenchmarkCheckBroken(b *testing.B) {
	for _, n := range []int{1000, 10000, 50000} {
		data := brokenFile(n)
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			for b.Loop() {
				_, err := scenario.Parse("broken.yaml", data)
				var list scenario.ErrorList
				if !errors.As(err, &list) || len(list) != 2*n {
					b.Fatalf("got %d problems, want %d", len(list), 2*n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/step")
		})
	}
}
