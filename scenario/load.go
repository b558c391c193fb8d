package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v4"

	"github.com/llmproxy/llmproxy/presets"
	"github.com/llmproxy/llmproxy/wire"
)

const (
	// MaxFileSize bounds a scenario file.
	MaxFileSize = 16 << 20
	// maxNodes bounds the YAML nodes a file expands to (aliases included),
	// so that an alias bomb is an error rather than a hang.
	maxNodes = 1 << 20
	// maxDepth bounds the nesting of a YAML value.
	maxDepth = 200
)

// Load reads a scenario file, YAML or JSON, and checks it. An invalid file is
// an ErrorList whose every Error has the file and the line.
func Load(path string) (*Scenario, error) {
	s, _, err := load(path)
	return s, err
}

// LoadAll loads several scenario files as one server serves them: each is
// checked, and their names must differ. The error lists every problem of
// every file.
func LoadAll(paths ...string) ([]*Scenario, error) {
	var all []*Scenario
	var errs ErrorList
	first := map[string]string{}
	for _, path := range paths {
		s, d, err := load(path)
		var list ErrorList
		if errors.As(err, &list) {
			errs = append(errs, list...)
			continue
		}
		if prev, dup := first[s.Name]; dup {
			errs = append(errs, &Error{File: path, Line: d.line("/name"), Where: "name",
				Message: fmt.Sprintf("scenario %q is also %s's; name one of them", s.Name, prev)})
			continue
		}
		first[s.Name] = path
		all = append(all, s)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return all, nil
}

func load(path string) (*Scenario, *decoder, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, ErrorList{{File: path, Message: ioMessage(err)}}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, nil, ErrorList{{File: path, Message: ioMessage(err)}}
	}
	return parse(path, data)
}

// ioMessage is an I/O error without the path it names (the Error has it).
func ioMessage(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// Parse reads a scenario from data, YAML or JSON (JSON is read as the YAML
// it also is), and checks it as Load does. file names it in errors, and its
// base name up to the first dot is the scenario's default name.
func Parse(file string, data []byte) (*Scenario, error) {
	s, _, err := parse(file, data)
	return s, err
}

func parse(file string, data []byte) (*Scenario, *decoder, error) {
	d := &decoder{file: file}
	s := d.parse(data)
	if _, errs := compile(s); errs != nil {
		d.errs = append(d.errs, d.independent(errs)...)
	}
	if len(d.errs) > 0 {
		for _, e := range d.errs {
			e.File = file
			if e.Line == 0 {
				e.Line = d.line(e.ptr)
			}
		}
		return nil, d, d.errs.sorted()
	}
	return s, d, nil
}

// independent returns the problems compile found that do not follow from
// one the decoder found: none inside an element the decoder could not read,
// no unreachable step when a step or its then could not be read, and no
// unused fixture when a step's answer or conditions could not be read.
func (d *decoder) independent(found ErrorList) ErrorList {
	var out ErrorList
	for _, e := range found {
		if !slices.ContainsFunc(d.errs, func(de *Error) bool { return d.explains(de, e) }) {
			out = append(out, e)
		}
	}
	return out
}

// explains reports whether decode problem de can be the cause of e.
func (d *decoder) explains(de, e *Error) bool {
	if e.ptr == de.ptr || strings.HasPrefix(e.ptr, de.ptr+"/") || de.ptr == "" {
		return true
	}
	step := stepPointer.FindStringSubmatch(de.ptr)
	switch e.rule {
	case ruleUnreachable:
		return de.ptr == "/steps" || step != nil && (step[2] == "" || strings.HasPrefix(step[2], "/then") || step[2] == "/complete")
	case ruleUnused:
		return de.ptr == "/steps" || de.ptr == "/fixtures" || step != nil && (step[2] == "" || step[2] == "/when" || step[2] == "/respond" ||
			strings.HasPrefix(step[2], "/when/tool-result") || strings.HasPrefix(step[2], "/respond/tool-calls"))
	}
	return false
}

// stepPointer splits a pointer into a step and the rest.
var stepPointer = regexp.MustCompile(`^(/steps/[0-9]+)(.*)$`)

// decoder turns a YAML document into a Scenario, noting the line of every
// element and every problem.
type decoder struct {
	file  string
	root  *yaml.Node // the document's root, to find the line of a pointer
	errs  ErrorList
	nodes int
}

// errorAt records a problem at a node's line.
func (d *decoder) errorAt(n *yaml.Node, l loc, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	d.errs = append(d.errs, &Error{Line: line, Where: l.where(), Message: fmt.Sprintf(format, args...), ptr: l.ptr})
}

// line finds the line of a JSON Pointer in the document (the line of a
// mapping's key, or of a list's element), or of the nearest element on its
// way that the document has.
func (d *decoder) line(ptr string) int {
	if d.root == nil {
		return 1
	}
	n, line := d.root, d.root.Line
	segs := strings.Split(ptr, "/")[1:]
	for steps := 0; len(segs) > 0 && n != nil && steps < 4*maxDepth; steps++ {
		seg := strings.ReplaceAll(strings.ReplaceAll(segs[0], "~1", "/"), "~0", "~")
		for n != nil && n.Kind == yaml.AliasNode {
			n = n.Alias
		}
		if n == nil {
			break
		}
		switch n.Kind {
		case yaml.MappingNode:
			k := -1
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == seg {
					k = i
					break
				}
			}
			if k < 0 {
				return line
			}
			n, line = n.Content[k+1], n.Content[k].Line
		case yaml.SequenceNode:
			i, err := strconv.Atoi(seg)
			switch {
			case err == nil && i >= 0 && i < len(n.Content):
				n, line = n.Content[i], n.Content[i].Line
			case len(n.Content) == 1:
				// A list of one stands for its element (a tool-result given
				// as a list of one): the segment applies to the element.
				n = n.Content[0]
				continue
			default:
				return line
			}
		default:
			return line
		}
		segs = segs[1:]
	}
	return line
}

