package tally

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/llmproxy/llmproxy/wire"
)

// ErrPrices means a prices file that cannot be used; the error names the
// file, and each problem's line and path.
var ErrPrices = errors.New("bad prices file")

// maxPricesFile bounds the prices file read: a table of models is small.
const maxPricesFile = 1 << 20

// Price is what a model's tokens cost, per million tokens, in the currency
// the user keeps the table in.
type Price struct {
	// Input and Output are the prices of prompt and generated tokens.
	Input, Output float64
	// Cached is the price of prompt tokens read from the provider's cache,
	// and Reasoning of reasoning tokens; nil where the table gives none,
	// and then they cost as Input and Output.
	Cached, Reasoning *float64
}

// Cost is what usage costs at p: uncached input at Input, cached input at
// Cached, output other than reasoning at Output, reasoning at Reasoning.
func (p *Price) Cost(u wire.Usage) float64 {
	cached, reasoning := p.Input, p.Output
	if p.Cached != nil {
		cached = *p.Cached
	}
	if p.Reasoning != nil {
		reasoning = *p.Reasoning
	}
	c := min(u.Cached, u.Input)
	r := min(u.Reasoning, u.Output)
	return (float64(u.Input-c)*p.Input + float64(c)*cached + float64(u.Output-r)*p.Output + float64(r)*reasoning) / 1e6
}

// Prices is a prices table: the price of each model by name. None is built
// in (prices change); the user keeps one (see LoadPrices).
type Prices map[string]Price

// For returns the price of a model: its own entry, else the longest entry
// that the model's name continues with "-" (an entry "gpt-4o-mini" prices
// the dated snapshot "gpt-4o-mini-2024-07-18"); nil when there is none.
func (ps Prices) For(model string) *Price {
	if p, ok := ps[model]; ok {
		return &p
	}
	best := ""
	for name := range ps {
		if len(name) > len(best) && strings.HasPrefix(model, name+"-") {
			best = name
		}
	}
	if best == "" {
		return nil
	}
	p := ps[best]
	return &p
}

// LoadPrices reads a prices file, JSON or YAML: a mapping from model name
// to its prices per million tokens, input and output required, cached and
// reasoning optional:
//
//	gpt-4o-mini: {input: 0.15, output: 0.60, cached: 0.075}
//	claude-sonnet-4-6: {input: 3, output: 15, cached: 0.30}
//
// Every problem (a price that is not a number, negative or missing, a key
// it does not know, a model named twice) is reported at once, each as
// FILE:LINE: MODEL.FIELD: message, in an error wrapping ErrPrices.
func LoadPrices(path string) (Prices, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--prices: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxPricesFile+1))
	if err != nil {
		return nil, fmt.Errorf("--prices %s: %w", path, err)
	}
	if len(data) > maxPricesFile {
		return nil, fmt.Errorf("%w: %s: larger than %d bytes", ErrPrices, path, maxPricesFile)
	}
	return parsePrices(path, data)
}

// parsePrices reads a prices table; path names it in errors.
func parsePrices(path string, data []byte) (Prices, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrPrices, path, err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, fmt.Errorf("%w: %s: empty: want a mapping from model name to prices", ErrPrices, path)
	}
	root := doc.Content[0]
	var problems []string
	bad := func(n *yaml.Node, where, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s:%d: %s%s", path, n.Line, where, fmt.Sprintf(format, args...)))
	}
	if root.Kind != yaml.MappingNode {
		bad(root, "", "want a mapping from model name to prices, got %s", kindName(root))
		return nil, pricesError(problems)
	}
	ps := Prices{}
	for k := 0; k+1 < len(root.Content); k += 2 {
		name, v := root.Content[k], root.Content[k+1]
		if _, dup := ps[name.Value]; dup {
			bad(name, name.Value+": ", "model named twice")
			continue
		}
		if p, ok := parsePrice(name.Value, v, bad); ok {
			ps[name.Value] = p
		}
	}
	if len(problems) > 0 {
		return nil, pricesError(problems)
	}
	return ps, nil
}

// parsePrice reads one model's prices, reporting problems to bad.
func parsePrice(model string, v *yaml.Node, bad func(n *yaml.Node, where, format string, args ...any)) (Price, bool) {
	if v.Kind != yaml.MappingNode {
		bad(v, model+": ", "want a mapping of input, output, cached, reasoning, got %s", kindName(v))
		return Price{}, false
	}
	var p Price
	seen := map[string]bool{}
	ok := true
	for k := 0; k+1 < len(v.Content); k += 2 {
		key, val := v.Content[k], v.Content[k+1]
		where := model + "." + key.Value + ": "
		x, err := priceValue(val)
		if err != nil {
			bad(val, where, "%v", err)
			ok = false
			continue
		}
		switch key.Value {
		case "input":
			p.Input = x
		case "output":
			p.Output = x
		case "cached":
			p.Cached = &x
		case "reasoning":
			p.Reasoning = &x
		default:
			bad(key, where, "unknown key (want input, output, cached or reasoning, per million tokens)")
			ok = false
			continue
		}
		seen[key.Value] = true
	}
	for _, need := range []string{"input", "output"} {
		if !seen[need] && ok {
			bad(v, model+": ", "no %s price", need)
			ok = false
		}
	}
	return p, ok
}

// priceValue reads a price: a finite number, zero or more.
func priceValue(n *yaml.Node) (float64, error) {
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") {
		return 0, fmt.Errorf("%s is not a number", shown(n))
	}
	x, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
	switch {
	case err != nil || math.IsNaN(x) || math.IsInf(x, 0):
		return 0, fmt.Errorf("%s is not a finite number", shown(n))
	case x < 0:
		return 0, fmt.Errorf("%s is negative", n.Value)
	}
	return x, nil
}

// shown is a node as an error quotes it.
func shown(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return strconv.Quote(n.Value)
	}
	return kindName(n)
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	return "a " + strings.TrimPrefix(n.ShortTag(), "!!")
}

// pricesError is every problem found, one a line.
func pricesError(problems []string) error {
	return fmt.Errorf("%w:\n%s", ErrPrices, strings.Join(problems, "\n"))
}
