package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// Error is a request validation failure; Param names the field with a
// JSON-path-like name ("temperature", "messages[2].role",
// "tools[0].function.name", "response_format.json_schema.name"). The
// gateway turns it into a 400 invalid_request_error whose param, code and
// message are these fields (API.md §2), so Message is safe to show a client:
// it starts with Param and never echoes more than a short prefix of input.
type Error struct {
	Param, Code, Message string
}

// Error returns Message.
func (e *Error) Error() string { return e.Message }

// Codes of Error. They are part of the API (the error body's "code"), so
// they never change.
const (
	// CodeInvalidJSON: the body is empty, not JSON, or not a JSON object.
	CodeInvalidJSON = "invalid_json"
	// CodeInvalidType: a known field has the wrong JSON type.
	CodeInvalidType = "invalid_type"
	// CodeMissingRequired: a required field is absent, null or empty.
	CodeMissingRequired = "missing_required"
	// CodeInvalidValue: a field is out of bounds or has a disallowed value.
	CodeInvalidValue = "invalid_value"
)

// Bounds of SPEC.md "Limits".
const (
	maxN           = 128
	maxStop        = 4
	maxTools       = 128
	maxFunctions   = 128
	maxTopLogprobs = 20
	maxLogitBias   = 100
	maxNameLen     = 64
)

// DecodeChatRequest decodes and validates a chat completion body.
//
// The body is read once, by a walk (unmarshal.go) that checks the JSON
// grammar as encoding/json does and fills the typed fields with the values
// encoding/json would produce. Object keys match field names exactly, not
// case-insensitively as encoding/json also did; other keys are ignored here
// and reach OpenAI-compatible providers because the gateway forwards the
// original bytes. Every bound of SPEC.md is then checked and the first
// failure, in the field order of ChatRequest, is returned as an *Error, so
// the same body always yields the same error.
func DecodeChatRequest(body []byte) (*ChatRequest, error) {
	switch jsonKind(body) {
	case 'o':
	case 0:
		if len(bytes.TrimSpace(body)) == 0 {
			return nil, &Error{Code: CodeInvalidJSON, Message: "request body is empty"}
		}
		return nil, syntaxError(body)
	default:
		if !json.Valid(body) {
			return nil, syntaxError(body)
		}
		return nil, &Error{Code: CodeInvalidJSON, Message: "request body must be a JSON object, got " + describe(body)}
	}
	req, e, valid := decodeRequest(body)
	if !valid {
		return nil, syntaxError(body)
	}
	if e != nil {
		return nil, e
	}
	v := validator{body: body}
	if e := v.request(req); e != nil {
		return nil, e
	}
	return req, nil
}

// decodeRequest decodes a body whose first non-space byte is '{'. It is
// decodeValue written out, so that the decoder stays on the stack.
func decodeRequest(body []byte) (r *ChatRequest, e *Error, valid bool) {
	defer catchSyntax(&valid, &e)
	d := decoder{data: body, i: skipSpace(body, 0)}
	b := new(requestBlock)
	e = d.request(b)
	return &b.req, e, d.end()
}

// syntaxError reports malformed JSON with the offset encoding/json gives,
// so a client can find the mistake without the body being echoed. Only
// this error path runs encoding/json's scanner.
func syntaxError(body []byte) *Error {
	var syn *json.SyntaxError
	errors.As(json.Unmarshal(body, new(json.RawMessage)), &syn)
	msg := "request body is not valid JSON"
	if syn != nil {
		msg += ": " + syn.Error() + " (at byte " + strconv.FormatInt(syn.Offset, 10) + ")"
	}
	return &Error{Code: CodeInvalidJSON, Message: msg}
}

// validator checks a decoded request. body is the original JSON, consulted
// only to explain a failure (a null array element decodes to a zero struct,
// and a string "" and an empty object decode alike).
type validator struct {
	body []byte
}

// rawIs reports whether the value at a gjson path of the body has JSON
// type typ. Paths use the exact key spelling, as the decoder does.
func (v *validator) rawIs(path string, typ gjson.Type) bool {
	if v.body == nil {
		return false
	}
	r := gjson.GetBytes(v.body, path)
	return r.Exists() && r.Type == typ
}