func (d *decoder) parse(data []byte) *Scenario {
	s := &Scenario{Name: defaultName(d.file)}
	if len(data) > MaxFileSize {
		d.errorAt(nil, loc{}, "the file is larger than %d bytes", MaxFileSize)
		return s
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			d.errorAt(nil, loc{}, "the file is empty")
		} else {
			d.syntaxError(err)
		}
		return s
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		d.errorAt(&more, loc{}, "a scenario file holds one document")
		return s
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	d.root = root
	d.scenario(root, s)
	return s
}

// syntaxError records a YAML syntax error at its line.
func (d *decoder) syntaxError(err error) {
	var le *yaml.LoadError
	if errors.As(err, &le) {
		d.errs = append(d.errs, &Error{Line: le.Mark.Line, Message: "not YAML or JSON: " + le.Message})
		return
	}
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if num, tail, ok := strings.Cut(rest, ": "); ok {
			if n, err := strconv.Atoi(num); err == nil {
				line, msg = n, tail
			}
		}
	}
	d.errs = append(d.errs, &Error{Line: line, Message: "not YAML or JSON: " + msg})
}

// defaultName is a file's base name up to its first dot.
func defaultName(file string) string {
	base := filepath.Base(file)
	if i := strings.IndexByte(base, '.'); i >= 0 {
		base = base[:i]
	}
	if base == "" || base == "/" {
		return "scenario"
	}
	return base
}

// resolve follows aliases and counts nodes, so that a file cannot expand
// without bound. It returns nil past the bound.
func (d *decoder) resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	d.nodes++
	if d.nodes == maxNodes+1 {
		d.errorAt(n, loc{}, "the file expands to more than %d YAML nodes (aliases included)", maxNodes)
	}
	if d.nodes > maxNodes {
		return nil
	}
	return n
}

// entry is one key of a mapping.
type entry struct {
	key   *yaml.Node
	value *yaml.Node
}

