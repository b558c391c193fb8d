package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// newClient is an HTTP/1.1 client that keeps exactly conns connections to
// one host.
func newClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		MaxConnsPerHost:     conns,
		DisableCompression:  true,
		IdleConnTimeout:     time.Minute,
	}}
}

// post sends one chat request, with the headers of extra besides the
// client's own.
func post(c *http.Client, base string, body []byte, extra http.Header) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, base+chatPath, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-bench")
	for k, v := range extra {
		req.Header[k] = v
	}
	return c.Do(req)
}

// fetch sends one request and reads the whole answer.
func fetch(c *http.Client, base string, body []byte) (int, []byte, error) {
	resp, err := post(c, base, body, nil)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// load is one closed-loop load run: conns workers, each sending its next
// request when the previous answer was read, until dur has passed or max
// requests were sent, whichever comes first.
type load struct {
	conns int
	dur   time.Duration
	max   int
	// body returns the body of the n-th request of the run.
	body func(n int) []byte
	// want returns the answer the n-th request must get, byte for byte: any
	// other answer counts as an error, not as a served request.
	want func(n int) []byte
	// mask, when set, appends to dst an answer with the parts that differ
	// from answer to answer cut out, before it is compared with want(n),
	// which has them cut out already.
	mask func(dst, answer []byte) []byte
	// conversation, when set, is called by each worker at the start of
	// each run; the headers it returns go on every request of that worker,
	// and n, in body and want, counts that worker's requests in the run
	// instead of the run's: each worker plays body's sequence in order, in
	// a conversation of its own.
	conversation func() http.Header
	// alt, when set, accepts one other answer besides want(n) (an injected
	// fault): nil when the answer is it. Such answers count as served and
	// in the tally's alt. Each worker asks alt once per distinct answer:
	// an answer with the status and bytes of one alt accepted before is
	// accepted without asking again, as one that is want(n) is by a
	// comparison, so that checking a faulted answer costs the load
	// generator (which shares the cores with the server) no more than
	// checking a served one.
	alt func(status int, got []byte) error
}

// same is a load's want for a run whose every answer is b.
func same(b []byte) func(int) []byte { return func(int) []byte { return b } }

// tally accumulates the runs of one server in one case.
type tally struct {
	n       int
	elapsed time.Duration
	lat     []time.Duration
	errs    int
	err     error
	// alt is how many of the n answers were the load's alt answer.
	alt int
	// rounds is the throughput of each run.
	rounds []float64
	// cpu is the CPU time the server process spent in the runs, when it
	// is a child process.
	cpu time.Duration
	// genCPU is the CPU time the load generator (this process) spent in
	// the runs: it shares the machine's cores with the server.
	genCPU time.Duration
}

// cpuPerRequest is the server's CPU time per answered request; 0 when
// unknown.
func (t *tally) cpuPerRequest() time.Duration {
	if t.n == 0 {
		return 0
	}
	return t.cpu / time.Duration(t.n)
}

// genCPUPerRequest is the load generator's CPU time per answered request.
func (t *tally) genCPUPerRequest() time.Duration {
	if t.n == 0 {
		return 0
	}
	return t.genCPU / time.Duration(t.n)
}

// roundRatio is the median, over the rounds, of t's throughput over
// base's in the same round: servers run one after the other in each round,
// so a burst of outside load falls on one round's pair rather than on
// one server.
func (t *tally) roundRatio(base *tally) float64 {
	var rs []float64
	for k := range min(len(t.rounds), len(base.rounds)) {
		if base.rounds[k] > 0 {
			rs = append(rs, t.rounds[k]/base.rounds[k])
		}
	}
	if len(rs) == 0 {
		return 0
	}
	slices.Sort(rs)
	if len(rs)%2 == 1 {
		return rs[len(rs)/2]
	}
	return (rs[len(rs)/2-1] + rs[len(rs)/2]) / 2
}

func (t *tally) rps() float64 {
	if t.elapsed <= 0 {
		return 0
	}
	return float64(t.n) / t.elapsed.Seconds()
}

func (t *tally) pct(p float64) time.Duration { return percentile(t.lat, p) }

// run sends the load to base with client c and adds what it saw to t.
func (l load) run(c *http.Client, base string, t *tally) {
	var next atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(l.dur)
	for range l.conns {
		wg.Go(func() {
			var extra http.Header
			if l.conversation != nil {
				extra = l.conversation()
			}
			lat := make([]time.Duration, 0, 4096)
			errs, alts := 0, 0
			var firstErr error
			var buf bytes.Buffer
			var masked []byte
			altStatus, altSeen := 0, []byte(nil) // the last answer alt accepted
			for mine := 0; time.Now().Before(deadline); mine++ {
				n := int(next.Add(1)) - 1
				if n >= l.max {
					break
				}
				if l.conversation != nil {
					n = mine
				}
				t0 := time.Now()
				resp, err := post(c, base, l.body(n), extra)
				if err == nil {
					buf.Reset()
					_, err = buf.ReadFrom(resp.Body)
					resp.Body.Close()
					if err == nil {
						got := buf.Bytes()
						if l.mask != nil {
							masked = l.mask(masked[:0], got)
							got = masked
						}
						switch want := l.want(n); {
						case resp.StatusCode == http.StatusOK && bytes.Equal(got, want):
						case l.alt != nil && resp.StatusCode == altStatus && bytes.Equal(got, altSeen):
							alts++
						case l.alt != nil && l.alt(resp.StatusCode, got) == nil:
							altStatus, altSeen = resp.StatusCode, append(altSeen[:0], got...)
							alts++
						default:
							err = check(resp.StatusCode, got, want)
						}
					}
				}
				if err != nil {
					errs++
					if firstErr == nil {
						firstErr = err
					}
					continue
				}
				lat = append(lat, time.Since(t0))
			}
			mu.Lock()
			t.lat = append(t.lat, lat...)
			t.errs += errs
			t.alt += alts
			if t.err == nil {
				t.err = firstErr
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	elapsed := time.Since(start)
	t.rounds = append(t.rounds, float64(len(t.lat)-t.n)/elapsed.Seconds())
	t.elapsed += elapsed
	t.n = len(t.lat)
}

// check says how an answer differs from the one expected, nil when it is
// the very bytes with status 200.
func check(status int, got, want []byte) error {
	if status == http.StatusOK && bytes.Equal(got, want) {
		return nil
	}
	at := 0
	for at < min(len(got), len(want)) && got[at] == want[at] {
		at++
	}
	return fmt.Errorf("status %d, %d bytes, want 200 and the %d expected bytes; they differ from byte %d: got %.80q, want %.80q",
		status, len(got), len(want), at, got[at:], want[at:])
}

// openAI429 is alt for a server injecting 429s: nil when the answer is
// status 429 with a body in OpenAI's error shape and no other field:
// {"error": {"message", "type", "param", "code"}} with a message and a type.
func openAI429(status int, got []byte) error {
	if status != http.StatusTooManyRequests {
		return fmt.Errorf("status %d, want 429", status)
	}
	var e struct {
		Error *struct {
			Message *string         `json:"message"`
			Type    *string         `json:"type"`
			Param   json.RawMessage `json:"param"`
			Code    json.RawMessage `json:"code"`
		} `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(got))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return fmt.Errorf("429 body: %w", err)
	}
	if dec.More() {
		return fmt.Errorf("429 body %.120q: data after the error object", got)
	}
	if e.Error == nil || e.Error.Message == nil || *e.Error.Message == "" || e.Error.Type == nil || *e.Error.Type == "" {
		return fmt.Errorf("429 body %.120q: want an OpenAI error with a message and a type", got)
	}
	return nil
}

// percentile of unsorted samples (sorted in place), nearest rank.
func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	if !slices.IsSorted(d) {
		slices.Sort(d)
	}
	i := int(p*float64(len(d))+0.5) - 1
	return d[min(max(i, 0), len(d)-1)]
}

// ms is a duration in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
