package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// decodeSeeds are bodies for the fuzz tests of this file: every kind of
// field, accepted and rejected.
var decodeSeeds = []string{
	benchBody,
	body(""),
	msgs(`[{"role":"system","content":"be terse"},{"role":"user","content":"hi"}]`),
	msgs(`[{"role":"user","content":[{"type":"text","text":"what is this?","cache_control":{"type":"ephemeral"}},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo=","detail":"low"}}]}]`),
	msgs(`[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}},{"type":"file","file":{"file_id":"file-1","filename":"a"}},{"type":"input_video","v":1}]}]`),
	msgs(`[{"role":"assistant","content":null,"refusal":"no","reasoning":"r","reasoning_content":"c","audio":{"id":"a"}},{"role":"function","name":"f","content":null}]`),
	msgs(`[{"role":"assistant","function_call":{"name":"f","arguments":"{}"}},{"role":"tool","tool_call_id":"c","content":"x"}]`),
	body(`"n":2,"logprobs":true,"top_logprobs":5,"logit_bias":{"50256":-100,"1":null},"seed":-9223372036854775808`),
	body(`"response_format":{"type":"json_schema","json_schema":{"name":"out","description":"d","schema":{"type":"object"},"strict":true}}`),
	body(`"tools":` + tools(2) + `,"tool_choice":{"type":"function","function":{"name":"f1"}},"parallel_tool_calls":false`),
	body(`"tools":` + tools(1) + `,"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[]}}`),
	body(`"functions":` + functions(2) + `,"function_call":{"name":"f0"}`),
	body(`"thinking":{"type":"enabled","budget_tokens":2048},"max_completion_tokens":4096,"max_tokens":10,"reasoning_effort":"high"`),
	body(`"stop":"END","stream":true,"stream_options":{"include_usage":true,"include_obfuscation":null},"metadata":{"k":"v","n":null},"audio":{"voice":"alloy"}`),
	body(`"frequency_penalty":-2,"presence_penalty":1.5e0,"temperature":0,"top_p":1,"store":false,"service_tier":"flex","modalities":["text",null]`),
	body(`"prediction":{},"prompt_cache_key":"k","prompt_cache_retention":"24h","prompt_cache_options":{},"safety_identifier":"s","verbosity":"low","web_search_options":{},"moderation":null`),
	msgs(`[{"role":"user","content":"esc \"q\" \\ \/ \b\f\n\r\t \u00e9 \ud83d\ude00 \ud800 \udc00x \ud800\u0041"}]`),
	"{\"model\":\"m\xff\",\"messages\":[{\"role\":\"user\",\"content\":\"bad \xc3\x28 \xed\xa0\x80 utf8\"}],\"user\":\"\xe2\x82\"}",
	body("\"metadata\":{\"\xfc\":\"v\",\"k\\u00e9\":\"w\"}"),
	body("\"logit_bias\":{\"\xfc\":0}"),
	`{"mod\u0065l":"m","messages":[{"role":"user","content":"hi"}],"x":{"deep":[[[{"a":null}]]]}}`,
	body(`"temperature":"x","n":0`),
	`{"model":"m","messages":[null],"tools":[null]}`,
	`{"model":"m","messages":[{"role":"user","content":[null,{"text":5}]}],"seed":1e3}`,
	`{"model":"m" "messages":[]}`,
	`{"model":"m",}`,
	`[]`,
	``,
}

// FuzzDecodeMatchesEncodingJSON checks the walker against encoding/json:
// a body it accepts must be valid JSON that encoding/json decodes, with the
// validator applied, into the same struct; and it must call a body
// malformed exactly when json.Valid does. Bodies with a repeated key or a
// key that differs from a field name only by case are left out of the
// struct comparison: encoding/json matched keys case-insensitively, and the
// reference below reads custom-typed fields from a last-wins raw copy.
func FuzzDecodeMatchesEncodingJSON(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := DecodeChatRequest(data)
		var e *Error
		if err != nil && !errors.As(err, &e) {
			t.Fatalf("error %v is %T, not *Error", err, err)
		}
		if trimmed := bytes.TrimLeft(data, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '{' {
			if malformed := e != nil && e.Code == CodeInvalidJSON; malformed == json.Valid(data) {
				t.Fatalf("%q: decoder says malformed=%v, json.Valid says %v (%v)", data, malformed, json.Valid(data), err)
			}
		}
		if err != nil || !plainKeys(data) {
			return
		}
		want := referenceDecode(t, data)
		if diff := cmp.Diff(want, req); diff != "" {
			t.Fatalf("decode of %q differs from encoding/json (-want +got):\n%s", data, diff)
		}
	})
}