// mapping reads a mapping whose keys are among allowed, reporting unknown
// and repeated keys. It returns nil (after reporting) when n is not a
// mapping.
func (d *decoder) mapping(n *yaml.Node, l loc, what string, allowed ...string) map[string]entry {
	n = d.resolve(n)
	if n == nil {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		d.errorAt(n, l, "%s is a mapping, not %s", what, describe(n))
		return nil
	}
	out := make(map[string]entry, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := d.resolve(n.Content[i]), n.Content[i+1]
		if k == nil {
			return out
		}
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			d.errorAt(k, l, "a key of %s is a string, not %s", what, describe(k))
			continue
		}
		kl := l.key(k.Value)
		if _, dup := out[k.Value]; dup {
			d.errorAt(k, kl, "the key %q appears twice", k.Value)
			continue
		}
		if allowed != nil && !slices.Contains(allowed, k.Value) {
			at := kl
			at.tail = l.tail // named by the mapping it is in
			if near := nearest(k.Value, allowed); near != "" {
				d.errorAt(k, at, "unknown key %q (did you mean %q?)", k.Value, near)
			} else {
				d.errorAt(k, at, "unknown key %q (%s has: %s)", k.Value, what, strings.Join(allowed, ", "))
			}
			continue
		}
		out[k.Value] = entry{k, v}
	}
	return out
}

// nearest returns the allowed key within two edits of key, if one is.
func nearest(key string, allowed []string) string {
	best, bestDist := "", 3
	for _, a := range allowed {
		if dist := editDistance(key, a, bestDist); dist < bestDist {
			best, bestDist = a, dist
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, or limit when it is
// at least limit.
func editDistance(a, b string, limit int) int {
	if len(a) > 64 || len(b) > 64 {
		return limit
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit)
}

// describe names a node's kind for an error.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return fmt.Sprintf("the string %q", shorten(n.Value, 40))
		case "!!null":
			return "null"
		}
		return shorten(n.Value, 40)
	}
	return "an empty document"
}

func (d *decoder) str(e entry, l loc) (string, bool) {
	n := d.resolve(e.value)
	if n == nil {
		return "", false
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		hint := ""
		if n.Kind == yaml.ScalarNode {
			hint = " (quote it)"
		}
		d.errorAt(n, l, "a string, not %s%s", describe(n), hint)
		return "", false
	}
	return n.Value, true
}

func (d *decoder) boolean(e entry, l loc) bool {
	n := d.resolve(e.value)
	if n == nil {
		return false
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		d.errorAt(n, l, "true or false, not %s", describe(n))
		return false
	}
	return n.Value == "true"
}

// integer reads an integer of at least min.
func (d *decoder) integer(e entry, l loc, min int) (int, bool) {
	n := d.resolve(e.value)
	if n == nil {
		return 0, false
	}
	var v int64
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&v) != nil || v > math.MaxInt32 {
		d.errorAt(n, l, "a whole number up to %d, not %s", math.MaxInt32, describe(n))
		return 0, false
	}
	if v < int64(min) {
		d.errorAt(n, l, "must be >= %d, got %d", min, v)
		return 0, false
	}
	return int(v), true
}

// durationPattern is a Go duration without a sign, as the schema says it.
var durationPattern = regexp.MustCompile(`^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`)

func (d *decoder) duration(e entry, l loc) time.Duration {
	s, ok := d.str(e, l)
	if !ok {
		return 0
	}
	v, err := time.ParseDuration(s)
	if err != nil || !durationPattern.MatchString(s) {
		d.errorAt(e.value, l, "%q is not a duration such as 250ms, 2s or 1m30s", s)
		return 0
	}
	return v
}

// value reads any YAML value as canonical JSON (see presets.Canonical).
func (d *decoder) value(e entry, l loc) json.RawMessage {
	w := jsonWriter{d: d, base: l}
	if !w.write(e.value, 0) {
		return nil
	}
	canon, err := presets.Canonical(w.b.Bytes())
	if err != nil {
		d.errorAt(e.value, l, "not a JSON value: %v", err)
		return nil
	}
	return canon
}

// jsonWriter writes a YAML value as JSON. It keeps the path to the element
// it is at, and makes it a loc only for an error.
type jsonWriter struct {
	d    *decoder
	base loc
	b    bytes.Buffer
	path []any // keys (string) and indexes (int) below base
}

func (w *jsonWriter) at() loc {
	l := w.base
	for _, p := range w.path {
		if k, ok := p.(string); ok {
			l = l.key(k)
		} else {
			l = l.index(p.(int))
		}
	}
	return l
}

