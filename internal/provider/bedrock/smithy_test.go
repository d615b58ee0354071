package bedrock

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// specDir holds the provider specs and fixtures (specs/README.md).
const specDir = "../../../../shared/specs/bedrock"

// smithyModel is the part of a Smithy 2.0 JSON AST the validator walks.
type smithyModel struct {
	Shapes map[string]smithyShape `json:"shapes"`
}

type smithyShape struct {
	Type    string                     `json:"type"`
	Members map[string]smithyMember    `json:"members"`
	Member  *smithyMember              `json:"member"`
	Key     *smithyMember              `json:"key"`
	Value   *smithyMember              `json:"value"`
	Traits  map[string]json.RawMessage `json:"traits"`
}

type smithyMember struct {
	Target string                     `json:"target"`
	Traits map[string]json.RawMessage `json:"traits"`
}

// smithyValidator checks a JSON document against a shape of the model, as
// restJson1 serialises it: structures are objects of their members
// (required trait enforced, unknown members rejected; members bound to the
// URL or headers are not in the body), unions objects with exactly one
// member, lists arrays, maps objects, enums their values, blobs base64,
// documents anything; length, range and pattern traits of the shape and
// the member are checked.
type smithyValidator struct {
	shapes map[string]smithyShape
	// skip lists members the validator accepts without checking, as
	// "Shape.member": fields newer than the saved model.
	skip map[string]bool

	mu       sync.Mutex
	patterns map[string]*regexp.Regexp
}

var (
	bedrockModelOnce sync.Once
	bedrockModel     *smithyValidator
	bedrockModelErr  error
)

// converseValidator loads the saved bedrock-runtime model once; tests skip
// when the specs folder is absent.
func converseValidator(t testing.TB) *smithyValidator {
	t.Helper()
	bedrockModelOnce.Do(func() {
		raw, err := os.ReadFile(specDir + "/bedrock-runtime.json")
		if err != nil {
			bedrockModelErr = err
			return
		}
		var m smithyModel
		if err := json.Unmarshal(raw, &m); err != nil {
			bedrockModelErr = err
			return
		}
		bedrockModel = &smithyValidator{
			shapes: m.Shapes,
			// outputConfig (structured output) is newer than the Oct 2025
			// model kept in specs/ (specs/README.md "Bedrock model age").
			skip:     map[string]bool{"ConverseRequest.outputConfig": true},
			patterns: map[string]*regexp.Regexp{},
		}
	})
	if bedrockModelErr != nil {
		if os.IsNotExist(bedrockModelErr) {
			t.Skipf("bedrock spec not available: %v", bedrockModelErr)
		}
		t.Fatalf("load bedrock spec: %v", bedrockModelErr)
	}
	return bedrockModel
}

const ns = "com.amazonaws.bedrockruntime#"

// validate checks body against shape (a name in the service namespace) and
// returns every violation.
func (v *smithyValidator) validate(shape string, body []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return []string{"not JSON: " + err.Error()}
	}
	var errs []string
	v.check(ns+shape, nil, doc, "$", &errs)
	return errs
}

func short(id string) string {
	if i := strings.LastIndexByte(id, '#'); i >= 0 {
		return id[i+1:]
	}
	return id
}