// nullElement builds the error for an array element that was null, when it
// was; encoding/json leaves such an element as a zero struct.
func (v *validator) nullElement(param, path string) *Error {
	if v.rawIs(path, gjson.Null) {
		return typeError(param, "an object", []byte("null"))
	}
	return nil
}

func (v *validator) request(r *ChatRequest) *Error {
	if r.Model == "" {
		return missing("model", "is required and must be a non-empty string")
	}
	if r.Messages == nil {
		return missing("messages", "is required and must be an array with at least 1 message")
	}
	if len(r.Messages) == 0 {
		return invalid("messages", "must have at least 1 message, got 0")
	}
	for i := range r.Messages {
		if e := v.message(&r.Messages[i], i); e != nil {
			return e
		}
	}
	if e := checkFloat("frequency_penalty", r.FrequencyPenalty, -2, 2); e != nil {
		return e
	}
	if e := checkFloat("presence_penalty", r.PresencePenalty, -2, 2); e != nil {
		return e
	}
	if e := checkLogitBias(r.LogitBias); e != nil {
		return e
	}
	if r.TopLogprobs != nil {
		if e := checkInt("top_logprobs", r.TopLogprobs, 0, maxTopLogprobs); e != nil {
			return e
		}
		if r.Logprobs == nil || !*r.Logprobs {
			return invalid("top_logprobs", "is only allowed when logprobs is true")
		}
	}
	if e := checkMin("max_tokens", r.MaxTokens, 1); e != nil {
		return e
	}
	if e := checkMin("max_completion_tokens", r.MaxCompletionTokens, 1); e != nil {
		return e
	}
	if e := checkInt("n", r.N, 1, maxN); e != nil {
		return e
	}
	if e := checkResponseFormat(r.ResponseFormat); e != nil {
		return e
	}
	if r.Stop != nil && (len(r.Stop) < 1 || len(r.Stop) > maxStop) {
		return invalid("stop", "must be a string or an array of 1 to 4 strings, got "+strconv.Itoa(len(r.Stop))+" items")
	}
	if t := r.Thinking; t != nil {
		switch t.Type {
		case "":
			return missing("thinking.type", `is required: "enabled" or "disabled"`)
		case "enabled", "disabled":
		default:
			return invalid("thinking.type", `must be "enabled" or "disabled", got `+quote(t.Type))
		}
		if e := checkMin("thinking.budget_tokens", t.BudgetTokens, 1); e != nil {
			return e
		}
	}
	if e := checkFloat("temperature", r.Temperature, 0, 2); e != nil {
		return e
	}
	if e := checkFloat("top_p", r.TopP, 0, 1); e != nil {
		return e
	}
	if len(r.Tools) > maxTools {
		return invalid("tools", "must have at most 128 tools, got "+strconv.Itoa(len(r.Tools)))
	}
	for i := range r.Tools {
		if e := v.tool(&r.Tools[i], i); e != nil {
			return e
		}
	}
	if e := v.toolChoice(r.ToolChoice, r.Tools); e != nil {
		return e
	}
	// functions is checked before function_call, which refers to it.
	if r.Functions != nil && (len(r.Functions) < 1 || len(r.Functions) > maxFunctions) {
		return invalid("functions", "must have 1 to 128 functions, got "+strconv.Itoa(len(r.Functions)))
	}
	for i := range r.Functions {
		if e := v.functionDef(&r.Functions[i], "functions", i); e != nil {
			return e
		}
	}
	if e := v.functionCall(r.FunctionCall, r.Functions); e != nil {
		return e
	}
	for _, f := range []struct {
		name string
		raw  *json.RawMessage
	}{
		{"audio", &r.Audio},
		{"prediction", &r.Prediction},
		{"prompt_cache_options", &r.PromptCacheOptions},
		{"web_search_options", &r.WebSearchOptions},
	} {
		if e := checkObject(f.name, f.raw); e != nil {
			return e
		}
	}
	nullToNil(&r.Moderation)
	return nil
}

