package jsonschemagen

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

const (
	// MaxDepth bounds the nesting of a generated value, $ref hops included.
	MaxDepth = 32
	// MaxWork bounds the schema nodes read while generating one value.
	MaxWork = 100000
	// MaxString bounds the characters of a generated string.
	MaxString = 4096
)

var (
	// ErrUnsatisfiable means the schema admits no value: a false schema, an
	// empty enum, a pattern that matches nothing.
	ErrUnsatisfiable = errors.New("no value satisfies the schema")
	// ErrUnsupported means the schema uses what the generator cannot
	// follow: a $ref outside the schema, a pattern that is not RE2.
	ErrUnsupported = errors.New("cannot generate a value for the schema")
	// ErrTooDeep means the value would nest deeper than MaxDepth, as a
	// cycle of required $refs does.
	ErrTooDeep = errors.New("schema nests too deep")
	// ErrTooLarge means generating would read more than MaxWork schema
	// nodes or make a string longer than MaxString.
	ErrTooLarge = errors.New("schema too large")
)

// Generate returns a minimal JSON value for schema, compact, object members
// in the schema's order. An error wraps one of the package's sentinels and
// names the schema location (a JSON Pointer) at fault.
func Generate(schema []byte) ([]byte, error) {
	if !gjson.ValidBytes(schema) {
		return nil, fmt.Errorf("%w: the schema is not JSON", ErrUnsupported)
	}
	g := &gen{root: gjson.ParseBytes(schema)}
	return g.value([]sub{{g.root, ""}}, 0)
}

// gen is one generation: the schema and the work done.
type gen struct {
	root gjson.Result
	work int
	refs map[string]sub // resolved $refs
}

// sub is a schema and its location.
type sub struct {
	s    gjson.Result
	path string
}

// value generates a value satisfying every schema of subs (an allOf).
func (g *gen) value(subs []sub, depth int) ([]byte, error) {
	at := ""
	if len(subs) > 0 {
		at = subs[0].path
	}
	if depth > MaxDepth {
		return nil, fmt.Errorf("%w: at %q, deeper than %d (a cycle of required $refs?)", ErrTooDeep, at, MaxDepth)
	}
	sh := &shape{path: at, maxLength: -1}
	for _, s := range subs {
		if err := g.collect(sh, s, depth); err != nil {
			return nil, err
		}
	}
	return g.build(sh, depth)
}

// shape is what the schemas of one value say, merged.
type shape struct {
	path      string
	never     bool
	types     []string
	constV    *gjson.Result
	enum      *gjson.Result
	props     []prop
	propIdx   map[string]int // props by name
	required  []string
	isReq     map[string]bool
	additonal *sub
	items     *sub
	prefix    []sub
	minItems  int
	minProps  int
	minLength int
	maxLength int // -1 for none
	num       bounds
	pattern   string
	format    string
	alts      [][]sub // anyOf and oneOf lists, each to be met by one member
}

type prop struct {
	name string
	subs []sub
}

// bounds are the limits of a number.
type bounds struct {
	lo, hi         float64
	hasLo, hasHi   bool
	exclLo, exclHi bool
	multipleOf     float64
}

func (sh *shape) clone() *shape {
	c := *sh
	c.types = slices.Clone(sh.types)
	c.props = slices.Clone(sh.props)
	for i := range c.props {
		c.props[i].subs = slices.Clone(c.props[i].subs)
	}
	c.propIdx = maps.Clone(sh.propIdx)
	c.required = slices.Clone(sh.required)
	c.isReq = maps.Clone(sh.isReq)
	c.prefix = slices.Clone(sh.prefix)
	c.alts = slices.Clone(sh.alts)
	return &c
}

// tick counts one schema node read.
func (g *gen) tick(at string) error {
	if g.work++; g.work > MaxWork {
		return fmt.Errorf("%w: more than %d schema nodes read (at %q)", ErrTooLarge, MaxWork, at)
	}
	return nil
}

// collect merges schema s into sh.
func (g *gen) collect(sh *shape, s sub, depth int) error {
	if err := g.tick(s.path); err != nil {
		return err
	}
	switch {
	case s.s.Type == gjson.False:
		sh.never = true
		return nil
	case !s.s.IsObject():
		return nil // true, or not a schema: any value
	}
	if ref := s.s.Get("\\$ref"); ref.Exists() {
		if depth+1 > MaxDepth {
			return fmt.Errorf("%w: at %q, $ref %s followed more than %d times (a $ref cycle?)", ErrTooDeep, s.path, ref.Raw, MaxDepth)
		}
		target, err := g.resolve(ref.String(), s.path)
		if err != nil {
			return err
		}
		if err := g.collect(sh, target, depth+1); err != nil {
			return err
		}
	}
	var err error
	s.s.ForEach(func(k, v gjson.Result) bool {
		err = g.keyword(sh, k.String(), v, s.path, depth)
		return err == nil
	})
	return err
}