// check validates val against target, with the traits of the member that
// refers to it.
func (v *smithyValidator) check(target string, memberTraits map[string]json.RawMessage, val any, path string, errs *[]string) {
	fail := func(format string, args ...any) {
		*errs = append(*errs, path+": "+fmt.Sprintf(format, args...))
	}
	if val == nil {
		fail("null is not a %s", short(target))
		return
	}
	typ, traits := v.resolve(target)
	for k, t := range memberTraits {
		if traits == nil {
			traits = map[string]json.RawMessage{}
		}
		traits[k] = t
	}
	switch typ {
	case "structure":
		obj, ok := val.(map[string]any)
		if !ok {
			fail("want an object for %s", short(target))
			return
		}
		sh := v.shapes[target]
		for name, m := range sh.Members {
			if _, bound := httpBound(m.Traits); bound {
				continue
			}
			if _, req := m.Traits["smithy.api#required"]; req {
				if _, ok := obj[name]; !ok {
					fail("missing required member %s of %s", name, short(target))
				}
			}
		}
		for name, mv := range obj {
			if v.skip[short(target)+"."+name] {
				continue
			}
			m, ok := sh.Members[name]
			if !ok {
				fail("unknown member %s of %s", name, short(target))
				continue
			}
			if loc, bound := httpBound(m.Traits); bound {
				fail("member %s of %s belongs in the %s, not the body", name, short(target), loc)
				continue
			}
			v.check(m.Target, m.Traits, mv, path+"."+name, errs)
		}
	case "union":
		obj, ok := val.(map[string]any)
		if !ok {
			fail("want an object for union %s", short(target))
			return
		}
		sh := v.shapes[target]
		set := 0
		for name, mv := range obj {
			if mv == nil {
				continue
			}
			set++
			m, ok := sh.Members[name]
			if !ok {
				fail("unknown member %s of union %s", name, short(target))
				continue
			}
			v.check(m.Target, m.Traits, mv, path+"."+name, errs)
		}
		if set != 1 {
			fail("union %s must have exactly one member, has %d", short(target), set)
		}
	case "list", "set":
		arr, ok := val.([]any)
		if !ok {
			fail("want an array for %s", short(target))
			return
		}
		v.length(traits, len(arr), fail)
		m := v.shapes[target].Member
		for i, e := range arr {
			v.check(m.Target, m.Traits, e, fmt.Sprintf("%s[%d]", path, i), errs)
		}
	case "map":
		obj, ok := val.(map[string]any)
		if !ok {
			fail("want an object for map %s", short(target))
			return
		}
		v.length(traits, len(obj), fail)
		sh := v.shapes[target]
		for k, e := range obj {
			v.check(sh.Key.Target, sh.Key.Traits, k, path+".<key "+k+">", errs)
			v.check(sh.Value.Target, sh.Value.Traits, e, path+"."+k, errs)
		}
	case "enum":
		s, ok := val.(string)
		if !ok {
			fail("want a string for enum %s", short(target))
			return
		}
		var values []string
		for _, m := range v.shapes[target].Members {
			var ev string
			if json.Unmarshal(m.Traits["smithy.api#enumValue"], &ev) == nil {
				values = append(values, ev)
			}
		}
		if !slices.Contains(values, s) {
			fail("%q is not a value of %s %v", s, short(target), values)
		}
	case "string":
		s, ok := val.(string)
		if !ok {
			fail("want a string for %s", short(target))
			return
		}
		v.length(traits, utf8.RuneCountInString(s), fail)
		v.pattern(traits, s, fail)
	case "blob":
		s, ok := val.(string)
		if !ok {
			fail("want a base64 string for blob %s", short(target))
			return
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			fail("blob is not base64: %v", err)
			return
		}
		v.length(traits, len(b), fail)
	case "boolean":
		if _, ok := val.(bool); !ok {
			fail("want a boolean")
		}
	case "byte", "short", "integer", "long", "intEnum", "bigInteger":
		n, ok := val.(json.Number)
		if !ok {
			fail("want an integer for %s", short(target))
			return
		}
		if _, err := n.Int64(); err != nil {
			fail("%s is not an integer", n)
			return
		}
		f, _ := n.Float64()
		v.rangeCheck(traits, f, fail)
	case "float", "double", "bigDecimal":
		n, ok := val.(json.Number)
		if !ok {
			fail("want a number for %s", short(target))
			return
		}
		f, _ := n.Float64()
		v.rangeCheck(traits, f, fail)
	case "timestamp":
		switch val.(type) {
		case string, json.Number:
		default:
			fail("want a timestamp")
		}
	case "document":
	default:
		fail("unknown shape type %q of %s", typ, target)
	}
}

// resolve returns the type and a copy of the traits of a shape id,
// including the smithy.api prelude's simple types.
func (v *smithyValidator) resolve(target string) (string, map[string]json.RawMessage) {
	if p, ok := strings.CutPrefix(target, "smithy.api#"); ok {
		switch p {
		case "String":
			return "string", nil
		case "Integer", "PrimitiveInteger":
			return "integer", nil
		case "Long", "PrimitiveLong":
			return "long", nil
		case "Short", "Byte":
			return "short", nil
		case "Float", "PrimitiveFloat":
			return "float", nil
		case "Double", "PrimitiveDouble":
			return "double", nil
		case "Boolean", "PrimitiveBoolean":
			return "boolean", nil
		case "Blob":
			return "blob", nil
		case "Document":
			return "document", nil
		case "Timestamp":
			return "timestamp", nil
		}
		return "unknown:" + p, nil
	}
	sh, ok := v.shapes[target]
	if !ok {
		return "unknown:" + target, nil
	}
	traits := make(map[string]json.RawMessage, len(sh.Traits))
	for k, t := range sh.Traits {
		traits[k] = t
	}
	return sh.Type, traits
}

