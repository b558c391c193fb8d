package presets

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// draft is the JSON Schema dialect every preset schema declares.
const draft = "https://json-schema.org/draft/2020-12/schema"

// node is a JSON object that keeps its members in the order they were
// written, so schemas read top-down (type, description, properties, required)
// and list properties in the order the preset declares them.
type node []member

type member struct {
	key string
	val any
}

// MarshalJSON writes the members in order.
func (n node) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := marshal(m.key)
		if err != nil {
			return nil, err
		}
		v, err := marshal(m.val)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.key, err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshal is json.Marshal without HTML escaping and without the trailing
// newline an Encoder adds.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// mustMarshal marshals the package's own static values, which cannot fail.
func mustMarshal(v any) []byte {
	b, err := marshal(v)
	if err != nil {
		panic("presets: " + err.Error())
	}
	return b
}

// field is one property of an object schema.
type field struct {
	name     string
	required bool
	schema   node
}

func req(name string, s node) field { return field{name: name, required: true, schema: s} }
func opt(name string, s node) field { return field{name: name, schema: s} }

// object is a closed object schema: it lists its properties, requires the
// required ones and rejects every other property.
func object(description string, fields ...field) node {
	props := make(node, 0, len(fields))
	required := []string{}
	for _, f := range fields {
		props = append(props, member{f.name, f.schema})
		if f.required {
			required = append(required, f.name)
		}
	}
	n := typed("object", description)
	n = append(n, member{"properties", props})
	if len(required) > 0 {
		n = append(n, member{"required", required})
	}
	return append(n, member{"additionalProperties", false})
}

func typed(t, description string) node {
	n := node{{"type", t}}
	if description != "" {
		n = append(n, member{"description", description})
	}
	return n
}

func str(description string) node     { return typed("string", description) }
func number(description string) node  { return typed("number", description) }
func integer(description string) node { return typed("integer", description) }
func boolean(description string) node { return typed("boolean", description) }

func array(description string, items node) node {
	return append(typed("array", description), member{"items", items})
}

func oneOf(description string, values ...string) node {
	return append(str(description), member{"enum", values})
}

// with adds a keyword such as minimum or format.
func (n node) with(key string, val any) node {
	return append(slices.Clip(n), member{key, val})
}

// document makes a schema a root document by declaring its dialect first.
func document(n node) node {
	return append(node{{"$schema", draft}}, n...)
}

// errorSchema describes the error envelope shared by every preset.
func errorSchema() node {
	return document(object("A tool failure.",
		req("error", object("What went wrong.",
			req("code", str("A short machine-readable error code.")),
			req("message", str("A human-readable explanation.")),
			req("retryable", boolean("Whether trying the same call again may succeed.")),
		)),
	))
}

// compile compiles one of the package's schemas. Each compiler holds one
// schema, so nothing is shared between compilations.
func compile(loc string, schema []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("presets: schema %s: %w", loc, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(loc, doc); err != nil {
		return nil, fmt.Errorf("presets: schema %s: %w", loc, err)
	}
	sch, err := c.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("presets: schema %s: %w", loc, err)
	}
	return sch, nil
}

// decode parses exactly one JSON value, keeping numbers as written.
func decode(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return v, nil
}

// Canonical returns raw as compact JSON with object keys sorted and no HTML
// escaping. Numbers keep the digits they were written with. Two payloads
// that differ only in key order or whitespace have the same canonical form.
func Canonical(raw []byte) ([]byte, error) {
	v, err := decode(raw)
	if err != nil {
		return nil, fmt.Errorf("presets: canonical json: %w", err)
	}
	return marshal(v)
}

// Violations lists the rules a failed validation of package
// github.com/santhosh-tekuri/jsonschema/v6 broke, one per rule, each at the
// deepest path (a JSON Pointer into the instance) that locates it, sorted
// by path and rule: how llmproxy reports any schema violation.
func Violations(err error) []Violation { return violations(err) }

// violations turns a failed validation into a sorted list of violations,
// one per broken rule, each at the deepest path that locates it.
func violations(err error) []Violation {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []Violation{{Rule: "schema", Message: err.Error()}}
	}
	var out []Violation
	collect(ve, &out)
	slices.SortFunc(out, func(a, b Violation) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Rule, b.Rule)
	})
	return slices.Compact(out)
}

func collect(ve *jsonschema.ValidationError, out *[]Violation) {
	if len(ve.Causes) > 0 {
		for _, c := range ve.Causes {
			collect(c, out)
		}
		return
	}
	at := pointer(ve.InstanceLocation)
	switch k := ve.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			*out = append(*out, Violation{Path: at + "/" + escape(p), Rule: "additionalProperties", Message: "unknown property"})
		}
	case *kind.Required:
		for _, p := range k.Missing {
			*out = append(*out, Violation{Path: at + "/" + escape(p), Rule: "required", Message: "missing required property"})
		}
	case *kind.Type:
		*out = append(*out, Violation{Path: at, Rule: "type", Message: "must be " + strings.Join(k.Want, " or ") + ", got " + k.Got})
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = string(mustMarshal(w))
		}
		*out = append(*out, Violation{Path: at, Rule: "enum", Message: "must be one of " + strings.Join(want, ", ") + ", got " + display(k.Got)})
	case *kind.Minimum:
		*out = append(*out, Violation{Path: at, Rule: "minimum", Message: "must be >= " + rat(k.Want)})
	case *kind.Maximum:
		*out = append(*out, Violation{Path: at, Rule: "maximum", Message: "must be <= " + rat(k.Want)})
	case *kind.ExclusiveMinimum:
		*out = append(*out, Violation{Path: at, Rule: "exclusiveMinimum", Message: "must be > " + rat(k.Want)})
	case *kind.ExclusiveMaximum:
		*out = append(*out, Violation{Path: at, Rule: "exclusiveMaximum", Message: "must be < " + rat(k.Want)})
	case *kind.Format:
		*out = append(*out, Violation{Path: at, Rule: "format", Message: fmt.Sprintf("must be a valid %s, got %s: %v", k.Want, display(k.Got), k.Err)})
	default:
		rule := "schema"
		if kw := ve.ErrorKind.KeywordPath(); len(kw) > 0 {
			rule = kw[len(kw)-1]
		}
		*out = append(*out, Violation{Path: at, Rule: rule, Message: "does not satisfy the schema"})
	}
}

// display shows an instance value the way it appears in JSON, shortened.
func display(v any) string {
	b, err := marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	const max = 40
	if r := []rune(string(b)); len(r) > max {
		return string(r[:max]) + "…"
	}
	return string(b)
}

func rat(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// pointer encodes instance location tokens as a JSON Pointer.
func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(escape(t))
	}
	return b.String()
}

func escape(token string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(token)
}
