package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// benchResult is one line of `go test -bench` output: a benchmark run
// once (one -count) with its metrics by unit ("ns/op", "B/op", and any
// the benchmark reports itself, such as "cpu-ms/op").
type benchResult struct {
	name    string // without the -GOMAXPROCS suffix
	n       int
	metrics map[string]float64
}

// goBench runs the benchmarks of pkg (a package pattern, relative to the
// module in dir) that match pattern, no tests, and returns a result per
// benchmark and -count. args go to go test after the package.
func goBench(dir, pkg, pattern string, args ...string) ([]benchResult, error) {
	cmd := exec.Command("go", append([]string{"test", "-run", "^$", "-bench", pattern, pkg}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("go test -bench %s %s in %s: %w\n%s", pattern, pkg, dir, err, tailOf(out, 2000))
	}
	rs := parseBench(out)
	if len(rs) == 0 {
		return nil, fmt.Errorf("go test -bench %s %s in %s: no benchmark matched\n%s", pattern, pkg, dir, tailOf(out, 2000))
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

// benchMedian is the median over the results named name of the metric
// unit, and how many there were; 0, 0 when none has it.
func benchMedian(rs []benchResult, name, unit string) (float64, int) {
	var vs []float64
	for _, r := range rs {
		if v, ok := r.metrics[unit]; ok && r.name == name {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return 0, 0
	}
	slices.Sort(vs)
	if len(vs)%2 == 1 {
		return vs[len(vs)/2], len(vs)
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2, len(vs)
}

func tailOf(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