// referenceDecode decodes an accepted body with encoding/json alone and
// validates it. The four fields whose types have UnmarshalJSON methods
// (which use the walker) are decoded again here from their raw JSON into
// method-free types, so that the comparison does not depend on the walker.
func referenceDecode(t *testing.T, data []byte) *ChatRequest {
	t.Helper()
	var r ChatRequest
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("accepted body %q rejected by encoding/json: %v", data, err)
	}
	var raw struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Stop         json.RawMessage `json:"stop"`
		ToolChoice   json.RawMessage `json:"tool_choice"`
		FunctionCall json.RawMessage `json:"function_call"`
	}
	mustUnmarshal(t, data, &raw)
	for i := range r.Messages {
		r.Messages[i].Content = refContent(t, raw.Messages[i].Content)
	}
	r.Stop = nil
	if isPresent(raw.Stop) {
		if raw.Stop[0] == '"' {
			var s string
			mustUnmarshal(t, raw.Stop, &s)
			r.Stop = Stop{s}
		} else {
			mustUnmarshal(t, raw.Stop, (*[]string)(&r.Stop))
		}
	}
	r.ToolChoice = nil
	if isPresent(raw.ToolChoice) {
		r.ToolChoice = new(ToolChoice)
		if raw.ToolChoice[0] == '"' {
			mustUnmarshal(t, raw.ToolChoice, &r.ToolChoice.Mode)
		} else {
			var w toolChoiceObject
			mustUnmarshal(t, raw.ToolChoice, &w)
			r.ToolChoice.Type, r.ToolChoice.Function, r.ToolChoice.AllowedTools = w.Type, w.Function, w.AllowedTools
		}
	}
	r.FunctionCall = nil
	if isPresent(raw.FunctionCall) {
		r.FunctionCall = new(FunctionCallChoice)
		if raw.FunctionCall[0] == '"' {
			mustUnmarshal(t, raw.FunctionCall, &r.FunctionCall.Mode)
		} else {
			var w FunctionName
			mustUnmarshal(t, raw.FunctionCall, &w)
			r.FunctionCall.Name = w.Name
		}
	}
	v := validator{body: data}
	if e := v.request(&r); e != nil {
		t.Fatalf("accepted body %q fails validation after encoding/json: %v", data, e)
	}
	return &r
}

// refContent decodes message content with encoding/json alone.
func refContent(t *testing.T, raw json.RawMessage) MessageContent {
	t.Helper()
	if !isPresent(raw) {
		return MessageContent{}
	}
	if raw[0] == '"' {
		var s string
		mustUnmarshal(t, raw, &s)
		return TextContent(s)
	}
	var elems []json.RawMessage
	mustUnmarshal(t, raw, &elems)
	parts := make([]ContentPart, len(elems))
	for i, el := range elems {
		type plain ContentPart // without the methods
		mustUnmarshal(t, el, (*plain)(&parts[i]))
		if !knownPartType(parts[i].Type) {
			parts[i].Raw = append(json.RawMessage(nil), el...)
		}
	}
	return PartsContent(parts...)
}

func isPresent(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

func mustUnmarshal(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("encoding/json: %s: %v", data, err)
	}
}

// fieldNames holds the JSON names of every field the walker decodes.
var fieldNames = func() map[string]bool {
	m := map[string]bool{}
	for _, v := range []any{ChatRequest{}, Message{}, ContentPart{}, ImageURL{}, InputAudio{}, FilePart{}, ToolCall{},
		FunctionCall{}, Tool{}, FunctionDef{}, ResponseFormat{}, JSONSchemaFormat{}, StreamOptions{}, Thinking{},
		FunctionName{}, toolChoiceObject{}} {
		t := reflect.TypeOf(v)
		for i := range t.NumField() {
			if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
				m[name] = true
			}
		}
	}
	return m
}()