func (w *jsonWriter) write(n *yaml.Node, depth int) bool {
	n = w.d.resolve(n)
	if n == nil {
		return false
	}
	if depth > maxDepth {
		w.d.errorAt(n, w.at(), "nested deeper than %d", maxDepth)
		return false
	}
	switch n.Kind {
	case yaml.MappingNode:
		w.b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := w.d.resolve(n.Content[i])
			if k == nil || k.Kind != yaml.ScalarNode {
				w.d.errorAt(n, w.at(), "a JSON object's keys are strings")
				return false
			}
			if i > 0 {
				w.b.WriteByte(',')
			}
			key, _ := json.Marshal(k.Value)
			w.b.Write(key)
			w.b.WriteByte(':')
			w.path = append(w.path, k.Value)
			ok := w.write(n.Content[i+1], depth+1)
			w.path = w.path[:len(w.path)-1]
			if !ok {
				return false
			}
		}
		w.b.WriteByte('}')
	case yaml.SequenceNode:
		w.b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				w.b.WriteByte(',')
			}
			w.path = append(w.path, i)
			ok := w.write(c, depth+1)
			w.path = w.path[:len(w.path)-1]
			if !ok {
				return false
			}
		}
		w.b.WriteByte(']')
	case yaml.ScalarNode:
		return w.scalar(n)
	default:
		w.d.errorAt(n, w.at(), "not a JSON value")
		return false
	}
	return true
}

func (w *jsonWriter) scalar(n *yaml.Node) bool {
	switch n.ShortTag() {
	case "!!null":
		w.b.WriteString("null")
	case "!!bool":
		w.b.WriteString(n.Value)
	case "!!int", "!!float":
		if json.Valid([]byte(n.Value)) {
			w.b.WriteString(n.Value) // a JSON number: kept as written
			return true
		}
		var v any
		out, err := []byte(nil), n.Decode(&v)
		if err == nil {
			out, err = json.Marshal(v)
		}
		if err != nil {
			w.d.errorAt(n, w.at(), "%s is not a number JSON can hold", n.Value)
			return false
		}
		w.b.Write(out)
	default:
		out, _ := json.Marshal(n.Value)
		w.b.Write(out)
	}
	return true
}

func (d *decoder) scenario(root *yaml.Node, s *Scenario) {
	top := loc{}
	m := d.mapping(root, top, "a scenario", "version", "name", "on-exhausted", "max-steps", "model", "fixtures", "steps")
	if m == nil {
		return
	}
	if e, ok := m["version"]; ok {
		if v, ok := d.integer(e, top.key("version"), 0); ok && v != 1 {
			d.errorAt(e.value, top.key("version"), "%d is not a known version; this llmproxy reads version 1", v)
		}
	}
	if e, ok := m["name"]; ok {
		s.Name, _ = d.str(e, top.key("name"))
	}
	if e, ok := m["on-exhausted"]; ok {
		v, _ := d.str(e, top.key("on-exhausted"))
		s.OnExhausted = Exhausted(v)
	}
	if e, ok := m["max-steps"]; ok {
		s.MaxSteps, _ = d.integer(e, top.key("max-steps"), 1)
	}
	if e, ok := m["model"]; ok {
		s.Model, _ = d.str(e, top.key("model"))
	}
	if e, ok := m["fixtures"]; ok {
		d.fixtures(e, s)
	}
	e, ok := m["steps"]
	if !ok {
		d.errorAt(root, top, "a scenario needs steps")
		return
	}
	d.steps(e, s)
}

