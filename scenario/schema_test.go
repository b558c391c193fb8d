package scenario_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"go.yaml.in/yaml/v4"

	"github.com/llmproxy/llmproxy/presets"
	"github.com/llmproxy/llmproxy/scenario"
)

const schemaFile = "../docs/scenario.schema.json"

// schemaExpresses says, for each file of testdata/check, whether the JSON
// Schema can express its problem (and so rejects the file) or not (and so
// accepts it: the problem is one only scenario check finds).
var schemaExpresses = map[string]bool{
	"arguments-schema.yaml":          true,
	"bad-duration.yaml":              true,
	"bad-regexp.yaml":                false, // RE2 syntax
	"complete-then.yaml":             true,
	"duplicate-id.yaml":              false, // ids across steps and calls
	"error-answer.yaml":              true,
	"error-mixed.yaml":               true,
	"many-errors.json":               true,
	"name.yaml":                      true,
	"no-steps.yaml":                  true,
	"not-a-mapping.yaml":             true,
	"result-schema.yaml":             true,
	"text-condition.yaml":            true,
	"then-unknown.yaml":              false, // then targets
	"tool-call-kind.yaml":            true,
	"unknown-key.yaml":               true,
	"unknown-preset.yaml":            true,
	"unreachable.yaml":               false, // the graph
	"unreachable-beside-others.yaml": true,  // (the unknown key; then targets and the graph are check's alone)
	"unused-fixture.yaml":            false, // uses across the file
	"usage.yaml":                     true,  // (reasoning above output is check's alone)
	"version.yaml":                   true,
	"wrong-type.yaml":                true,
	"as.yaml":                        true,
	"template.yaml":                  false, // template fields and regexp groups
	"json-answer.yaml":               true,
	"no-entry.yaml":                  false, // the graph
	"start-type.yaml":                true,
	"start-unreachable.yaml":         false, // the graph
}

// TestSchemaPresetParts: the parts of the schema that come from the presets
// are the presets' own schemas (-update rewrites them).
func TestSchemaPresetParts(t *testing.T) {
	doc, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	out := doc
	for _, part := range presetParts(t) {
		got := gjson.GetBytes(doc, part.path)
		if got.Exists() && sameJSONText(got.Raw, part.value) {
			continue
		}
		if !*update {
			t.Errorf("%s of %s is not what the presets say (run with -update to rewrite it)", part.path, schemaFile)
			continue
		}
		var pretty bytes.Buffer
		json.Indent(&pretty, []byte(part.value), "    ", "  ")
		if out, err = sjson.SetRawBytes(out, part.path, pretty.Bytes()); err != nil {
			t.Fatal(err)
		}
	}
	if *update && !bytes.Equal(out, doc) {
		if err := os.WriteFile(schemaFile, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type schemaPart struct{ path, value string }

// presetParts are the generated parts of the schema: the preset names, each
// preset's three schemas (the error as the object inside the envelope), and
// the rules that apply them to fixtures and preset calls.
func presetParts(t *testing.T) []schemaPart {
	var names []string
	defs := map[string]map[string]json.RawMessage{}
	var fixtureRules, callRules []string
	for _, d := range presets.All() {
		n := d.Name()
		names = append(names, n)
		errInner := gjson.GetBytes(d.ErrorSchema(), "properties.error").Raw
		defs[n] = map[string]json.RawMessage{
			"arguments": withoutSchemaKey(t, d.ArgumentsSchema()),
			"result":    withoutSchemaKey(t, d.ResultSchema()),
			"error":     json.RawMessage(errInner),
		}
		ref := `{"$ref":"#/$defs/presets/` + n + `/`
		cond := `{"if":{"properties":{"preset":{"const":"` + n + `"}}},"then":{"properties":{`
		fixtureRules = append(fixtureRules, cond+`"arguments":`+ref+`arguments"},"result":`+ref+`result"},"error":`+ref+`error"}}}}`)
		callRules = append(callRules, cond+`"arguments":`+ref+`arguments"}}}}`)
	}
	enum, _ := json.Marshal(map[string][]string{"enum": names})
	byName, _ := json.Marshal(defs)
	return []schemaPart{
		{"$defs.presetName", string(enum)},
		{"$defs.presets", string(byName)},
		{"$defs.fixtureRules", `{"allOf":[` + strings.Join(fixtureRules, ",") + `]}`},
		{"$defs.presetCallRules", `{"allOf":[` + strings.Join(callRules, ",") + `]}`},
	}
}

func withoutSchemaKey(t *testing.T, schema []byte) json.RawMessage {
	out, err := sjson.DeleteBytes(schema, "$schema")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameJSONText(a, b string) bool {
	var va, vb any
	if json.Unmarshal([]byte(a), &va) != nil || json.Unmarshal([]byte(b), &vb) != nil {
		return false
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return bytes.Equal(ja, jb)
}

// compileSchema compiles the published schema.
func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	const url = "https://llmproxy.invalid/scenario.schema.json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatalf("compile %s: %v", schemaFile, err)
	}
	return s
}

// asJSONInstance reads a scenario file (YAML or JSON) as a JSON document,
// independently of the loader.
func asJSONInstance(t *testing.T, file string) (any, bool) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, false
	}
	text, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return inst, true
}

// TestSchemaAndLoaderAgree: every scenario that loads passes the schema;
// every invalid one fails the schema exactly when the schema can express
// its problem.
func TestSchemaAndLoaderAgree(t *testing.T) {
	schema := compileSchema(t)
	valid, _ := filepath.Glob(filepath.Join("testdata", "valid", "*"))
	examples, _ := filepath.Glob(filepath.Join("..", "docs", "scenarios", "*.yaml"))
	for _, file := range append(valid, examples...) {
		if _, err := scenario.Load(file); err != nil {
			t.Errorf("%s does not load: %v", file, err)
			continue
		}
		inst, ok := asJSONInstance(t, file)
		if !ok {
			t.Errorf("%s: not readable as JSON", file)
			continue
		}
		if err := schema.Validate(inst); err != nil {
			t.Errorf("%s loads but fails the schema: %v", file, err)
		}
	}
	for _, file := range checkFiles(t) {
		base := filepath.Base(file)
		if base == "syntax.yaml" || base == "duplicate-key.yaml" {
			continue // not a JSON document: nothing to validate
		}
		expresses, listed := schemaExpresses[base]
		if !listed {
			t.Errorf("%s: say in schemaExpresses whether the schema can express its problem", base)
			continue
		}
		inst, ok := asJSONInstance(t, file)
		err := error(nil)
		if ok {
			err = schema.Validate(inst)
		}
		switch {
		case expresses && ok && err == nil:
			t.Errorf("%s: the loader rejects it but the schema accepts it", base)
		case !expresses && (!ok || err != nil):
			t.Errorf("%s: listed as beyond the schema, but the schema rejects it: %v", base, err)
		}
	}
}
