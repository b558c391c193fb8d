package faults_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/faults"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want faults.Fault
		str  string
	}{
		{"429@rate=0.1,retry-after=2s", faults.Fault{Kind: faults.Status, Status: 429, Rate: 0.1, RetryAfter: 2 * time.Second}, "429@rate=0.1,retry-after=2s"},
		{"529", faults.Fault{Kind: faults.Status, Status: 529, Rate: 1}, "529"},
		{"500", faults.Fault{Kind: faults.Status, Status: 500, Rate: 1}, "500"},
		{" 503@consume ", faults.Fault{Kind: faults.Status, Status: 503, Rate: 1, Consume: true}, "503@consume"},
		{"529@event=2", faults.Fault{Kind: faults.Status, Status: 529, Rate: 1, Event: 2}, "529@event=2"},
		{"timeout@after=5s", faults.Fault{Kind: faults.Timeout, Rate: 1, After: 5 * time.Second}, "timeout@after=5s"},
		{"timeout", faults.Fault{Kind: faults.Timeout, Rate: 1, After: faults.DefaultTimeout}, "timeout"},
		{"cut@event=3", faults.Fault{Kind: faults.Cut, Rate: 1, Event: 3}, "cut@event=3"},
		{"stall@event=3,for=10s", faults.Fault{Kind: faults.Stall, Rate: 1, Event: 3, For: 10 * time.Second}, "stall@event=3,for=10s"},
		{"stall", faults.Fault{Kind: faults.Stall, Rate: 1, For: faults.DefaultStall}, "stall"},
		{"malformed@event=3", faults.Fault{Kind: faults.Malformed, Rate: 1, Event: 3}, "malformed@event=3"},
		{"slow@ttfb=2s,per-event=50ms", faults.Fault{Kind: faults.Slow, Rate: 1, TTFB: 2 * time.Second, PerEvent: 50 * time.Millisecond}, "slow@ttfb=2s,per-event=50ms"},
		{"RESET", faults.Fault{Kind: faults.Reset, Rate: 1}, "reset"},
		{"reset@rate=0.5,consume=true", faults.Fault{Kind: faults.Reset, Rate: 0.5, Consume: true}, "reset@rate=0.5,consume"},
		{"429@request=1,retry-after=1s", faults.Fault{Kind: faults.Status, Status: 429, Rate: 1, Request: 1, RetryAfter: time.Second}, "429@request=1,retry-after=1s"},
		{"cut@rate=0", faults.Fault{Kind: faults.Cut, Rate: 0}, "cut@rate=0"},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			got, err := faults.Parse(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Parse(%q) = %+v, want %+v", tc.spec, got, tc.want)
			}
			if got.String() != tc.str {
				t.Errorf("String() = %q, want %q", got.String(), tc.str)
			}
			back, err := faults.Parse(got.String())
			if err != nil || back != got {
				t.Errorf("Parse(String()) = %+v, %v; want %+v", back, err, got)
			}
		})
	}
}

func TestParseBad(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"", "no kind"},
		{"@rate=1", "no kind"},
		{"boom", `unknown kind "boom"`},
		{"200", "status 200 is not an error status"},
		{"600", "status 600 is not an error status"},
		{"429@rate=1.5", "rate 1.5 is not a number in [0,1]"},
		{"429@rate=-0.1", "rate -0.1 is not a number in [0,1]"},
		{"429@rate=NaN", "rate NaN is not a number in [0,1]"},
		{"429@rate=x", "rate x is not a number"},
		{"429@retry-after=soon", "retry-after soon is not a duration"},
		{"timeout@after=-1s", "after -1s is not a duration"},
		{"stall@for=", "option for has no value"},
		{"cut@event=0", "event 0 is not a whole number from 1"},
		{"cut@event=three", "event three is not a whole number"},
		{"malformed@request=-2", "request -2 is not a whole number"},
		{"cut@for=1s", "cut takes no option for"},
		{"reset@event=1", "reset takes no option event"},
		{"429@after=1s", "429 takes no option after"},
		{"slow@ttfb=1s,ttfb=2s", "option ttfb given twice"},
		{"cut@", "nothing after @"},
		{"cut@event=1,,rate=1", "an empty option"},
		{"cut@consume=no", `consume takes no value, not "no"`},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			_, err := faults.Parse(tc.spec)
			if err == nil {
				t.Fatalf("Parse(%q): no error", tc.spec)
			}
			if !errors.Is(err, faults.ErrBadSpec) {
				t.Errorf("error %v does not wrap ErrBadSpec", err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), fmt.Sprintf("%q", tc.spec)) {
				t.Errorf("error %q: want it to name the spec and say %q", err, tc.want)
			}
		})
	}
}

