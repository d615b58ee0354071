package google

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The official specs kept beside the project (shared/specs): the Gemini
// API's OpenAPI 3.0 rendering and Vertex AI's discovery document. Outgoing
// request bodies are validated against them. Both are turned into one JSON
// Schema (2020-12) document with every schema under $defs; objects that
// list their properties get additionalProperties: false, so a misspelt or
// invented field fails, which the specs alone (open objects) would let
// pass.
const (
	geminiSpecPath = "../../../../shared/specs/gemini/openapi.json"
	vertexSpecPath = "../../../../shared/specs/vertex-ai/aiplatform.v1.json"
	fixturesDir    = "../../../../shared/specs/gemini/fixtures/vercel-ai/"
)

type specSchemas struct {
	once    sync.Once
	err     error
	skip    bool
	schemas map[string]*jsonschema.Schema
}

var geminiSpec, vertexSpec specSchemas

// validate checks body against the named schema of the Gemini API spec
// (vertex false) or the Vertex discovery document (vertex true).
func validate(t *testing.T, vertex bool, name string, body []byte) {
	t.Helper()
	skip, err := checkSchema(vertex, name, body)
	if skip {
		t.Skip("spec file not present")
	}
	if err != nil {
		t.Errorf("%s body does not match the spec's %s:\n%v\nbody: %s", map[bool]string{false: "Gemini API", true: "Vertex"}[vertex], name, err, body)
	}
}

func checkSchema(vertex bool, name string, body []byte) (skip bool, err error) {
	s := &geminiSpec
	path := geminiSpecPath
	if vertex {
		s, path = &vertexSpec, vertexSpecPath
	}
	s.once.Do(func() { s.load(path, vertex) })
	if s.skip {
		return true, nil
	}
	if s.err != nil {
		return false, fmt.Errorf("load spec %s: %w", path, s.err)
	}
	sch, ok := s.schemas[name]
	if !ok {
		return false, fmt.Errorf("schema %s not compiled", name)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return false, fmt.Errorf("body is not JSON: %w", err)
	}
	return false, sch.Validate(inst)
}

// Schema names validated, per spec.
var (
	geminiNames = []string{"GenerateContentRequest", "BatchEmbedContentsRequest"}
	vertexNames = []string{"GoogleCloudAiplatformV1GenerateContentRequest", "GoogleCloudAiplatformV1PredictRequest"}
)

func (s *specSchemas) load(path string, vertex bool) {
	raw, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		s.skip = true
		return
	}
	if err != nil {
		s.err = err
		return
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		s.err = err
		return
	}
	defs := map[string]any{}
	names := geminiNames
	if vertex {
		names = vertexNames
		for k, v := range doc["schemas"].(map[string]any) {
			defs[k] = fromDiscovery(v)
		}
	} else {
		for k, v := range doc["components"].(map[string]any)["schemas"].(map[string]any) {
			defs[k] = fromOpenAPI(v)
		}
		// The model of generateContent is a path parameter; the body need
		// not repeat it.
		dropRequired(defs["GenerateContentRequest"], "model")
	}
	root := map[string]any{"$schema": "https://json-schema.org/draft/2020-12/schema", "$defs": defs}
	b, _ := json.Marshal(root)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		s.err = err
		return
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("spec.json", inst); err != nil {
		s.err = err
		return
	}
	s.schemas = map[string]*jsonschema.Schema{}
	for _, n := range names {
		sch, err := c.Compile("spec.json#/$defs/" + n)
		if err != nil {
			s.err = err
			return
		}
		s.schemas[n] = sch
	}
}

func dropRequired(schema any, name string) {
	m, ok := schema.(map[string]any)
	if !ok {
		return
	}
	req, _ := m["required"].([]any)
	var out []any
	for _, r := range req {
		if r != name {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		delete(m, "required")
	} else {
		m["required"] = out
	}
}

// fromOpenAPI converts an OpenAPI 3.0 schema object: refs move to $defs,
// nullable becomes a null type, and listed properties close the object.
func fromOpenAPI(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = fromOpenAPI(e)
		}
		return out
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			switch {
			case k == "$ref":
				out[k] = "#/$defs/" + strings.TrimPrefix(e.(string), "#/components/schemas/")
			case k == "nullable" || k == "example" || strings.HasPrefix(k, "x-"):
			case k == "properties":
				props := map[string]any{}
				for pk, pv := range e.(map[string]any) {
					props[pk] = fromOpenAPI(pv)
				}
				out[k] = props
			default:
				out[k] = fromOpenAPI(e)
			}
		}
		if x["nullable"] == true {
			if t, ok := out["type"].(string); ok {
				out["type"] = []any{t, "null"}
			}
		}
		if _, ok := x["properties"]; ok {
			if _, ok := x["additionalProperties"]; !ok {
				out["additionalProperties"] = false
			}
		}
		return out
	}
	return v
}

// fromDiscovery converts a Google discovery schema: {"$ref": "Name"}
// points into $defs, type "any" means any value, and the discovery-only
// annotations go.
func fromDiscovery(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := map[string]any{}
	for k, e := range m {
		switch k {
		case "$ref":
			out[k] = "#/$defs/" + e.(string)
		case "type":
			if e != "any" {
				out[k] = e
			}
		case "properties":
			props := map[string]any{}
			for pk, pv := range e.(map[string]any) {
				props[pk] = fromDiscovery(pv)
			}
			out[k] = props
		case "items", "additionalProperties":
			out[k] = fromDiscovery(e)
		case "enum", "required", "pattern", "minimum", "maximum":
			out[k] = e
		}
	}
	if _, ok := m["properties"]; ok {
		if _, ok := m["additionalProperties"]; !ok {
			out["additionalProperties"] = false
		}
	}
	return out
}

// TestSchemaValidatorCatchesMistakes makes sure validation has teeth: a
// misspelt field and a wrong type both fail against both specs.
func TestSchemaValidatorCatchesMistakes(t *testing.T) {
	for _, tc := range []struct {
		vertex bool
		name   string
	}{{false, "GenerateContentRequest"}, {true, "GoogleCloudAiplatformV1GenerateContentRequest"}} {
		for _, bad := range []string{
			`{"contents":[{"role":"user","parts":[{"txt":"hi"}]}]}`,
			`{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":"many"}}`,
			`{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"toolConfig":{"functionCallingConfig":{"mode":"SOMETIMES"}}}`,
		} {
			skip, err := checkSchema(tc.vertex, tc.name, []byte(bad))
			if skip {
				t.Skip("spec file not present")
			}
			if err == nil {
				t.Errorf("vertex=%v: %s passed validation", tc.vertex, bad)
			}
		}
		validate(t, tc.vertex, tc.name, []byte(`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`))
	}
}
