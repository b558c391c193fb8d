package scenario

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/llmproxy/llmproxy/internal/jsonschemagen"
	"github.com/llmproxy/llmproxy/presets"
	"github.com/llmproxy/llmproxy/wire"
)

// This file answers structured output (Answer.JSON): the value checked
// against, or made from, the schema the request asks for.

// checkJSONAnswer checks a json answer at load: alone with what it may
// go with, and its value JSON.
func checkJSONAnswer(p *problems, l loc, a *Answer) {
	j := a.JSON
	if j == nil {
		return
	}
	if a.Text != "" || a.TextFrom != nil || len(a.ToolCalls) > 0 {
		p.add(l, "a json answer is the answer's content: it has no text or tool-calls besides")
	}
	switch {
	case j.Generate && j.Value != nil:
		p.add(l, "a json answer has a value or generate, not both")
	case !j.Generate && !json.Valid(j.Value):
		p.add(l, "not a JSON value")
	}
}

// structured is a json answer made for one request: the value as text, or
// as the arguments of the tool the request forces.
type structured struct {
	text string
	tool *ccall
}

// schemaCache keeps the schemas requests asked for, compiled, and the value
// generate made for each: a test suite sends the same schema again and
// again, and compiling a large one costs far more than reading the request.
// Its zero value is ready; it holds at most maxCachedSchemas, and forgets
// them all when full. It is safe for concurrent use.
type schemaCache struct {
	mu      sync.Mutex
	entries map[[sha256.Size]byte]*cachedSchema
}

// maxCachedSchemas bounds the schemas a schemaCache holds.
const maxCachedSchemas = 64

// cachedSchema is one schema, compiled (or why not), and what generate made
// for it, once asked.
type cachedSchema struct {
	schema   *jsonschema.Schema
	err      error
	genOnce  sync.Once
	value    []byte
	genError error
}

// get returns the entry of a schema, compiling it on first use.
func (c *schemaCache) get(raw []byte) *cachedSchema {
	key := sha256.Sum256(raw)
	c.mu.Lock()
	if e, ok := c.entries[key]; ok {
		c.mu.Unlock()
		return e
	}
	c.mu.Unlock()
	e := &cachedSchema{}
	e.schema, e.err = compileRequestSchema(raw)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil || len(c.entries) >= maxCachedSchemas {
		c.entries = map[[sha256.Size]byte]*cachedSchema{}
	}
	c.entries[key] = e
	return e
}

// generated is the value generate makes for the schema raw, made once.
func (e *cachedSchema) generated(raw []byte) ([]byte, error) {
	e.genOnce.Do(func() { e.value, e.genError = jsonschemagen.Generate(raw) })
	return e.value, e.genError
}

// answerJSON makes a step's json answer for a request, or says why it
// cannot (the reason of a miss).
func answerJSON(cache *schemaCache, j *JSONAnswer, req *Request) (structured, string) {
	out, err := wire.OutputOf(req.Parsed.Kind, req.Body)
	if err != nil {
		return structured{}, fmt.Sprintf("respond.json: %v", err)
	}
	value := j.Value
	if out.Schema == nil {
		if j.Generate {
			return structured{}, "respond.json: generate makes a value from the schema the request asks for, and it asks for none " +
				"(OpenAI response_format json_schema or Responses text.format, Gemini responseSchema or responseJsonSchema, " +
				"Anthropic output_config.format or a forced tool, Ollama format)"
		}
		return structured{text: string(value)}, ""
	}
	entry := cache.get(out.Schema)
	if entry.err != nil {
		return structured{}, fmt.Sprintf("respond.json: the request's schema (%s) does not compile: %v", out.From, entry.err)
	}
	schema := entry.schema
	what := "the value"
	if j.Generate {
		if value, err = entry.generated(out.Schema); err != nil {
			return structured{}, fmt.Sprintf("respond.json: generate: no value can be made for the request's schema (%s): %v", out.From, err)
		}
		what = "the value made, " + short(value) + ","
	}
	if reason := validate(schema, value); reason != "" {
		return structured{}, fmt.Sprintf("respond.json: %s does not satisfy the request's schema (%s): %s", what, out.From, reason)
	}
	if out.Tool != "" {
		if !bytes.HasPrefix(bytes.TrimSpace(value), []byte("{")) {
			return structured{}, fmt.Sprintf("respond.json: the request forces the tool %s, whose arguments are a JSON object, not %s", out.Tool, short(value))
		}
		return structured{tool: &ccall{name: out.Tool, args: canonicalArgs(value)}}, ""
	}
	return structured{text: string(value)}, ""
}

// refusingLoader refuses every schema a request's schema refers to outside
// itself: a request never makes the mock read a file or the network.
type refusingLoader struct{}

func (refusingLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s: a request's schema may refer only to itself", url)
}

// requestSchemaURL names a request's schema while it compiles.
const requestSchemaURL = "urn:llmproxy:request-schema"

// maxSchemaObjects bounds the objects of a request's schema: compiling
// costs time that grows faster than the schema (about a second at this
// bound on one core), so a larger one is refused rather than compiled.
const maxSchemaObjects = 16384

// compileRequestSchema compiles a schema a request sent (draft 2020-12
// unless it says otherwise), formats asserted, nothing loaded from outside.
// A schema that is not one says where, as a violation of the metaschema.
func compileRequestSchema(raw []byte) (*jsonschema.Schema, error) {
	if n := objects(raw); n > maxSchemaObjects {
		return nil, fmt.Errorf("it has more than %d objects: too large to compile", maxSchemaObjects)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(refusingLoader{})
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(requestSchemaURL, doc); err != nil {
		return nil, err
	}
	sch, err := c.Compile(requestSchemaURL)
	var se *jsonschema.SchemaValidationError
	if errors.As(err, &se) {
		return nil, fmt.Errorf("not a JSON Schema: %s", violationList(se.Err))
	}
	return sch, err
}

// objects counts the JSON objects in a JSON text.
func objects(raw []byte) int {
	n, inString := 0, false
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case !inString && c == '{':
			n++
		}
	}
	return n
}

// validate checks value against schema; it returns "" when it satisfies
// it, else each violation with its path.
func validate(schema *jsonschema.Schema, value []byte) string {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(value))
	if err != nil {
		return "not JSON: " + err.Error()
	}
	err = schema.Validate(inst)
	if err == nil {
		return ""
	}
	return violationList(err)
}

// violationList says what a failed validation found, each violation with
// its path.
func violationList(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var parts []string
	for _, v := range presets.Violations(err) {
		if v.Path == "" {
			v.Path = "/"
		}
		parts = append(parts, v.String())
	}
	return shorten(strings.Join(parts, "; "), 4*shortLen)
}