func TestParseAllNamesTheBadOne(t *testing.T) {
	if _, err := faults.ParseAll([]string{"429", "cut@event=x"}); err == nil || !strings.Contains(err.Error(), `"cut@event=x"`) {
		t.Fatalf("err = %v, want it to name the second spec", err)
	}
	fs, err := faults.ParseAll([]string{"429", "reset"})
	if err != nil || len(fs) != 2 {
		t.Fatalf("ParseAll = %v, %v", fs, err)
	}
}

// faulted lists the (conversation, request) pairs of convs conversations of
// n requests each that plan faults, numbering them with a Counter.
func faulted(plan *faults.Plan, convs, n int, parallel bool) []string {
	var (
		c   faults.Counter
		mu  sync.Mutex
		out []string
		wg  sync.WaitGroup
	)
	run := func(conv string) {
		for range n {
			k := c.Next("scope", faults.Named(conv))
			if f := plan.Pick(faults.Named(conv), k); f != nil {
				mu.Lock()
				out = append(out, fmt.Sprintf("%s#%d:%s", conv, k, f))
				mu.Unlock()
			}
		}
	}
	for i := range convs {
		conv := fmt.Sprintf("conversation-%d", i)
		if parallel {
			wg.Add(1)
			go func() { defer wg.Done(); run(conv) }()
		} else {
			run(conv)
		}
	}
	wg.Wait()
	slices.Sort(out)
	return out
}

func TestPickDeterministic(t *testing.T) {
	f, err := faults.ParseAll([]string{"429@rate=0.1", "cut@rate=0.05,event=2"})
	if err != nil {
		t.Fatal(err)
	}
	a := faulted(&faults.Plan{Seed: 7, Faults: f}, 8, 50, false)
	b := faulted(&faults.Plan{Seed: 7, Faults: f}, 8, 50, false)
	if !slices.Equal(a, b) {
		t.Fatalf("same seed, different sets:\n%v\n%v", a, b)
	}
	if len(a) < 20 || len(a) > 80 { // 400 requests at 0.1 + 0.05·0.9: about 58
		t.Errorf("%d of 400 requests faulted, want about 58: %v", len(a), a)
	}
	p := faulted(&faults.Plan{Seed: 7, Faults: f}, 8, 50, true)
	if !slices.Equal(a, p) {
		t.Fatalf("8 parallel conversations fault another set than serial:\n%v\n%v", a, p)
	}
	other := faulted(&faults.Plan{Seed: 8, Faults: f}, 8, 50, false)
	if slices.Equal(a, other) {
		t.Fatalf("seeds 7 and 8 fault the same set: %v", a)
	}
}

func TestPickRateAndRequest(t *testing.T) {
	all, _ := faults.Parse("500")
	none, _ := faults.Parse("500@rate=0")
	first, _ := faults.Parse("429@request=1")
	c := faults.Named("c")
	for n := uint64(1); n <= 100; n++ {
		if !faults.Chosen(1, &all, c, n) {
			t.Fatalf("rate 1 skipped request %d", n)
		}
		if faults.Chosen(1, &none, c, n) {
			t.Fatalf("rate 0 faulted request %d", n)
		}
		if faults.Chosen(1, &first, c, n) != (n == 1) {
			t.Fatalf("request=1 chose request %d: %v", n, faults.Chosen(1, &first, c, n))
		}
	}
	var empty *faults.Plan
	if !empty.Empty() || empty.Pick(c, 1) != nil {
		t.Fatal("a nil plan injects something")
	}
	plan := faults.Plan{Faults: []faults.Fault{none, first, all}}
	if got := plan.Pick(c, 1); got == nil || got.Status != 429 {
		t.Fatalf("Pick(1) = %v, want the first fault that falls: 429", got)
	}
	if got := plan.Pick(c, 2); got == nil || got.Status != 500 {
		t.Fatalf("Pick(2) = %v, want 500", got)
	}
}

