package match

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/llmproxy/llmproxy/wire"
)

// rulesFile is the JSON form of a rules file (--rules FILE). Its field set
// is closed: an unknown field is an error, so a typo never silently matches
// more than intended.
type rulesFile struct {
	Ignore       []string            `json:"ignore"`
	IgnoreByKind map[string][]string `json:"ignore_by_kind"`
	IgnoreQuery  []string            `json:"ignore_query"`
	Headers      []string            `json:"headers"`
}

// rulesFields are the fields a rules file may hold, for error messages.
var rulesFields = []string{"ignore", "ignore_by_kind", "ignore_query", "headers"}

// ruleKinds are the API kinds ignore_by_kind may name.
var ruleKinds = []wire.Kind{
	wire.KindOpenAIChat, wire.KindOpenAIResponses, wire.KindAnthropicMessages, wire.KindGemini,
	wire.KindOllama, wire.KindEmbeddings, wire.KindGeneric, wire.KindMCP,
}

// LoadRules reads a rules file: one JSON object such as
//
//	{"ignore": ["metadata"], "ignore_by_kind": {"openai-chat": ["user"]},
//	 "ignore_query": ["api-version"], "headers": ["OpenAI-Beta"]}
//
// where ignore lists gjson body paths left out of matching for every API
// kind, ignore_by_kind adds paths for one kind, ignore_query lists query
// parameters left out, and headers lists request headers that must match.
// Every field is optional. An unknown field, a value of the wrong type, an
// unknown API kind, an empty name or an unusable path is an error that names
// the file and the field; it wraps ErrBadRule.
func LoadRules(path string) (Rules, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return Rules{}, &RulesError{File: path, Problem: err.Error(), err: err}
	}
	return ParseRules(path, b)
}

// RulesError is a rules file that cannot be used. It wraps ErrBadRule (and
// the cause, when reading the file failed).
type RulesError struct {
	File    string // the file's name
	Problem string // what is wrong, naming the field at fault
	err     error
}

func (e *RulesError) Error() string { return "rules file " + e.File + ": " + e.Problem }

// Unwrap returns ErrBadRule and the cause.
func (e *RulesError) Unwrap() []error {
	if e.err != nil {
		return []error{ErrBadRule, e.err}
	}
	return []error{ErrBadRule}
}

// ParseRules is LoadRules on the bytes of a file; name is used in errors.
func ParseRules(name string, data []byte) (Rules, error) {
	fail := func(format string, args ...any) (Rules, error) {
		return Rules{}, &RulesError{File: name, Problem: fmt.Sprintf(format, args...)}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return fail("empty; want a JSON object with some of the fields %s", strings.Join(rulesFields, ", "))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f rulesFile
	if err := dec.Decode(&f); err != nil {
		return fail("%s", rulesDecodeProblem(err, data))
	}
	if _, err := dec.Token(); err != io.EOF {
		return fail("unexpected data after the JSON object (at byte %d)", dec.InputOffset())
	}
	r := Rules{Ignore: f.Ignore, IgnoreQuery: f.IgnoreQuery, Headers: f.Headers}
	for _, l := range []struct {
		field string
		list  []string
	}{{"ignore", f.Ignore}, {"ignore_query", f.IgnoreQuery}, {"headers", f.Headers}} {
		if i := slices.IndexFunc(l.list, isBlank); i >= 0 {
			return fail("field %s[%d] is empty", l.field, i)
		}
	}
	if len(f.IgnoreByKind) > 0 {
		r.IgnoreByKind = map[string][]string{}
		for _, kind := range sortedKeys(f.IgnoreByKind) {
			if !slices.Contains(ruleKinds, wire.Kind(kind)) {
				return fail("field ignore_by_kind: unknown API kind %q (want one of %s)", kind, kindList())
			}
			if i := slices.IndexFunc(f.IgnoreByKind[kind], isBlank); i >= 0 {
				return fail("field ignore_by_kind.%s[%d] is empty", kind, i)
			}
			r.IgnoreByKind[kind] = f.IgnoreByKind[kind]
		}
	}
	if _, err := New(r, nil); err != nil {
		return fail("%v", err)
	}
	return r, nil
}

// rulesDecodeProblem turns a decoding error into words about the file.
func rulesDecodeProblem(err error, data []byte) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		line, col := lineCol(data, se.Offset-1) // Offset is just after the bad byte
		return fmt.Sprintf("not valid JSON at line %d, column %d: %v", line, col, se)
	case errors.As(err, &te):
		if te.Field == "" {
			return fmt.Sprintf("want a JSON object, found a JSON %s", te.Value)
		}
		return fmt.Sprintf("field %s: want %s, found a JSON %s", te.Field, goTypeWords(te.Type.String()), te.Value)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "not valid JSON: it ends early"
	}
	if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Sprintf("unknown field %s (known fields: %s)", field, strings.Join(rulesFields, ", "))
	}
	return err.Error()
}

func goTypeWords(t string) string {
	switch t {
	case "[]string":
		return "an array of strings"
	case "string":
		return "a string"
	case "map[string][]string":
		return "an object of arrays of strings"
	}
	return t
}

func lineCol(data []byte, off int64) (line, col int) {
	line, col = 1, 1
	for i := int64(0); i < off && i < int64(len(data)); i++ {
		if data[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

func isBlank(s string) bool { return strings.TrimSpace(s) == "" }

func kindList() string {
	names := make([]string, len(ruleKinds))
	for i, k := range ruleKinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// MergeRules combines rule sets: every list is the union of the inputs', in
// first-seen order without duplicates.
func MergeRules(sets ...Rules) Rules {
	var out Rules
	for _, r := range sets {
		out.Ignore = appendNew(out.Ignore, r.Ignore...)
		out.IgnoreQuery = appendNew(out.IgnoreQuery, r.IgnoreQuery...)
		out.Headers = appendNew(out.Headers, r.Headers...)
		out.SecretQuery = appendNew(out.SecretQuery, r.SecretQuery...)
		for _, kind := range sortedKeys(r.IgnoreByKind) {
			if out.IgnoreByKind == nil {
				out.IgnoreByKind = map[string][]string{}
			}
			out.IgnoreByKind[kind] = appendNew(out.IgnoreByKind[kind], r.IgnoreByKind[kind]...)
		}
	}
	return out
}

func appendNew(list []string, more ...string) []string {
	for _, s := range more {
		if !slices.Contains(list, s) {
			list = append(list, s)
		}
	}
	return list
}