func (d *decoder) fixtures(e entry, s *Scenario) {
	n := d.resolve(e.value)
	if n == nil {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.errorAt(n, loc{}.key("fixtures"), "fixtures is a mapping of names to fixtures, not %s", describe(n))
		return
	}
	names := d.mapping(n, loc{}.key("fixtures"), "fixtures")
	for i := 0; i+1 < len(n.Content); i += 2 {
		name := n.Content[i].Value
		fe, ok := names[name]
		if !ok || fe.key != n.Content[i] {
			continue // reported by mapping
		}
		l := fixtureLoc(name)
		fm := d.mapping(fe.value, l, "a fixture", "preset", "id", "arguments", "result", "error", "delay")
		if fm == nil {
			continue
		}
		f := Fixture{Name: name}
		if fe, ok := fm["preset"]; ok {
			f.Preset, _ = d.str(fe, l.key("preset"))
		}
		if fe, ok := fm["id"]; ok {
			f.Call.ID, _ = d.str(fe, l.key("id"))
		}
		f.Call.Name, f.Result.Name, f.Result.CallID = f.Preset, f.Preset, f.Call.ID
		if fe, ok := fm["arguments"]; ok {
			f.Call.Arguments = d.value(fe, l.key("arguments"))
		} else {
			f.Call.Arguments = json.RawMessage("{}")
		}
		res, hasResult := fm["result"]
		fail, hasError := fm["error"]
		switch {
		case hasResult && hasError:
			d.errorAt(fail.key, l, "a fixture has a result or an error, not both")
		case hasResult:
			if f.Result.Content = d.value(res, l.key("result")); f.Result.Content == nil {
				f.Result.Content = json.RawMessage("null")
			}
		case hasError:
			if v := d.value(fail, l.key("error")); v != nil {
				f.Result.Content = append(append(json.RawMessage(`{"error":`), v...), '}')
				f.Result.IsError = true
			} else {
				f.Result.Content, f.Result.IsError = json.RawMessage("null"), true
			}
		}
		if fe, ok := fm["delay"]; ok {
			f.Delay = d.duration(fe, l.key("delay"))
		}
		s.Fixtures = append(s.Fixtures, f)
	}
}

func (d *decoder) steps(e entry, s *Scenario) {
	l := loc{}.key("steps")
	n := d.resolve(e.value)
	if n == nil {
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.errorAt(n, l, "steps is a list, not %s", describe(n))
		return
	}
	for i, sn := range n.Content {
		s.Steps = append(s.Steps, d.step(sn, i))
	}
}

func (d *decoder) step(n *yaml.Node, i int) Step {
	var st Step
	// The id names the step in every other error, so it is read first.
	if r := d.resolve(n); r != nil && r.Kind == yaml.MappingNode {
		for k := 0; k+1 < len(r.Content); k += 2 {
			if r.Content[k].Value == "id" && r.Content[k+1].ShortTag() == "!!str" {
				st.ID = r.Content[k+1].Value
			}
		}
	}
	id := st.ID
	if id == "" {
		id = "step-" + strconv.Itoa(i+1)
	}
	l := stepLoc(i, id)
	m := d.mapping(n, l, "a step", "id", "when", "respond", "then", "complete")
	if m == nil {
		return st
	}
	if e, ok := m["id"]; ok {
		d.str(e, l.key("id"))
	}
	if e, ok := m["when"]; ok {
		st.When = d.when(e, l.key("when"))
	}
	if e, ok := m["respond"]; ok {
		st.Respond = d.respond(e, l.key("respond"))
	} else {
		d.errorAt(n, l, "a step needs respond")
	}
	if e, ok := m["then"]; ok {
		st.Then = d.then(e, l.key("then"))
	}
	if e, ok := m["complete"]; ok {
		st.Complete = d.boolean(e, l.key("complete"))
	}
	return st
}

func (d *decoder) then(e entry, l loc) []string {
	n := d.resolve(e.value)
	if n == nil {
		return nil
	}
	if n.Kind == yaml.ScalarNode {
		if s, ok := d.str(e, l); ok {
			return []string{s}
		}
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.errorAt(n, l, "then is a step id or a list of them, not %s", describe(n))
		return nil
	}
	out := []string{}
	for k, c := range n.Content {
		cl := l.index(k)
		if s, ok := d.str(entry{value: c}, cl); ok {
			out = append(out, s)
		}
	}
	return out
}