func TestCounter(t *testing.T) {
	var c faults.Counter
	a, b := faults.Named("a"), faults.Named("b")
	for want := uint64(1); want <= 3; want++ {
		if got := c.Next("s", a); got != want {
			t.Fatalf("Next(s, a) = %d, want %d", got, want)
		}
	}
	if got := c.Next("s", b); got != 1 {
		t.Fatalf("Next(s, b) = %d, want 1", got)
	}
	if got := c.Next("other", a); got != 1 {
		t.Fatalf("Next(other, a) = %d, want 1: another scope counts apart", got)
	}
	for i := range faults.MaxConversations {
		c.Next("s", faults.Named(fmt.Sprint("x", i)))
	}
	if got := c.Next("s", a); got != 1 {
		t.Fatalf("after MaxConversations, Next(s, a) = %d, want 1 (counted afresh)", got)
	}
}

// TestConversations: a named conversation and an opening are digests of
// what identifies them, apart from each other.
func TestConversations(t *testing.T) {
	if faults.Named("a") != faults.Named("a") || faults.Named("a") == faults.Named("b") || faults.Named("") == faults.Opening(nil, nil) {
		t.Errorf("Named: the same name must give the same conversation, others others")
	}
	if faults.Opening([]byte("s"), []byte("t")) != faults.Opening([]byte("s"), []byte("t")) ||
		faults.Opening([]byte("st"), nil) == faults.Opening([]byte("s"), []byte("t")) {
		t.Errorf("Opening: the system prompt and first turn are told apart")
	}
}

// TestChoosingAllocatesNothing: once a rate is set every request pays for
// the choice, so numbering and choosing a request costs no allocation.
func TestChoosingAllocatesNothing(t *testing.T) {
	fs, err := faults.ParseAll([]string{"429@rate=0.1", "cut@rate=0.05,event=2,consume"})
	if err != nil {
		t.Fatal(err)
	}
	plan := &faults.Plan{Seed: 1, Faults: fs}
	var c faults.Counter
	sys, first := []byte(`"be brief"`), []byte(`{"role":"user","content":"hi"}`)
	c.Next("s", faults.Opening(sys, first)) // the conversation's first request adds it to the map
	if n := testing.AllocsPerRun(1000, func() {
		conv := faults.Opening(sys, first)
		plan.Pick(conv, c.Next("s", conv))
	}); n != 0 {
		t.Errorf("choosing allocates %v times a request, want 0", n)
	}
}

// TestChosenIsTheSpecsHash: the choice hashes the canonical spec, so two
// ways of writing one fault fall on the same requests.
func TestChosenIsTheSpecsHash(t *testing.T) {
	a, _ := faults.Parse("429@retry-after=2s,rate=0.3")
	b, _ := faults.Parse(" 429 @ rate=0.30 , retry-after=2000ms")
	conv := faults.Named("c")
	for n := uint64(1); n <= 200; n++ {
		if faults.Chosen(5, &a, conv, n) != faults.Chosen(5, &b, conv, n) {
			t.Fatalf("request %d: %s and %s chosen differently", n, &a, &b)
		}
	}
}

// BenchmarkChoose is what every request pays once a rate is set: its
// conversation's digest, its number, and the choice.
func BenchmarkChoose(b *testing.B) {
	fs, err := faults.ParseAll([]string{"429@rate=0.1,retry-after=2s"})
	if err != nil {
		b.Fatal(err)
	}
	plan := &faults.Plan{Seed: 1, Faults: fs}
	var c faults.Counter
	sys, first := []byte(`"You are a helpful assistant."`), []byte(`{"role":"user","content":"What is the weather in Paris today?"}`)
	b.ReportAllocs()
	for b.Loop() {
		conv := faults.Opening(sys, first)
		plan.Pick(conv, c.Next("cassette", conv))
	}
}