// plainKeys reports whether no object of valid JSON data repeats a key or
// has a key that equals a field name only when case is ignored.
func plainKeys(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		object, wantKey bool
		keys            map[string]bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return true
		}
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.wantKey {
			if k, ok := tok.(string); ok {
				if top.keys[k] {
					return false
				}
				top.keys[k] = true
				if !fieldNames[k] {
					for name := range fieldNames {
						if strings.EqualFold(name, k) {
							return false
						}
					}
				}
				top.wantKey = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, keys: map[string]bool{}})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value (or a closed container) was read: the enclosing object
		// wants a key next.
		if tok != json.Delim('{') && tok != json.Delim('[') && len(stack) > 0 {
			stack[len(stack)-1].wantKey = true
		}
		if tok == json.Delim('{') {
			stack[len(stack)-1].wantKey = true
		}
	}
}

// TestDecodeRepeatedKeys checks that a repeated key decodes over the
// earlier value as encoding/json does: objects, maps and array elements
// are merged, null clears pointers but not strings.
func TestDecodeRepeatedKeys(t *testing.T) {
	for _, in := range []string{
		body(`"stream_options":{"include_usage":true},"stream_options":{"include_obfuscation":false}`),
		body(`"metadata":{"a":"1","b":"2"},"metadata":{"b":"3"}`),
		body(`"logit_bias":{"1":1},"logit_bias":{"2":2,"1":null}`),
		body(`"temperature":1,"temperature":null,"top_p":0.5,"top_p":0.25`),
		body(`"user":"a","user":null,"model":"other"`),
		body(`"modalities":["a","b","c"],"modalities":[null,"x"]`),
		body(`"tools":[{"type":"function","function":{"name":"a","description":"d"}}],"tools":[{"function":{"name":"b"}}]`),
		`{"model":"m","messages":[{"role":"user","content":"a"},{"role":"user","content":"b"}],"messages":[{"name":"x"}]}`,
		`{"model":"m","messages":[{"role":"user","content":"a","content":null,"content":[{"type":"text","text":"t"}]}]}`,
		body(`"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":{}}},"response_format":{"json_schema":{"strict":true}}`),
	} {
		got, err := DecodeChatRequest([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		var want ChatRequest
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatal(err)
		}
		v := validator{body: []byte(in)}
		if e := v.request(&want); e != nil {
			t.Fatal(e)
		}
		if diff := cmp.Diff(&want, got); diff != "" {
			t.Errorf("%s (-encoding/json +got):\n%s", in, diff)
		}
	}
}

// TestDecodeKeysAreExact: keys match field names exactly, so a key in
// another case is an unknown field (encoding/json matched it).
func TestDecodeKeysAreExact(t *testing.T) {
	_, err := DecodeChatRequest([]byte(`{"Model":"m","messages":[{"role":"user","content":"hi"}]}`))
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeMissingRequired || e.Param != "model" {
		t.Fatalf("err = %v, want model missing", err)
	}
	req, err := DecodeChatRequest([]byte(body(`"Temperature":"ignored","TOOLS":5`)))
	if err != nil || req.Temperature != nil || req.Tools != nil {
		t.Fatalf("req = %+v, err = %v", req, err)
	}
}

// TestDecodeStrings checks that strings decode exactly as encoding/json
// decodes them: escapes, surrogate pairs, lone surrogates and invalid
// UTF-8 (each bad byte becomes U+FFFD).
func TestDecodeStrings(t *testing.T) {
	for _, s := range []string{
		`""`, `"plain"`, `"\"\\\/\b\f\n\r\t"`, `"\u0000\u001f\u00e9\u20ac"`, `"\ud83d\ude00"`,
		`"\ud800"`, `"\udc00"`, `"\ud800x"`, `"\ud800\u0041"`, `"\ud800\ud800\udc00"`, `"\ud83d\ude00\ude00"`,
		"\"\xff\"", "\"a\xc3\"", "\"\xc3\x28\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"", "\"\xe2\x82\"",
		"\"é ü 日本 \xf0\x9f\x98\x80\"", "\"long ascii run before an escape \\n and after\"",
		"\"\xff\\n\xfe\"", `"\u00e9` + strings.Repeat("x", 100) + `"`,
	} {
		var want string
		if err := json.Unmarshal([]byte(s), &want); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		req, err := DecodeChatRequest([]byte(msgs(`[{"role":"user","content":` + s + `}]`)))
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if got := req.Messages[0].Content.Text; got != want {
			t.Errorf("%q: got %q, want %q", s, got, want)
		}
	}
}

// TestDecodeMalformed checks that malformed bodies get encoding/json's
// syntax error, whatever type errors come before the mistake.
func TestDecodeMalformed(t *testing.T) {
	for _, in := range []string{
		`{"model":5,"messages":[}`,
		`{"model":"m","messages":[{"role":5,"content":"\x"}]}`,
		"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"a\x01\"}]}",
		`{"model":"m","temperature":01}`,
		`{"model":"m","temperature":1.}`,
		`{"model":"m","temperature":-}`,
		`{"model":"m","stream":tru}`,
		`{"model":"m","stream":nul}`,
		`{"model":"m","x":[1,]}`,
		`{"model":"m","messages":[1 2]}`,
		`{"model":"m","messages":[{"role":"user"}}`,
		`{"model":"m" "x":1}`,
		`{"model":"m",}`,
		`{"model":"m"`,
		`{"model":"m"} {}`,
		`{"model":"m","x":"\u12"}`,
		`{"model":"m","x":{"a" 1}}`,
		`{"model":"m","metadata":{"a":"b",}}`,
	} {
		if json.Valid([]byte(in)) {
			t.Fatalf("%s is valid JSON", in)
		}
		_, err := DecodeChatRequest([]byte(in))
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeInvalidJSON || !strings.Contains(e.Message, "(at byte ") {
			t.Errorf("%s: err = %v, want invalid_json with an offset", in, err)
		}
	}
}

// TestDecodeDeepNesting checks encoding/json's nesting limit, 10000 levels
// with the body object counted, and that a body of millions of '[' is
// rejected without a deep recursion.
func TestDecodeDeepNesting(t *testing.T) {
	nested := func(levels int) []byte {
		b := []byte(body(`"x":`))
		b = b[:len(b)-1]
		b = append(b, bytes.Repeat([]byte("["), levels)...)
		b = append(b, bytes.Repeat([]byte("]"), levels)...)
		return append(b, '}')
	}
	if _, err := DecodeChatRequest(nested(maxDepth - 1)); err != nil {
		t.Errorf("%d levels: %v", maxDepth, err)
	}
	if !json.Valid(nested(maxDepth - 1)) {
		t.Error("encoding/json rejects 10000 levels")
	}
	_, err := DecodeChatRequest(nested(maxDepth))
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeInvalidJSON || !strings.Contains(e.Message, "exceeded max depth") {
		t.Errorf("%d levels: err = %v, want exceeded max depth", maxDepth+1, err)
	}
	huge := append([]byte(`{"model":"m","x":`), bytes.Repeat([]byte("["), 8<<20)...)
	if _, err := DecodeChatRequest(huge); !errors.As(err, &e) || e.Code != CodeInvalidJSON {
		t.Errorf("8 MiB of '[': err = %v", err)
	}
}

// TestUnmarshalJSONMalformed: the UnmarshalJSON methods, which
// encoding/json calls only with valid JSON, report malformed input as
// invalid_json.
func TestUnmarshalJSONMalformed(t *testing.T) {
	for _, v := range []json.Unmarshaler{new(MessageContent), new(ToolChoice), new(FunctionCallChoice), new(Stop)} {
		for _, in := range []string{``, `"abc`, `[1,]`, `{"type":}`, `nul`, `"a" "b"`} {
			err := v.UnmarshalJSON([]byte(in))
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeInvalidJSON {
				t.Errorf("%T %q: err = %v, want invalid_json", v, in, err)
			}
		}
	}
}

// TestDecodeTypeErrors pins the Code, Param and Message of type errors at
// every depth; the expectations were produced by the encoding/json-based
// decoder this walker replaced.
func TestDecodeTypeErrors(t *testing.T) {
	tests := []struct{ body, code, param, message string }{
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},null]}]}`, "invalid_type", "messages[0].content[1]", "messages[0].content[1]: must be an object, got null"},
		{`{"model":"m","messages":[{"role":"user","content":[null,{"type":"text","text":5}]}]}`, "invalid_type", "messages[0].content[1].text", "messages[0].content[1].text: must be a string, got 5"},
		{`{"model":"m","messages":[{"role":"user","content":{"a":1}}]}`, "invalid_type", "messages[0].content", "messages[0].content: must be a string, an array of content parts or null, got object"},
		{`{"model":"m","messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":7}}]}]}`, "invalid_type", "messages[1].tool_calls[0].function.arguments", "messages[1].tool_calls[0].function.arguments: must be a string, got 7"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"logit_bias":{"50256":1.5}}`, "invalid_type", "logit_bias.50256", "logit_bias.50256: must be an integer, got 1.5"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"logit_bias":{"5\u0030":1e2}}`, "invalid_type", "logit_bias.50", "logit_bias.50: must be an integer, got 1e2"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"logit_bias":{"7":123456789012345678901234567890}}`, "invalid_value", "logit_bias.7", "logit_bias.7: must be between -100 and 100, got 123456789012345678901234567890"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"metadata":{"k":{"a":1}}}`, "invalid_type", "metadata.k", "metadata.k: must be a string, got object"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"stop":["a",true]}`, "invalid_type", "stop[1]", "stop[1]: must be a string, got boolean"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"stop":{}}`, "invalid_type", "stop", "stop: must be a string or an array of strings, got object"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"tool_choice":{"type":1,"function":{"name":2}}}`, "invalid_type", "tool_choice.type", "tool_choice.type: must be a string, got 1"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"tool_choice":{"function":"f"}}`, "invalid_type", "tool_choice.function", "tool_choice.function: must be an object, got string"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"function_call":{"name":[]}}`, "invalid_type", "function_call.name", "function_call.name: must be a string, got array"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"function_call":true}`, "invalid_type", "function_call", "function_call: must be a string or an object, got boolean"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"top_p":-1e999}`, "invalid_value", "top_p", "top_p: must be between 0 and 1, got -1e999"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"n":-99999999999999999999}`, "invalid_value", "n", "n: must be between 1 and 128, got -99999999999999999999"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"thinking":{"type":"enabled","budget_tokens":1.0}}`, "invalid_type", "thinking.budget_tokens", "thinking.budget_tokens: must be an integer, got 1.0"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":"s"}}`, "invalid_type", "response_format.json_schema", "response_format.json_schema: must be an object, got string"},
		{`{"model":"m","messages":[{"role":"user","content":"x","name":{}}],"temperature":[]}`, "invalid_type", "messages[0].name", "messages[0].name: must be a string, got object"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":1}}]}]}`, "invalid_type", "messages[0].content[0].image_url.url", "messages[0].content[0].image_url.url: must be a string, got 1"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":false}}]}]}`, "invalid_type", "messages[0].content[0].file.file_id", "messages[0].content[0].file.file_id: must be a string, got boolean"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":[]}]}]}`, "invalid_type", "messages[0].content[0].input_audio", "messages[0].content[0].input_audio: must be an object, got array"},
		{`{"model":"m","messages":[{"role":"assistant","function_call":"f"}]}`, "invalid_type", "messages[0].function_call", "messages[0].function_call: must be an object, got string"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":[]}]}`, "invalid_type", "tools[0].function", "tools[0].function: must be an object, got array"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"functions":[5]}`, "invalid_type", "functions[0]", "functions[0]: must be an object, got 5"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"modalities":[1]}`, "invalid_type", "modalities[0]", "modalities[0]: must be a string, got 1"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"seed":-1.5e3}`, "invalid_type", "seed", "seed: must be an integer, got -1.5e3"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"stream_options":{"include_obfuscation":0}}`, "invalid_type", "stream_options.include_obfuscation", "stream_options.include_obfuscation: must be a boolean, got 0"},
	}
	for _, tt := range tests {
		_, err := DecodeChatRequest([]byte(tt.body))
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("%s: err = %v", tt.body, err)
		}
		want := Error{Param: tt.param, Code: tt.code, Message: tt.message}
		if diff := cmp.Diff(want, *e); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.body, diff)
		}
	}
}
