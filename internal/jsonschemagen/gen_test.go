package jsonschemagen_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/llmproxy/llmproxy/internal/jsonschemagen"
)

// valid reports whether value satisfies schema, formats asserted.
func valid(t testing.TB, schema, value []byte) error {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(value))
	if err != nil {
		t.Fatalf("%s is not JSON: %v", value, err)
	}
	return sch.Validate(inst)
}

func TestGenerate(t *testing.T) {
	tests := []struct{ name, schema, want string }{
		{"empty schema", `{}`, `null`},
		{"true", `true`, `null`},
		{"string", `{"type":"string"}`, `""`},
		{"min length", `{"type":"string","minLength":3}`, `"aaa"`},
		{"enum takes the first", `{"type":"string","enum":["red","green"]}`, `"red"`},
		{"const", `{"const":{"a":[1,2]}}`, `{"a":[1,2]}`},
		{"formats", `{"type":"object","required":["a","b","c","d","e"],"properties":{"a":{"type":"string","format":"date-time"},"b":{"type":"string","format":"email"},"c":{"type":"string","format":"uuid"},"d":{"type":"string","format":"uri"},"e":{"type":"string","format":"date"}}}`,
			`{"a":"2023-11-14T22:13:20Z","b":"user@example.com","c":"00000000-0000-4000-8000-000000000000","d":"https://example.com/","e":"2023-11-14"}`},
		{"pattern", `{"type":"string","pattern":"^[A-Z]{2}-[0-9]{3,}$"}`, `"AA-000"`},
		{"pattern with alternation", `{"type":"string","pattern":"^(cat|dog)s?$"}`, `"cat"`},
		{"pattern and min length", `{"type":"string","pattern":"^x[a-z]*$","minLength":4}`, `"xaaaa"`},
		{"integer in range", `{"type":"integer","minimum":5,"maximum":9}`, `5`},
		{"exclusive minimum", `{"type":"integer","exclusiveMinimum":5}`, `6`},
		{"negative maximum", `{"type":"number","maximum":-2.5}`, `-2.5`},
		{"multiple of", `{"type":"integer","minimum":7,"multipleOf":5}`, `10`},
		{"number between", `{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1}`, `0.5`},
		{"boolean", `{"type":"boolean"}`, `false`},
		{"nullable first", `{"type":["null","string"]}`, `null`},
		{"required only, in schema order", `{"type":"object","properties":{"z":{"type":"integer"},"a":{"type":"string"},"opt":{"type":"string"}},"required":["a","z"]}`, `{"z":0,"a":""}`},
		{"min properties", `{"type":"object","properties":{"a":{"type":"boolean"},"b":{"type":"boolean"}},"minProperties":1}`, `{"a":false}`},
		{"array min items", `{"type":"array","items":{"type":"integer","minimum":1},"minItems":2}`, `[1,1]`},
		{"prefix items", `{"type":"array","prefixItems":[{"const":"x"},{"type":"boolean"}],"minItems":2}`, `["x",false]`},
		{"ref", `{"$defs":{"p":{"type":"object","properties":{"n":{"type":"string","enum":["A"]}},"required":["n"]}},"type":"object","properties":{"p":{"$ref":"#/$defs/p"}},"required":["p"]}`, `{"p":{"n":"A"}}`},
		{"recursive but optional", `{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#"}}},"required":["name"]}`, `{"name":""}`},
		{"allOf merged", `{"allOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"properties":{"b":{"type":"integer"}},"required":["b"]}]}`, `{"a":"","b":0}`},
		{"anyOf takes the first that can be made", `{"anyOf":[{"type":"string","pattern":"(?=x)"},{"type":"integer","minimum":3}]}`, `3`},
		{"oneOf", `{"oneOf":[{"type":"object","properties":{"kind":{"const":"a"}},"required":["kind"]},{"type":"string"}]}`, `{"kind":"a"}`},
		{"openai strict shape", `{"type":"object","additionalProperties":false,"properties":{"city":{"type":"string"},"temp":{"type":["number","null"]},"tags":{"type":"array","items":{"type":"string"}}},"required":["city","temp","tags"]}`, `{"city":"","temp":0,"tags":[]}`},
		{"html characters", `{"const":"<a&b>"}`, `"<a&b>"`},
		{"string with html characters", `{"type":"string","pattern":"^<&>$"}`, `"<&>"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := jsonschemagen.Generate([]byte(tt.schema))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
			if tt.name != "anyOf takes the first that can be made" { // (?=x) is no RE2: the validator cannot compile it
				if err := valid(t, []byte(tt.schema), got); err != nil {
					t.Errorf("%s does not satisfy the schema: %v", got, err)
				}
			}
			again, _ := jsonschemagen.Generate([]byte(tt.schema))
			if !bytes.Equal(got, again) {
				t.Errorf("not deterministic: %s then %s", got, again)
			}
		})
	}
}

// TestGenerateBadSchemas: a schema no value satisfies, one the generator
// cannot follow, and hostile ones end in an error naming the place, never
// a hang.
func TestGenerateBadSchemas(t *testing.T) {
	tests := []struct {
		name, schema string
		want         error
		says         string
	}{
		{"false", `false`, jsonschemagen.ErrUnsatisfiable, "a false schema"},
		{"false property", `{"type":"object","properties":{"a":false},"required":["a"]}`, jsonschemagen.ErrUnsatisfiable, `"/properties/a"`},
		{"empty enum", `{"enum":[]}`, jsonschemagen.ErrUnsatisfiable, "empty enum"},
		{"no common type", `{"allOf":[{"type":"string"},{"type":"integer"}]}`, jsonschemagen.ErrUnsatisfiable, "no"},
		{"remote ref", `{"$ref":"https://example.com/s.json"}`, jsonschemagen.ErrUnsupported, "not a pointer into the schema"},
		{"file ref", `{"$ref":"file:///etc/passwd"}`, jsonschemagen.ErrUnsupported, "not a pointer"},
		{"dangling ref", `{"$ref":"#/$defs/none"}`, jsonschemagen.ErrUnsupported, "points at nothing"},
		{"not RE2", `{"type":"string","pattern":"(?<=a)b"}`, jsonschemagen.ErrUnsupported, "not RE2"},
		{"ref cycle", `{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`, jsonschemagen.ErrTooDeep, "$ref cycle"},
		{"required self reference", `{"type":"object","properties":{"next":{"$ref":"#"}},"required":["next"]}`, jsonschemagen.ErrTooDeep, "(a $ref cycle?)"},
		{"exponential references", `{"type":"object","properties":{"l":{"$ref":"#"},"r":{"$ref":"#"}},"required":["l","r"]}`, jsonschemagen.ErrTooDeep, "(a $ref cycle?)"},
		{"wide and shallow", wideTree(), jsonschemagen.ErrTooLarge, "schema nodes"},
		{"huge min length", `{"type":"string","minLength":100000000}`, jsonschemagen.ErrTooLarge, "minLength"},
		{"huge pattern", `{"type":"string","pattern":"^(a{1000}){1000}$"}`, nil, ""},
		{"not JSON", `{"type":`, jsonschemagen.ErrUnsupported, "not JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := jsonschemagen.Generate([]byte(tt.schema))
			if tt.want == nil {
				if err == nil {
					t.Fatalf("generated %d bytes from a schema whose values are too large", len(got))
				}
				return
			}
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("err = %v (value %s), want %v saying %q", err, got, tt.want, tt.says)
			}
		})
	}
}

// wideTree is a schema of 8 levels of objects of 10 required properties:
// 10^8 values.
func wideTree() string {
	var b strings.Builder
	b.WriteString(`{"$ref":"#/$defs/l0","$defs":{`)
	for l := range 8 {
		fmt.Fprintf(&b, `"l%d":{"type":"object","required":["p0","p1","p2","p3","p4","p5","p6","p7","p8","p9"],"properties":{`, l)
		for p := range 10 {
			if p > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"p%d":{"$ref":"#/$defs/l%d"}`, p, l+1)
		}
		b.WriteString("}},")
	}
	b.WriteString(`"l8":{"type":"string"}}}`)
	return b.String()
}

// manyProperties is an object schema with n required properties.
func manyProperties(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"p%d":{"type":"integer","minimum":%d}`, i, i)
	}
	b.WriteString(`},"required":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"p%d"`, i)
	}
	b.WriteString("]}")
	return []byte(b.String())
}

// TestGenerateManyProperties: 10 000 required properties are all made, and
// the value is valid.
func TestGenerateManyProperties(t *testing.T) {
	schema := manyProperties(10000)
	got, err := jsonschemagen.Generate(schema)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(got, []byte(`{"p0":0,"p1":1,`)) || !bytes.HasSuffix(got, []byte(`"p9999":9999}`)) {
		t.Errorf("got %.60s…%s", got, got[len(got)-20:])
	}
	if err := valid(t, schema, got); err != nil {
		t.Error(err)
	}
}

// BenchmarkGenerateHostile measures the hostile schemas: 10 000 required
// properties, and a required reference tree that hits MaxWork.
func BenchmarkGenerateHostile(b *testing.B) {
	schemas := map[string][]byte{
		"10000-properties": manyProperties(10000),
		"wide-tree":        []byte(wideTree()),
		"ref-cycle":        []byte(`{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`),
	}
	for name, s := range schemas {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				jsonschemagen.Generate(s)
			}
		})
	}
}
