package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// benchResult is one line of `go test -bench` output: a benchmark run
// once in one round, with its metrics by unit ("ns/op", "B/op", and any the
// benchmark reports itself, such as "cpu-ms/op").
type benchResult struct {
	name    string // without the -GOMAXPROCS suffix
	round   int
	n       int
	metrics map[string]float64
}

// goBench compiles the tests of pkg (relative to the module in dir) into
// tmp once, then runs the benchmarks matching pattern, no tests, in rounds
// runs of the binary one after the other, each with -test.benchtime
// benchtime: the benchmarks of one round run close together in time, so
// that a ratio of two is taken within a round (benchRatio).
func goBench(dir, pkg, pattern, benchtime string, rounds int, tmp string) ([]benchResult, error) {
	bin := filepath.Join(tmp, strings.NewReplacer("/", "_", ".", "_").Replace(pkg)+".test")
	build := exec.Command("go", "test", "-c", "-o", bin, pkg)
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go test -c %s in %s: %w\n%s", pkg, dir, err, tailOf(out, 2000))
	}
	var rs []benchResult
	for round := range rounds {
		cmd := exec.Command(bin, "-test.run", "^$", "-test.bench", pattern, "-test.benchtime", benchtime)
		cmd.Dir = filepath.Join(dir, pkg) // where go test runs it
		out, err := cmd.CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("%s -test.bench %s in %s: %w\n%s", pkg, pattern, dir, err, tailOf(out, 2000))
		}
		got := parseBench(out)
		if len(got) == 0 {
			return nil, fmt.Errorf("%s -test.bench %s in %s: no benchmark matched\n%s", pkg, pattern, dir, tailOf(out, 2000))
		}
		for i := range got {
			got[i].round = round
		}
		rs = append(rs, got...)
	}
	return rs, nil
}

var procSuffix = regexp.MustCompile(`-\d+$`)

// parseBench reads the result lines of `go test -bench` output.
func parseBench(out []byte) []benchResult {
	var rs []benchResult
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
			continue
		}
		n, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		r := benchResult{name: procSuffix.ReplaceAllString(f[0], ""), n: n, metrics: map[string]float64{}}
		for k := 2; k+1 < len(f); k += 2 {
			if v, err := strconv.ParseFloat(f[k], 64); err == nil {
				r.metrics[f[k+1]] = v
			}
		}
		rs = append(rs, r)
	}
	return rs
}

// benchRatio is the median over the rounds of num's metric unit over
// den's in the same round, and how many rounds had both.
func benchRatio(rs []benchResult, num, den, unit string) (float64, int) {
	var vs []float64
	for _, a := range rs {
		for _, b := range rs {
			if a.name == num && b.name == den && a.round == b.round && b.metrics[unit] > 0 {
				if v, ok := a.metrics[unit]; ok {
					vs = append(vs, v/b.metrics[unit])
				}
			}
		}
	}
	return medianOf(vs), len(vs)
}

// benchMedian is the median over the results named name of the metric
// unit, and how many there were; 0, 0 when none has it.
func benchMedian(rs []benchResult, name, unit string) (float64, int) {
	var vs []float64
	for _, r := range rs {
		if v, ok := r.metrics[unit]; ok && r.name == name {
			vs = append(vs, v)
		}
	}
	return medianOf(vs), len(vs)
}

// medianOf is the median of vs (the mean of the middle two for an even
// count); 0 for none.
func medianOf(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	vs = slices.Clone(vs)
	slices.Sort(vs)
	if len(vs)%2 == 1 {
		return vs[len(vs)/2]
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
}

func tailOf(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
