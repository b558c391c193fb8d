package main

import (
	"flag"
	"strings"

	"github.com/llmproxy/llmproxy/faults"
	"github.com/llmproxy/llmproxy/proxy"
)

// faultFlags are the fault flags of replay, auto and mock (see
// docs/faults.md).
type faultFlags struct {
	specs       faultList
	seed        uint64
	allowHeader bool
}

// faultList is --fault: repeatable, each value one fault (whose options
// are separated by commas, so its environment variable holds one fault).
type faultList []string

func (l *faultList) String() string { return strings.Join(*l, " ") }
func (l *faultList) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// register defines the fault flags on fs.
func (f *faultFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.specs, "fault", "inject a `fault` into served answers: an error status (429, 500, 503, 529…), timeout, cut, stall, malformed, slow or reset, "+
		"with @options: rate=0.1, request=N, event=K, retry-after=2s, after=5s, for=10s, ttfb=2s, per-event=50ms, consume (repeatable; docs/faults.md)")
	fs.Uint64Var(&f.seed, "fault-seed", 0, "`seed` that picks the requests a --fault with a rate falls on (the same seed faults the same requests)")
	fs.BoolVar(&f.allowHeader, "allow-header-faults", false, "let a request ask for a fault with the X-Llmproxy-Fault header (refused with 400 without it)")
}

// apply parses the faults into cfg; from names where --fault came from.
func (f *faultFlags) apply(cfg *proxy.Config, from string) error {
	fs, err := faults.ParseAll(f.specs)
	if err != nil {
		return usagef("%s: %v", from, err)
	}
	cfg.Faults = faults.Plan{Seed: f.seed, Faults: fs}
	cfg.AllowHeaderFaults = f.allowHeader
	return nil
}
