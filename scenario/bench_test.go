package scenario_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
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

// flatEngine is a flat list of n stubs: step i answers "q<i>" with "a<i>"
// (i in five digits, so that every request of flatRequests has the same
// size), and a conversation goes from one to the next.
func flatEngine(b *testing.B, n int) *scenario.Engine {
	sb := scenario.New(fmt.Sprintf("flat-%d", n)).OnExhausted(scenario.Restart)
	for i := range n {
		sb.Step(fmt.Sprintf("s%d", i)).WhenLatestUser(scenario.Equals(fmt.Sprintf("q%05d", i))).Text(fmt.Sprintf("a%05d", i))
	}
	return build(b, sb)
}

// flatRequests returns 10 000 requests of convs conversations read from
// the request (no header) against a flat list of n steps: conversation c,
// after its answer to question at(c, n), asks the next; each has a system
// prompt of its own. With one conversation they are 10 000 copies of its
// request, so that every configuration reads its requests from as much
// memory; every number is written in five digits, so that every request
// of every configuration has the same size.
func flatRequests(b *testing.B, n, convs int, at func(c, n int) int) []scenario.Request {
	out := make([]scenario.Request, 10000)
	for r := range out {
		c := r % convs
		out[r] = request(b, "", wire.KindOpenAIChat, flatChat(c, at(c, n)))
	}
	return out
}

// inOrder stands conversation c at question c of n-1: the requests, in
// the order of their conversations, walk the steps in file order, as one
// conversation does.
func inOrder(c, n int) int { return c % (n - 1) }

// scattered stands conversation c at a question its number scatters over
// the n-1: successive requests touch steps far apart, as conversations at
// independent positions do.
func scattered(c, n int) int { return c * 7919 % (n - 1) }

// flatChat is the request of conversation c (its system prompt) after the
// answer to question k of flatEngine, asking question k+1.
func flatChat(c, k int) string {
	return chat(fmt.Sprintf(`{"role":"system","content":"conversation %05d"}`, c),
		user(fmt.Sprintf("q%05d", k)), fmt.Sprintf(`{"role":"assistant","content":"a%05d"}`, k), user(fmt.Sprintf("q%05d", k+1)))
}

// BenchmarkAnswerFlat answers, interleaved in one run, from flat lists of
// 10 and 10 000 steps, for 1 and for 10 000 conversations read from their
// requests (the engine also keeping 10 000 named conversations and 10 000
// Responses answers by id), and reports each ns/answer and the slowest over
// the fastest (ratio-max/min; 1.0 is flat). An answer reads its request's
// history and tries the candidates; neither the steps nor the
// conversations served should make it slower. It also reports, of the
// same answers, each configuration's median time and the ratio of the
// medians (ratio-median): the sums include the time the process waited
// for a core, which on a loaded machine lands on one configuration or
// another at random; the median leaves those answers out.
func BenchmarkAnswerFlat(b *testing.B) { answerFlat(b, inOrder) }

// BenchmarkAnswerFlatScattered is BenchmarkAnswerFlat with the 10 000
// conversations at scattered positions (see scattered) instead of in file
// order: with 10 000 steps each answer then finds its step, the step's key
// and the next step where no earlier answer left them or led the hardware
// to fetch them. The target is BenchmarkAnswerFlat's; this one
// shows what the order of the conversations adds to it.
func BenchmarkAnswerFlatScattered(b *testing.B) { answerFlat(b, scattered) }

// answerFlat is BenchmarkAnswerFlat with the conversations' positions given
// by at.
func answerFlat(b *testing.B, at func(c, n int) int) {
	type config struct {
		name string
		e    *scenario.Engine
		reqs []scenario.Request
	}
	var configs []config
	for _, steps := range []int{10, 10000} {
		for _, convs := range []int{1, 10000} {
			e := flatEngine(b, steps)
			if convs > 1 {
				fill(b, e, convs)
			}
			configs = append(configs, config{fmt.Sprintf("steps=%d/convs=%d", steps, convs), e, flatRequests(b, steps, convs, at)})
		}
	}
	spent := make([]time.Duration, len(configs))
	each := make([][]time.Duration, len(configs))
	k := 0
	for b.Loop() {
		for i, c := range configs {
			req := c.reqs[k%len(c.reqs)]
			start := time.Now()
			p, err := c.e.Answer(req)
			if err != nil {
				b.Fatal(err)
			}
			p.Commit()
			d := time.Since(start)
			spent[i] += d
			each[i] = append(each[i], d)
		}
		k++
	}
	lo, hi := spent[0], spent[0]
	medians := make([]time.Duration, len(configs))
	for i, c := range configs {
		lo, hi = min(lo, spent[i]), max(hi, spent[i])
		b.ReportMetric(float64(spent[i].Nanoseconds())/float64(b.N), "ns/answer-"+c.name)
		slices.Sort(each[i])
		medians[i] = each[i][len(each[i])/2]
		b.ReportMetric(float64(medians[i].Nanoseconds()), "ns/answer-median-"+c.name)
	}
	b.ReportMetric(float64(hi)/float64(lo), "ratio-max/min")
	b.ReportMetric(float64(slices.Max(medians))/float64(slices.Min(medians)), "ratio-median")
}

// fill has e keep n named conversations and n Responses answers by id.
func fill(b *testing.B, e *scenario.Engine, n int) {
	for c := range n {
		for _, req := range []scenario.Request{
			request(b, fmt.Sprint("named-", c), wire.KindOpenAIChat, chat(user("q00000"))),
			request(b, "", wire.KindOpenAIResponses, `{"model":"m","instructions":"c`+fmt.Sprint(c)+`","input":"q00000"}`),
		} {
			p, err := e.Answer(req)
			if err != nil {
				b.Fatal(err)
			}
			p.Commit()
		}
	}
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

// BenchmarkAnswerFlatCause splits the slowest case of BenchmarkAnswerFlat
// (10 000 steps, 10 000 conversations) into its two parts, over one flat
// list of 10 000 steps whose engine keeps 10 000 named conversations and
// Responses answers: requests of 10 000 conversations (system prompts) or
// one, each touching one step or each another of the 10 000. Every request
// runs the same code (one echoed answer found, one entry tried; the same
// allocations), so a difference is the memory the requests touch.
func BenchmarkAnswerFlatCause(b *testing.B) {
	type config struct {
		name string
		e    *scenario.Engine
		reqs []scenario.Request
	}
	var configs []config
	for _, convs := range []bool{false, true} {
		for _, steps := range []bool{false, true} {
			e := flatEngine(b, 10000)
			fill(b, e, 10000)
			reqs := make([]scenario.Request, 10000)
			for r := range reqs {
				c, k := 0, 0
				if convs {
					c = r
				}
				if steps {
					k = r % 9999
				}
				reqs[r] = request(b, "", wire.KindOpenAIChat, flatChat(c, k))
			}
			configs = append(configs, config{fmt.Sprintf("convs=%v/steps=%v", convs, steps), e, reqs})
		}
	}
	spent := make([]time.Duration, len(configs))
	k := 0
	for b.Loop() {
		for i, c := range configs {
			start := time.Now()
			p, err := c.e.Answer(c.reqs[k%len(c.reqs)])
			if err != nil {
				b.Fatal(err)
			}
			p.Commit()
			spent[i] += time.Since(start)
		}
		k++
	}
	for i, c := range configs {
		b.ReportMetric(float64(spent[i].Nanoseconds())/float64(b.N), "ns/answer-"+c.name)
	}
}