// keyword merges one keyword of a schema at path into sh.
func (g *gen) keyword(sh *shape, key string, v gjson.Result, path string, depth int) error {
	at := path + "/" + escape(key)
	switch key {
	case "type":
		sh.types = intersect(sh.types, typesOf(v))
	case "const":
		if sh.constV == nil {
			sh.constV = &v
		}
	case "enum":
		if sh.enum == nil {
			sh.enum = &v
		}
	case "properties":
		v.ForEach(func(name, ps gjson.Result) bool {
			sh.addProp(name.String(), sub{ps, at + "/" + escape(name.String())})
			return true
		})
	case "required":
		v.ForEach(func(_, name gjson.Result) bool {
			if n := name.String(); !sh.isReq[n] {
				if sh.isReq == nil {
					sh.isReq = map[string]bool{}
				}
				sh.isReq[n] = true
				sh.required = append(sh.required, n)
			}
			return true
		})
	case "additionalProperties":
		if sh.additonal == nil {
			sh.additonal = &sub{v, at}
		}
	case "items":
		if v.IsArray() { // draft 4 tuples
			v.ForEach(func(i, it gjson.Result) bool {
				sh.prefix = append(sh.prefix, sub{it, at + "/" + i.String()})
				return true
			})
		} else if sh.items == nil {
			sh.items = &sub{v, at}
		}
	case "prefixItems":
		v.ForEach(func(i, it gjson.Result) bool {
			sh.prefix = append(sh.prefix, sub{it, at + "/" + i.String()})
			return true
		})
	case "minItems":
		sh.minItems = max(sh.minItems, count(v))
	case "minProperties":
		sh.minProps = max(sh.minProps, count(v))
	case "minLength":
		sh.minLength = max(sh.minLength, count(v))
	case "maxLength":
		if n := count(v); sh.maxLength < 0 || n < sh.maxLength {
			sh.maxLength = n
		}
	case "minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "multipleOf":
		sh.num.add(key, v)
	case "pattern":
		if sh.pattern == "" {
			sh.pattern = v.String()
		}
	case "format":
		if sh.format == "" {
			sh.format = v.String()
		}
	case "allOf":
		var err error
		v.ForEach(func(i, m gjson.Result) bool {
			err = g.collect(sh, sub{m, at + "/" + i.String()}, depth)
			return err == nil
		})
		return err
	case "anyOf", "oneOf":
		var list []sub
		v.ForEach(func(i, m gjson.Result) bool {
			list = append(list, sub{m, at + "/" + i.String()})
			return true
		})
		sh.alts = append(sh.alts, list)
	}
	return nil
}

func (sh *shape) addProp(name string, s sub) {
	if i, ok := sh.propIdx[name]; ok {
		sh.props[i].subs = append(sh.props[i].subs, s)
		return
	}
	if sh.propIdx == nil {
		sh.propIdx = map[string]int{}
	}
	sh.propIdx[name] = len(sh.props)
	sh.props = append(sh.props, prop{name: name, subs: []sub{s}})
}

// resolve follows a $ref, which must point into the schema itself.
func (g *gen) resolve(ref, at string) (sub, error) {
	if s, ok := g.refs[ref]; ok {
		return s, nil
	}
	ptr, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return sub{}, fmt.Errorf("%w: at %q, $ref %q is not a pointer into the schema (#/…)", ErrUnsupported, at, ref)
	}
	cur := g.root
	if ptr == "" {
		return sub{cur, ""}, nil
	}
	if !strings.HasPrefix(ptr, "/") {
		return sub{}, fmt.Errorf("%w: at %q, $ref %q: anchors are not followed", ErrUnsupported, at, ref)
	}
	for _, seg := range strings.Split(ptr[1:], "/") {
		if err := g.tick(at); err != nil {
			return sub{}, err
		}
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		var next gjson.Result
		if cur.IsArray() {
			next = cur.Get(seg)
		} else {
			found := false
			cur.ForEach(func(k, v gjson.Result) bool {
				if k.String() == seg {
					next, found = v, true
				}
				return !found
			})
			if !found {
				next = gjson.Result{}
			}
		}
		if !next.Exists() {
			return sub{}, fmt.Errorf("%w: at %q, $ref %q points at nothing", ErrUnsupported, at, ref)
		}
		cur = next
	}
	if g.refs == nil {
		g.refs = map[string]sub{}
	}
	g.refs[ref] = sub{cur, ptr}
	return sub{cur, ptr}, nil
}