func (d *decoder) when(e entry, l loc) Conditions {
	var w Conditions
	m := d.mapping(e.value, l, "when", "latest-user", "system", "tool-result", "model", "api", "tools-offered", "json")
	if e, ok := m["latest-user"]; ok {
		w.LatestUser = d.text(e, l.key("latest-user"))
	}
	if e, ok := m["system"]; ok {
		w.System = d.text(e, l.key("system"))
	}
	if e, ok := m["tool-result"]; ok {
		w.ToolResults = d.toolResults(e, l.key("tool-result"))
	}
	if e, ok := m["model"]; ok {
		w.Model, _ = d.str(e, l.key("model"))
	}
	if e, ok := m["api"]; ok {
		v, _ := d.str(e, l.key("api"))
		w.API = wire.Kind(v)
	}
	if e, ok := m["tools-offered"]; ok {
		w.ToolsOffered = d.strings(e, l.key("tools-offered"))
	}
	if e, ok := m["json"]; ok {
		w.JSON = d.jsonConds(e, l.key("json"))
	}
	return w
}

func (d *decoder) text(e entry, l loc) *TextCondition {
	m := d.mapping(e.value, l, "a text condition", "equals", "contains", "matches")
	if m == nil {
		return nil
	}
	if len(m) != 1 {
		if n := d.resolve(e.value); n != nil && (len(m) > 1 || len(n.Content) == 0) {
			d.errorAt(e.value, l, "a text condition has exactly one of equals, contains or matches")
		}
		return nil
	}
	for op, v := range m {
		s, ok := d.str(v, l.key(op))
		if !ok {
			return nil
		}
		return &TextCondition{Op: TextOp(op), Value: s}
	}
	return nil
}

func (d *decoder) toolResults(e entry, l loc) []ToolResultCondition {
	n := d.resolve(e.value)
	if n == nil {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		return []ToolResultCondition{d.toolResult(n, l)}
	}
	var out []ToolResultCondition
	for k, c := range n.Content {
		out = append(out, d.toolResult(c, l.index(k)))
	}
	return out
}

func (d *decoder) toolResult(n *yaml.Node, l loc) ToolResultCondition {
	var tr ToolResultCondition
	m := d.mapping(n, l, "a tool-result condition", "fixture", "name", "id", "arguments", "result")
	if e, ok := m["fixture"]; ok {
		tr.Fixture, _ = d.str(e, l.key("fixture"))
	}
	if e, ok := m["name"]; ok {
		tr.Name, _ = d.str(e, l.key("name"))
	}
	if e, ok := m["id"]; ok {
		tr.ID, _ = d.str(e, l.key("id"))
	}
	if e, ok := m["arguments"]; ok {
		tr.Arguments = d.value(e, l.key("arguments"))
	}
	if e, ok := m["result"]; ok {
		tr.Result = d.value(e, l.key("result"))
	}
	return tr
}

func (d *decoder) strings(e entry, l loc) []string {
	n := d.resolve(e.value)
	if n == nil {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.errorAt(n, l, "a list of names, not %s", describe(n))
		return nil
	}
	var out []string
	for k, c := range n.Content {
		if s, ok := d.str(entry{value: c}, l.index(k)); ok {
			out = append(out, s)
		}
	}
	return out
}

func (d *decoder) jsonConds(e entry, l loc) []JSONCondition {
	n := d.resolve(e.value)
	if n == nil {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.errorAt(n, l, "json is a list of {path, equals}, not %s", describe(n))
		return nil
	}
	var out []JSONCondition
	for k, c := range n.Content {
		cl := l.index(k)
		m := d.mapping(c, cl, "a json condition", "path", "equals")
		if m == nil {
			continue
		}
		var jc JSONCondition
		if e, ok := m["path"]; ok {
			jc.Path, _ = d.str(e, cl.key("path"))
		}
		if e, ok := m["equals"]; ok {
			jc.Equals = d.value(e, cl.key("equals"))
		} else {
			d.errorAt(c, cl, "a json condition needs equals")
			jc.Equals = json.RawMessage("null")
		}
		out = append(out, jc)
	}
	return out
}

