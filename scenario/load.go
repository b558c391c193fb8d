package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v4"
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
// unused fixture when a step's answer or conditions could not be read. It
// takes time linear in the problems: the decoder's are indexed by pointer
// once, and each of compile's looks up its own pointer's ancestors.
func (d *decoder) independent(found ErrorList) ErrorList {
	if len(d.errs) == 0 {
		return found
	}
	at := make(map[string]bool, len(d.errs))
	var graph, uses bool // the decoder missed a link, or a use of a fixture
	for _, de := range d.errs {
		if de.ptr == "" {
			return nil
		}
		at[de.ptr] = true
		graph = graph || breaksGraph(de.ptr)
		uses = uses || hidesUses(de.ptr)
	}
	var out ErrorList
	for _, e := range found {
		switch {
		case within(at, e.ptr):
		case e.rule == ruleUnreachable && graph:
		case e.rule == ruleUnused && uses:
		default:
			out = append(out, e)
		}
	}
	return out
}

// within reports whether ptr or an element it is inside is in at.
func within(at map[string]bool, ptr string) bool {
	for p := ptr; p != ""; {
		if at[p] {
			return true
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return false
}

// breaksGraph reports whether a problem the decoder found at ptr may hide a
// link between steps: the steps, a step, its then or its complete unread.
func breaksGraph(ptr string) bool {
	_, rest, ok := splitStep(ptr)
	return ptr == "/steps" || ok && (rest == "" || strings.HasPrefix(rest, "/then") || rest == "/complete")
}

// hidesUses reports whether a problem the decoder found at ptr may hide a
// use of a fixture: the steps or fixtures, a step, its conditions or its
// answer unread.
func hidesUses(ptr string) bool {
	_, rest, ok := splitStep(ptr)
	return ptr == "/steps" || ptr == "/fixtures" || ok && (rest == "" || rest == "/when" || rest == "/respond" ||
		strings.HasPrefix(rest, "/when/tool-result") || strings.HasPrefix(rest, "/respond/tool-calls"))
}

// splitStep splits a pointer into a step's ("/steps/3") and the rest.
func splitStep(ptr string) (step, rest string, ok bool) {
	m := stepPointer.FindStringSubmatch(ptr)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
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