// build makes the value a shape describes.
func (g *gen) build(sh *shape, depth int) ([]byte, error) {
	if len(sh.alts) > 0 {
		return g.alternative(sh, depth)
	}
	if err := g.tick(sh.path); err != nil {
		return nil, err
	}
	switch {
	case sh.never:
		return nil, fmt.Errorf("%w: at %q, a false schema", ErrUnsatisfiable, sh.path)
	case sh.constV != nil:
		return []byte(sh.constV.Raw), nil
	case sh.enum != nil:
		first := sh.enum.Get("0")
		if !first.Exists() {
			return nil, fmt.Errorf("%w: at %q, an empty enum", ErrUnsatisfiable, sh.path)
		}
		return []byte(first.Raw), nil
	}
	if sh.types != nil && len(sh.types) == 0 {
		return nil, fmt.Errorf("%w: at %q, the types of its schemas have none in common", ErrUnsatisfiable, sh.path)
	}
	switch sh.kind() {
	case "object":
		return g.object(sh, depth)
	case "array":
		return g.array(sh, depth)
	case "string":
		return g.str(sh)
	case "integer":
		return sh.num.pick(true), nil
	case "number":
		return sh.num.pick(false), nil
	case "boolean":
		return []byte("false"), nil
	}
	return []byte("null"), nil
}

// alternative meets the first anyOf/oneOf list with the first member that
// can be made.
func (g *gen) alternative(sh *shape, depth int) ([]byte, error) {
	var first error
	for _, alt := range sh.alts[0] {
		c := sh.clone()
		c.alts = c.alts[1:]
		err := g.collect(c, alt, depth)
		if err == nil {
			var v []byte
			if v, err = g.build(c, depth); err == nil {
				return v, nil
			}
		}
		if errors.Is(err, ErrTooLarge) {
			return nil, err
		}
		if first == nil {
			first = err
		}
	}
	if first == nil {
		return nil, fmt.Errorf("%w: at %q, an empty anyOf or oneOf", ErrUnsatisfiable, sh.path)
	}
	return nil, first
}

// kind is the JSON type to make: the first of the schema's types, else the
// one its keywords imply, else null.
func (sh *shape) kind() string {
	if len(sh.types) > 0 {
		return sh.types[0]
	}
	switch {
	case sh.props != nil || sh.required != nil || sh.additonal != nil || sh.minProps > 0:
		return "object"
	case sh.items != nil || sh.prefix != nil || sh.minItems > 0:
		return "array"
	case sh.pattern != "" || sh.format != "" || sh.minLength > 0 || sh.maxLength >= 0:
		return "string"
	case sh.num.hasLo || sh.num.hasHi || sh.num.multipleOf > 0:
		return "number"
	}
	return "null"
}

func (g *gen) object(sh *shape, depth int) ([]byte, error) {
	var names []string
	var subs [][]sub
	taken := map[string]bool{}
	add := func(name string, s []sub) {
		names, subs = append(names, name), append(subs, s)
		taken[name] = true
	}
	for _, p := range sh.props {
		if sh.isReq[p.name] {
			add(p.name, p.subs)
		}
	}
	var extra []sub
	if sh.additonal != nil {
		extra = []sub{*sh.additonal}
	}
	for _, name := range sh.required {
		if !taken[name] {
			add(name, extra)
		}
	}
	for _, p := range sh.props {
		if len(names) >= sh.minProps {
			break
		}
		if !taken[p.name] {
			add(p.name, p.subs)
		}
	}
	out := []byte{'{'}
	for i, name := range names {
		v, err := g.value(subs[i], depth+1)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = appendString(out, name)
		out = append(append(out, ':'), v...)
	}
	return append(out, '}'), nil
}

func (g *gen) array(sh *shape, depth int) ([]byte, error) {
	out := []byte{'['}
	for i := range sh.minItems {
		var s []sub
		switch {
		case i < len(sh.prefix):
			s = []sub{sh.prefix[i]}
		case sh.items != nil:
			s = []sub{*sh.items}
		}
		v, err := g.value(s, depth+1)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, v...)
	}
	return append(out, ']'), nil
}

func (g *gen) str(sh *shape) ([]byte, error) {
	if sh.minLength > MaxString {
		return nil, fmt.Errorf("%w: at %q, minLength %d is over %d", ErrTooLarge, sh.path, sh.minLength, MaxString)
	}
	var s string
	switch {
	case sh.pattern != "":
		var err error
		if s, err = fromPattern(sh.pattern, sh.minLength); err != nil {
			return nil, fmt.Errorf("at %q: %w", sh.path, err)
		}
	case sh.format != "":
		s = formats[sh.format]
	}
	if n := len([]rune(s)); n < sh.minLength && sh.pattern == "" {
		s += strings.Repeat("a", sh.minLength-n)
	}
	return appendString(nil, s), nil
}