// message checks messages[i]. Params are built only on failure: this runs
// for every message of every request.
func (v *validator) message(m *Message, i int) *Error {
	if m.Role == "" {
		p := indexParam("messages", i)
		if e := v.nullElement(p, "messages."+strconv.Itoa(i)); e != nil {
			return e
		}
		return missing(p+".role", "is required")
	}
	// allowed lists the content part types OpenAI accepts for the role;
	// parts of types this package does not model pass to the provider.
	var allowed []string
	switch m.Role {
	case RoleSystem, RoleDeveloper, RoleTool:
		allowed = []string{PartText}
	case RoleUser:
		allowed = []string{PartText, PartImageURL, PartInputAudio, PartFile}
	case RoleAssistant:
		allowed = []string{PartText, PartRefusal}
	case RoleFunction:
		if m.Content.Kind == ContentParts {
			return typeError(msgParam(i, ".content"), "a string or null in a function message", []byte("[]"))
		}
	default:
		return invalid(msgParam(i, ".role"), "must be one of system, developer, user, assistant, tool, function, got "+quote(m.Role))
	}
	switch m.Content.Kind {
	case ContentNull:
		// An assistant message that calls tools (or replays a refusal or
		// audio answer) has no content; every other role needs some.
		ok := m.Role == RoleFunction || m.Role == RoleAssistant &&
			(len(m.ToolCalls) > 0 || m.FunctionCall != nil || m.Refusal != "" || len(m.Audio) > 0 && string(m.Audio) != "null")
		if !ok {
			return missing(msgParam(i, ".content"), "is required for "+m.Role+" messages")
		}
	case ContentParts:
		if len(m.Content.Parts) == 0 {
			return invalid(msgParam(i, ".content"), "must have at least 1 content part, got 0")
		}
		for j := range m.Content.Parts {
			if e := contentPart(&m.Content.Parts[j], i, j, m.Role, allowed); e != nil {
				return e
			}
		}
	}
	for k := range m.ToolCalls {
		tc := &m.ToolCalls[k]
		tp := func() string { return indexParam(msgParam(i, ".tool_calls"), k) }
		if tc.ID == "" {
			tp := tp()
			if e := v.nullElement(tp, "messages."+strconv.Itoa(i)+".tool_calls."+strconv.Itoa(k)); e != nil {
				return e
			}
			return missing(tp+".id", "is required")
		}
		if tc.Type != "" && tc.Type != "function" {
			return invalid(tp()+".type", `must be "function", got `+quote(tc.Type))
		}
		if tc.Function.Name == "" {
			return missing(tp()+".function.name", "is required")
		}
	}
	if m.FunctionCall != nil && m.FunctionCall.Name == "" {
		return missing(msgParam(i, ".function_call.name"), "is required")
	}
	switch m.Role {
	case RoleTool:
		if m.ToolCallID == "" {
			return missing(msgParam(i, ".tool_call_id"), "is required for tool messages")
		}
	case RoleFunction:
		if m.Name == "" {
			return missing(msgParam(i, ".name"), "is required for function messages")
		}
	}
	nullToNil(&m.Audio)
	return nil
}

// msgParam names a field of messages[i].
func msgParam(i int, field string) string {
	return indexParam("messages", i) + field
}

// contentPart checks part j of the content of messages[i].
func contentPart(c *ContentPart, i, j int, role string, allowed []string) *Error {
	p := func() string { return indexParam(msgParam(i, ".content"), j) }
	switch c.Type {
	case "":
		return missing(p()+".type", "is required")
	case PartText, PartRefusal:
	case PartImageURL:
		if c.ImageURL == nil {
			return missing(p()+".image_url", "is required for image_url parts")
		}
		if c.ImageURL.URL == "" {
			return missing(p()+".image_url.url", "is required")
		}
	case PartInputAudio:
		if c.InputAudio == nil {
			return missing(p()+".input_audio", "is required for input_audio parts")
		}
		if c.InputAudio.Data == "" {
			return missing(p()+".input_audio.data", "is required")
		}
		if c.InputAudio.Format == "" {
			return missing(p()+".input_audio.format", "is required")
		}
	case PartFile:
		if c.File == nil || c.File.FileID == "" && c.File.FileData == "" {
			return missing(p()+".file", "must have file_id or file_data")
		}
	default:
		return nil
	}
	for _, a := range allowed {
		if a == c.Type {
			nullToNil(&c.CacheControl)
			return nil
		}
	}
	return invalid(p()+".type", quote(c.Type)+" parts are not allowed in "+role+" messages")
}