// httpBound reports whether a member is serialised outside the body.
func httpBound(traits map[string]json.RawMessage) (string, bool) {
	for _, t := range []string{"smithy.api#httpLabel", "smithy.api#httpHeader", "smithy.api#httpQuery", "smithy.api#httpPrefixHeaders", "smithy.api#httpQueryParams"} {
		if _, ok := traits[t]; ok {
			return strings.TrimPrefix(t, "smithy.api#"), true
		}
	}
	return "", false
}

func (v *smithyValidator) length(traits map[string]json.RawMessage, n int, fail func(string, ...any)) {
	raw, ok := traits["smithy.api#length"]
	if !ok {
		return
	}
	var l struct{ Min, Max *float64 }
	_ = json.Unmarshal(raw, &l)
	if l.Min != nil && float64(n) < *l.Min {
		fail("length %d below the minimum %v", n, *l.Min)
	}
	if l.Max != nil && float64(n) > *l.Max {
		fail("length %d above the maximum %v", n, *l.Max)
	}
}

func (v *smithyValidator) rangeCheck(traits map[string]json.RawMessage, f float64, fail func(string, ...any)) {
	raw, ok := traits["smithy.api#range"]
	if !ok {
		return
	}
	var r struct{ Min, Max *float64 }
	_ = json.Unmarshal(raw, &r)
	if r.Min != nil && f < *r.Min {
		fail("%v below the minimum %v", f, *r.Min)
	}
	if r.Max != nil && f > *r.Max {
		fail("%v above the maximum %v", f, *r.Max)
	}
}

// pattern applies a pattern trait. Smithy patterns are ECMA 262; those Go's
// RE2 cannot compile are not checked.
func (v *smithyValidator) pattern(traits map[string]json.RawMessage, s string, fail func(string, ...any)) {
	raw, ok := traits["smithy.api#pattern"]
	if !ok {
		return
	}
	var p string
	if json.Unmarshal(raw, &p) != nil {
		return
	}
	v.mu.Lock()
	re, seen := v.patterns[p]
	if !seen {
		re, _ = regexp.Compile(p)
		v.patterns[p] = re
	}
	v.mu.Unlock()
	if re != nil && !re.MatchString(s) {
		fail("%q does not match the pattern %s", s, p)
	}
}

// TestSmithyValidator checks the validator itself on hand-made bodies.
func TestSmithyValidator(t *testing.T) {
	v := converseValidator(t)
	for _, tc := range []struct {
		name, body string
		wantErr    string
	}{
		{"minimal", `{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`, ""},
		{"missing content", `{"messages":[{"role":"user"}]}`, "missing required member content"},
		{"bad role", `{"messages":[{"role":"system","content":[{"text":"hi"}]}]}`, "is not a value of ConversationRole"},
		{"two union members", `{"messages":[{"role":"user","content":[{"text":"hi","cachePoint":{"type":"default"}}]}]}`, "exactly one member"},
		{"unknown member", `{"messages":[],"temperature":0.5}`, "unknown member temperature"},
		{"temperature range", `{"messages":[],"inferenceConfig":{"temperature":1.5}}`, "above the maximum 1"},
		{"maxTokens integer", `{"messages":[],"inferenceConfig":{"maxTokens":1.5}}`, "not an integer"},
		{"tool name pattern", `{"messages":[],"toolConfig":{"tools":[{"toolSpec":{"name":"get weather","inputSchema":{"json":{}}}}]}}`, "does not match the pattern"},
		{"empty tools", `{"messages":[],"toolConfig":{"tools":[]}}`, "below the minimum 1"},
		{"blob", `{"messages":[{"role":"user","content":[{"image":{"format":"png","source":{"bytes":"!!"}}}]}]}`, "not base64"},
		{"modelId is a label", `{"modelId":"x","messages":[]}`, "belongs in the httpLabel"},
		{"metadata pattern", `{"messages":[],"requestMetadata":{"user":"a<b"}}`, "does not match the pattern"},
		{"document anything", `{"messages":[],"additionalModelRequestFields":{"thinking":{"type":"enabled","budget_tokens":1024}}}`, ""},
		{"skipped newer member", `{"messages":[],"outputConfig":{"anything":1}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := v.validate("ConverseRequest", []byte(tc.body))
			got := strings.Join(errs, "; ")
			if tc.wantErr == "" && len(errs) > 0 {
				t.Fatalf("unexpected errors: %s", got)
			}
			if tc.wantErr != "" && !strings.Contains(got, tc.wantErr) {
				t.Fatalf("errors %q, want one containing %q", got, tc.wantErr)
			}
		})
	}
}