// formats are the strings made for a format.
var formats = map[string]string{
	"date-time":             "2023-11-14T22:13:20Z",
	"date":                  "2023-11-14",
	"time":                  "22:13:20Z",
	"duration":              "PT0S",
	"email":                 "user@example.com",
	"idn-email":             "user@example.com",
	"hostname":              "example.com",
	"idn-hostname":          "example.com",
	"ipv4":                  "192.0.2.1",
	"ipv6":                  "2001:db8::1",
	"uri":                   "https://example.com/",
	"uri-reference":         "https://example.com/",
	"iri":                   "https://example.com/",
	"iri-reference":         "https://example.com/",
	"uri-template":          "https://example.com/",
	"uuid":                  "00000000-0000-4000-8000-000000000000",
	"json-pointer":          "",
	"relative-json-pointer": "0",
	"regex":                 ".*",
}

func (b *bounds) add(key string, v gjson.Result) {
	if key == "exclusiveMinimum" || key == "exclusiveMaximum" {
		if v.Type == gjson.True || v.Type == gjson.False { // draft 4: a flag on minimum / maximum
			if key == "exclusiveMinimum" {
				b.exclLo = v.Type == gjson.True
			} else {
				b.exclHi = v.Type == gjson.True
			}
			return
		}
	}
	if v.Type != gjson.Number {
		return
	}
	f := v.Float()
	switch key {
	case "minimum", "exclusiveMinimum":
		if !b.hasLo || f >= b.lo {
			b.lo, b.hasLo, b.exclLo = f, true, key == "exclusiveMinimum" || (f == b.lo && b.exclLo)
		}
	case "maximum", "exclusiveMaximum":
		if !b.hasHi || f <= b.hi {
			b.hi, b.hasHi, b.exclHi = f, true, key == "exclusiveMaximum" || (f == b.hi && b.exclHi)
		}
	case "multipleOf":
		if f > 0 && b.multipleOf == 0 {
			b.multipleOf = f
		}
	}
}

// pick returns the number nearest 0 within the bounds (a multiple of
// multipleOf when given).
func (b *bounds) pick(integer bool) []byte {
	step := b.multipleOf
	if integer && (step == 0 || step != math.Trunc(step)) {
		step = max(1, math.Ceil(step))
	}
	v := 0.0
	switch {
	case b.hasLo && (b.lo > 0 || b.lo == 0 && b.exclLo):
		v = b.lo
		if step > 0 {
			v = math.Ceil(b.lo/step) * step
			if b.exclLo && v == b.lo {
				v += step
			}
		} else if b.exclLo {
			v = b.lo + 1
			if b.hasHi && v >= b.hi {
				v = (b.lo + b.hi) / 2
			}
		}
	case b.hasHi && (b.hi < 0 || b.hi == 0 && b.exclHi):
		v = b.hi
		if step > 0 {
			v = math.Floor(b.hi/step) * step
			if b.exclHi && v == b.hi {
				v -= step
			}
		} else if b.exclHi {
			v = b.hi - 1
			if b.hasLo && v <= b.lo {
				v = (b.lo + b.hi) / 2
			}
		}
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.AppendInt(nil, int64(v), 10)
	}
	return strconv.AppendFloat(nil, v, 'g', -1, 64)
}

func typesOf(v gjson.Result) []string {
	if v.IsArray() {
		var out []string
		v.ForEach(func(_, t gjson.Result) bool {
			out = append(out, t.String())
			return true
		})
		return out
	}
	return []string{v.String()}
}

// intersect keeps the types of a that b allows (an integer is a number);
// a nil a is no restriction yet.
func intersect(a, b []string) []string {
	if a == nil {
		return b
	}
	out := []string{}
	for _, t := range a {
		switch {
		case slices.Contains(b, t):
			out = append(out, t)
		case t == "number" && slices.Contains(b, "integer"):
			out = append(out, "integer")
		case t == "integer" && slices.Contains(b, "number"):
			out = append(out, t)
		}
	}
	return out
}

func count(v gjson.Result) int {
	if v.Type != gjson.Number || v.Float() < 0 {
		return 0
	}
	return int(min(v.Float(), math.MaxInt32))
}

// pointerEscaper escapes a JSON Pointer token.
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

func escape(token string) string {
	if !strings.ContainsAny(token, "~/") {
		return token
	}
	return pointerEscaper.Replace(token)
}

// appendString appends s as a JSON string, without HTML escaping.
func appendString(out []byte, s string) []byte {
	b, _ := json.Marshal(s)
	if !strings.ContainsAny(s, "<>&") {
		return append(out, b...)
	}
	r := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&")
	return append(out, r.Replace(string(b))...)
}