func (d *decoder) respond(e entry, l loc) Answer {
	var a Answer
	m := d.mapping(e.value, l, "respond", "text", "reasoning", "tool-calls", "finish", "usage", "id", "created", "error", "delay", "stream", "cut-after")
	if m == nil {
		return a
	}
	if fail, ok := m["error"]; ok {
		if len(m) > 1 {
			var others []string
			for k := range m {
				if k != "error" {
					others = append(others, k)
				}
			}
			slices.Sort(others)
			d.errorAt(fail.key, l, "an error answer has nothing else in respond (here also: %s)", strings.Join(others, ", "))
		}
		a.Error = d.errorAnswer(fail, l.key("error"))
		return a
	}
	if e, ok := m["text"]; ok {
		a.Text, _ = d.str(e, l.key("text"))
	}
	if e, ok := m["reasoning"]; ok {
		a.Reasoning, _ = d.str(e, l.key("reasoning"))
	}
	if e, ok := m["tool-calls"]; ok {
		a.ToolCalls = d.calls(e, l.key("tool-calls"))
	}
	if e, ok := m["finish"]; ok {
		v, _ := d.str(e, l.key("finish"))
		a.Finish = wire.Finish(v)
	}
	if e, ok := m["usage"]; ok {
		a.Usage = d.usage(e, l.key("usage"))
	}
	if e, ok := m["id"]; ok {
		a.ID, _ = d.str(e, l.key("id"))
	}
	if e, ok := m["created"]; ok {
		if v, ok := d.integer(e, l.key("created"), 0); ok {
			a.Created = time.Unix(int64(v), 0).UTC()
		}
	}
	if e, ok := m["delay"]; ok {
		a.Delay = d.duration(e, l.key("delay"))
	}
	if e, ok := m["stream"]; ok {
		sl := l.key("stream")
		sm := d.mapping(e.value, sl, "stream", "chunk", "interval")
		if e, ok := sm["chunk"]; ok {
			a.Stream.Chunk, _ = d.integer(e, sl.key("chunk"), 1)
		}
		if e, ok := sm["interval"]; ok {
			a.Stream.Interval = d.duration(e, sl.key("interval"))
		}
	}
	if e, ok := m["cut-after"]; ok {
		a.CutAfter, _ = d.integer(e, l.key("cut-after"), 1)
	}
	return a
}

func (d *decoder) usage(e entry, l loc) *wire.Usage {
	m := d.mapping(e.value, l, "usage", "input", "output")
	if m == nil {
		return nil
	}
	var u wire.Usage
	for _, k := range []string{"input", "output"} {
		v, ok := m[k]
		if !ok {
			d.errorAt(e.value, l, "usage needs input and output")
			return nil
		}
		n, _ := d.integer(v, l.key(k), 0)
		if k == "input" {
			u.Input = n
		} else {
			u.Output = n
		}
	}
	return &u
}

func (d *decoder) errorAnswer(e entry, l loc) *ErrorAnswer {
	var ea ErrorAnswer
	m := d.mapping(e.value, l, "an error answer", "status", "type", "message", "retry-after")
	if e, ok := m["status"]; ok {
		ea.Status, _ = d.integer(e, l.key("status"), 0)
	}
	if e, ok := m["type"]; ok {
		ea.Type, _ = d.str(e, l.key("type"))
	}
	if e, ok := m["message"]; ok {
		ea.Message, _ = d.str(e, l.key("message"))
	}
	if e, ok := m["retry-after"]; ok {
		ea.RetryAfter = d.duration(e, l.key("retry-after"))
	}
	return &ea
}

func (d *decoder) calls(e entry, l loc) []CallAnswer {
	n := d.resolve(e.value)
	if n == nil {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.errorAt(n, l, "tool-calls is a list, not %s", describe(n))
		return nil
	}
	var out []CallAnswer
	for k, c := range n.Content {
		cl := l.index(k)
		m := d.mapping(c, cl, "a tool call", "fixture", "preset", "function", "id", "arguments")
		if m == nil {
			continue
		}
		var ca CallAnswer
		if e, ok := m["fixture"]; ok {
			ca.Fixture, _ = d.str(e, cl.key("fixture"))
		}
		if e, ok := m["preset"]; ok {
			ca.Preset, _ = d.str(e, cl.key("preset"))
		}
		if e, ok := m["function"]; ok {
			ca.Function, _ = d.str(e, cl.key("function"))
		}
		if e, ok := m["id"]; ok {
			ca.ID, _ = d.str(e, cl.key("id"))
		}
		if e, ok := m["arguments"]; ok {
			ca.Arguments = d.value(e, cl.key("arguments"))
		}
		out = append(out, ca)
	}
	return out
}