func (v *validator) tool(t *Tool, i int) *Error {
	switch t.Type {
	case "":
		p := indexParam("tools", i)
		if e := v.nullElement(p, "tools."+strconv.Itoa(i)); e != nil {
			return e
		}
		return missing(p+".type", `is required and must be "function"`)
	case "function":
	default:
		return invalid(indexParam("tools", i)+".type", `must be "function" (the only tool type supported), got `+quote(t.Type))
	}
	return v.functionDef(&t.Function, "tools", i)
}

// functionDef checks tools[i].function or functions[i], as list says.
func (v *validator) functionDef(f *FunctionDef, list string, i int) *Error {
	if validName(f.Name) && (f.Parameters == nil || jsonKind(f.Parameters) == 'o') {
		return nil
	}
	p := indexParam(list, i)
	if list == "tools" {
		p += ".function"
	} else if f.Name == "" {
		if e := v.nullElement(p, list+"."+strconv.Itoa(i)); e != nil {
			return e
		}
	}
	if e := checkName(p+".name", f.Name); e != nil {
		return e
	}
	return checkObject(p+".parameters", &f.Parameters)
}

func (v *validator) toolChoice(c *ToolChoice, tools []Tool) *Error {
	if c == nil {
		return nil
	}
	if c.Mode != "" || c.Type == "" && v.rawIs("tool_choice", gjson.String) {
		switch c.Mode {
		case "none", "auto", "required":
			return nil
		}
		return invalid("tool_choice", "must be one of none, auto, required or an object, got "+quote(c.Mode))
	}
	switch c.Type {
	case "":
		return missing("tool_choice.type", `is required: "function" or "allowed_tools"`)
	case "function":
		name := ""
		if c.Function != nil {
			name = c.Function.Name
		}
		if e := checkName("tool_choice.function.name", name); e != nil {
			return e
		}
		for i := range tools {
			if tools[i].Function.Name == name {
				return nil
			}
		}
		return invalid("tool_choice.function.name", "names "+quote(name)+", which is not one of tools")
	case "allowed_tools":
		if nullToNil(&c.AllowedTools); c.AllowedTools == nil {
			return missing("tool_choice.allowed_tools", "is required for allowed_tools")
		}
		return checkObject("tool_choice.allowed_tools", &c.AllowedTools)
	}
	return invalid("tool_choice.type", `must be "function" or "allowed_tools", got `+quote(c.Type))
}

func (v *validator) functionCall(c *FunctionCallChoice, funcs []FunctionDef) *Error {
	if c == nil {
		return nil
	}
	if c.Mode != "" || c.Name == "" && v.rawIs("function_call", gjson.String) {
		if c.Mode == "none" || c.Mode == "auto" {
			return nil
		}
		return invalid("function_call", `must be "none", "auto" or an object with a name, got `+quote(c.Mode))
	}
	if e := checkName("function_call.name", c.Name); e != nil {
		return e
	}
	for i := range funcs {
		if funcs[i].Name == c.Name {
			return nil
		}
	}
	return invalid("function_call.name", "names "+quote(c.Name)+", which is not one of functions")
}

func checkResponseFormat(f *ResponseFormat) *Error {
	if f == nil {
		return nil
	}
	switch f.Type {
	case "":
		return missing("response_format.type", "is required: text, json_object or json_schema")
	case "text", "json_object":
		return nil
	case "json_schema":
		s := f.JSONSchema
		if s == nil {
			return missing("response_format.json_schema", "is required when type is json_schema")
		}
		if e := checkName("response_format.json_schema.name", s.Name); e != nil {
			return e
		}
		return checkObject("response_format.json_schema.schema", &s.Schema)
	}
	return invalid("response_format.type", "must be one of text, json_object, json_schema, got "+quote(f.Type))
}

// checkLogitBias checks keys and values. Map order is random, so the
// smallest offending key is reported to keep errors deterministic.
func checkLogitBias(m map[string]int) *Error {
	var bad []string
	for k, val := range m {
		if !isDigits(k) || val < -maxLogitBias || val > maxLogitBias {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	slices.Sort(bad)
	k := bad[0]
	if !isDigits(k) {
		return invalid("logit_bias", "keys must be token ids (strings of digits), got "+quote(k))
	}
	p := "logit_bias." + truncate(k, 64)
	return invalid(p, "must be "+boundText(p)+", got "+strconv.Itoa(m[k]))
}

// boundText describes the numeric bound of a field, shared by the validator
// and by the error for a number too large to decode at all.
func boundText(param string) string {
	switch param {
	case "frequency_penalty", "presence_penalty":
		return "between -2 and 2"
	case "temperature":
		return "between 0 and 2"
	case "top_p":
		return "between 0 and 1"
	case "n":
		return "between 1 and 128"
	case "top_logprobs":
		return "between 0 and 20"
	case "max_tokens", "max_completion_tokens", "thinking.budget_tokens":
		return "at least 1"
	}
	if strings.HasPrefix(param, "logit_bias.") {
		return "between -100 and 100"
	}
	return ""
}

func checkFloat(param string, v *float64, lo, hi float64) *Error {
	if v == nil || *v >= lo && *v <= hi {
		return nil
	}
	return invalid(param, "must be "+boundText(param)+", got "+strconv.FormatFloat(*v, 'g', -1, 64))
}

func checkInt(param string, v *int, lo, hi int) *Error {
	if v == nil || *v >= lo && *v <= hi {
		return nil
	}
	return invalid(param, "must be "+boundText(param)+", got "+strconv.Itoa(*v))
}

func checkMin(param string, v *int, lo int) *Error {
	if v == nil || *v >= lo {
		return nil
	}
	return invalid(param, "must be "+boundText(param)+", got "+strconv.Itoa(*v))
}

// checkName checks a function or schema name against
// ^[a-zA-Z0-9_-]{1,64}$ (SPEC.md "Limits").
func checkName(param, name string) *Error {
	if name == "" {
		return missing(param, "is required")
	}
	if !validName(name) {
		return invalid(param, "must match ^[a-zA-Z0-9_-]{1,64}$, got "+quote(name))
	}
	return nil
}

func validName(s string) bool {
	if len(s) == 0 || len(s) > maxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// checkObject requires an opaque field, when present, to be a JSON object,
// and clears an explicit null so translators can test len(raw) > 0.
func checkObject(param string, raw *json.RawMessage) *Error {
	nullToNil(raw)
	if *raw == nil || jsonKind(*raw) == 'o' {
		return nil
	}
	return typeError(param, "an object", *raw)
}

// nullToNil clears a raw value that is JSON null: encoding/json hands null
// to json.RawMessage verbatim instead of leaving it empty.
func nullToNil(raw *json.RawMessage) {
	if len(*raw) == 4 && string(*raw) == "null" {
		*raw = nil
	}
}

func missing(param, msg string) *Error {
	return &Error{Param: param, Code: CodeMissingRequired, Message: joinMsg(param, msg)}
}

func invalid(param, msg string) *Error {
	return &Error{Param: param, Code: CodeInvalidValue, Message: joinMsg(param, msg)}
}

// typeError reports a value of the wrong JSON type: "temperature: must be a
// number, got string".
func typeError(param, want string, raw []byte) *Error {
	return &Error{Param: param, Code: CodeInvalidType, Message: joinMsg(param, "must be "+want+", got "+describe(raw))}
}

// joinMsg prefixes a message with the field it is about.
func joinMsg(param, msg string) string {
	if param == "" {
		return "request body " + msg
	}
	return param + ": " + msg
}

// describe names the JSON type of raw; numbers are shown (truncated) since
// "got 1.5" explains an integer field's failure better than "got number".
func describe(raw []byte) string {
	switch jsonKind(raw) {
	case 'n':
		return "null"
	case 's':
		return "string"
	case 'o':
		return "object"
	case 'a':
		return "array"
	case 'b':
		return "boolean"
	case 'd':
		return truncate(string(bytes.TrimSpace(raw)), 40)
	}
	return "invalid JSON"
}

// quote quotes a client-supplied string for a message, truncated so an
// error never echoes a large input.
func quote(s string) string {
	return strconv.Quote(truncate(s, 40))
}

// truncate shortens s to at most n runes, marking the cut with "...".
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i, count := 0, 0
	for i < len(s) && count < n {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		count++
	}
	if i >= len(s) {
		return s
	}
	return s[:i] + "..."
}
