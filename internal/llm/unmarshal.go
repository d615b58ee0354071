package llm

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/tidwall/gjson"
)

// This file decodes a body into ChatRequest in one walk of the decoder
// cursor (scan.go), with the results encoding/json would give: keys match
// field names exactly (see DecodeChatRequest), a repeated key decodes again
// over the earlier value (pointers, maps and slice elements are reused, as
// encoding/json reuses them), null leaves strings, numbers and structs
// unchanged and clears pointers, slices and maps, an empty array is a
// non-nil empty slice, and json.RawMessage fields get a copy of the value's
// bytes ("null" included). Numbers are parsed from their literal text, so
// integers never pass through a float64.
//
// A value of the wrong type is an *Error naming the exact field. When a body
// has several, the one reported is the first in the field order of the Go
// types, not in document order: an object reports the error of its
// lowest-numbered field (the first occurrence of that key that fails), an
// array or map that of its first failing element. That is the order in
// which the validator checks bounds, so a body always gets one answer.

// path names the value being decoded, for error messages only. Paths live
// on the stack and become a string only when an error is reported.
type path struct {
	up *path
	// Exactly one of these names the value within up: a field name, an
	// array index (index >= 0) or a map key as written (key != nil).
	name  string
	index int
	key   []byte
}

// at names field name of the object p names.
func at(p *path, name string) *path { return &path{up: p, name: name, index: -1} }

// elem names element i of the array p names.
func elem(p *path, i int) *path { return &path{up: p, index: i} }

// String renders a path as Params do: "messages[2].content[0].text".
func (p *path) String() string {
	if p == nil {
		return ""
	}
	return string(p.append(nil))
}

func (p *path) append(b []byte) []byte {
	if p.up != nil {
		b = p.up.append(b)
	}
	switch {
	case p.index >= 0:
		b = append(b, '[')
		b = strconv.AppendInt(b, int64(p.index), 10)
		return append(b, ']')
	case p.key != nil:
		// Map keys are shown as gjson reads them, truncated, as before.
		b = append(b, '.')
		return append(b, truncate(gjson.Parse(string(p.key)).Str, 64)...)
	}
	if len(b) > 0 {
		b = append(b, '.')
	}
	return append(b, p.name...)
}

// wrongType reports a value of the wrong JSON type at p, which the caller
// has not consumed yet.
func (d *decoder) wrongType(p *path, want string) *Error {
	raw := d.skip()
	return typeError(p.String(), want, raw)
}

// firstError keeps, of the errors of an object's members, the one of the
// lowest field number, and of equal numbers the earliest.
type firstError struct {
	err   *Error
	field int
}

func (f *firstError) add(field int, e *Error) {
	if e != nil && (f.err == nil || field < f.field) {
		f.err, f.field = e, field
	}
}

// object checks that the value at the cursor is an object and consumes its
// '{'. A null is consumed and reported as !ok with no error; any other type
// is reported as an error.
func (d *decoder) object(p *path) (ok bool, err *Error) {
	switch d.data[d.i] {
	case '{':
		d.open()
		return true, nil
	case 'n':
		d.literal("null")
		return false, nil
	}
	return false, d.wrongType(p, "an object")
}

// array is object for arrays.
func (d *decoder) array(p *path) (ok bool, err *Error) {
	switch d.data[d.i] {
	case '[':
		d.open()
		return true, nil
	case 'n':
		d.literal("null")
		return false, nil
	}
	return false, d.wrongType(p, "an array")
}

// grow extends s by one element, reusing the backing array's next element
// as encoding/json does, and returns it.
func grow[T any](s []T, firstCap int) ([]T, *T) {
	if len(s) < cap(s) {
		s = s[:len(s)+1]
	} else if s == nil {
		s = make([]T, 1, firstCap)
	} else {
		var zero T
		s = append(s, zero)
	}
	return s, &s[len(s)-1]
}

// stringInto decodes a string field. intern says the value is usually one
// of a few constants (see decoder.word).
func (d *decoder) stringInto(dst *string, p *path, intern bool) *Error {
	switch d.data[d.i] {
	case '"':
		if intern {
			*dst = d.word()
		} else {
			*dst = d.str()
		}
		return nil
	case 'n':
		d.literal("null")
		return nil
	}
	return d.wrongType(p, "a string")
}

func (d *decoder) boolInto(dst *bool, p *path) *Error {
	switch d.data[d.i] {
	case 't':
		*dst = true
		d.literal("true")
		return nil
	case 'f':
		*dst = false
		d.literal("false")
		return nil
	case 'n':
		d.literal("null")
		return nil
	}
	return d.wrongType(p, "a boolean")
}

// The pointer decoders point a nil *dst at slot, or at a new variable when
// slot is nil, before storing a value; null clears *dst.

func (d *decoder) boolPtr(dst **bool, slot *bool, p *path) *Error {
	switch d.data[d.i] {
	case 't', 'f':
		if *dst == nil {
			*dst = orNew(slot)
		}
		return d.boolInto(*dst, p)
	case 'n':
		d.literal("null")
		*dst = nil
		return nil
	}
	return d.wrongType(p, "a boolean")
}

func (d *decoder) isNumber() bool {
	c := d.data[d.i]
	return c == '-' || c >= '0' && c <= '9'
}

func (d *decoder) floatPtr(dst **float64, slot *float64, p *path) *Error {
	if d.data[d.i] == 'n' {
		d.literal("null")
		*dst = nil
		return nil
	}
	if !d.isNumber() {
		return d.wrongType(p, "a number")
	}
	raw := d.skip()
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return rangeError(p.String(), raw, "a finite number")
	}
	if *dst == nil {
		*dst = orNew(slot)
	}
	**dst = f
	return nil
}

// integer decodes an integer literal of the given bit size. A fraction or
// exponent is a type error, as for encoding/json; a value out of range is
// invalid_value.
func (d *decoder) integer(p *path, bits int) (int64, *Error) {
	if !d.isNumber() {
		return 0, d.wrongType(p, "an integer")
	}
	raw := d.skip()
	if !isIntegerLiteral(raw) {
		return 0, typeError(p.String(), "an integer", raw)
	}
	v, err := parseInt(raw, bits)
	if err {
		lo := int64(math.MinInt64) >> (64 - bits)
		hi := int64(math.MaxInt64) >> (64 - bits)
		return 0, rangeError(p.String(), raw, "between "+strconv.FormatInt(lo, 10)+" and "+strconv.FormatInt(hi, 10))
	}
	return v, nil
}

// parseInt parses an integer literal; err reports a value out of range.
// Literals of up to 18 digits, which cannot overflow an int64, are parsed
// in place; longer ones go through strconv.
func parseInt(raw []byte, bits int) (v int64, err bool) {
	digits := raw
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) > 18 || bits < 64 {
		v, e := strconv.ParseInt(string(raw), 10, bits)
		return v, e != nil
	}
	for _, c := range digits {
		v = v*10 + int64(c-'0')
	}
	if raw[0] == '-' {
		v = -v
	}
	return v, false
}

func (d *decoder) intPtr(dst **int, slot *int, p *path) *Error {
	if d.data[d.i] == 'n' {
		d.literal("null")
		*dst = nil
		return nil
	}
	v, e := d.integer(p, strconv.IntSize)
	if e != nil {
		return e
	}
	if *dst == nil {
		*dst = orNew(slot)
	}
	**dst = int(v)
	return nil
}

// raw copies the value at the cursor into a json.RawMessage field, as
// json.RawMessage.UnmarshalJSON does (null is kept as "null").
func (d *decoder) raw(dst *json.RawMessage) {
	*dst = append((*dst)[:0], d.skip()...)
}

// requestBlock is a ChatRequest allocated together with the variables its
// optional scalar and small object fields point to, so that a request
// costs one allocation for all of them rather than one each.
type requestBlock struct {
	req ChatRequest

	frequencyPenalty, presencePenalty, temperature, topP float64
	topLogprobs, maxTokens, maxCompletionTokens, n       int
	seed                                                 int64
	logprobs, parallelToolCalls, store                   bool
	responseFormat                                       ResponseFormat
	streamOptions                                        StreamOptions
	thinking                                             Thinking
	toolChoice                                           ToolChoice
	functionCall                                         FunctionCallChoice
}

// request decodes the top-level object into b.req; the cursor is at its
// '{'.
func (d *decoder) request(b *requestBlock) *Error {
	r := &b.req
	d.open()
	var first firstError
	for d.next('}') {
		k, _ := d.key()
		switch string(k) {
		case "model":
			first.add(0, d.stringInto(&r.Model, at(nil, "model"), false))
		case "messages":
			first.add(1, d.messages(&r.Messages, at(nil, "messages")))
		case "frequency_penalty":
			first.add(2, d.floatPtr(&r.FrequencyPenalty, &b.frequencyPenalty, at(nil, "frequency_penalty")))
		case "presence_penalty":
			first.add(3, d.floatPtr(&r.PresencePenalty, &b.presencePenalty, at(nil, "presence_penalty")))
		case "logit_bias":
			first.add(4, d.logitBias(&r.LogitBias, at(nil, "logit_bias")))
		case "logprobs":
			first.add(5, d.boolPtr(&r.Logprobs, &b.logprobs, at(nil, "logprobs")))
		case "top_logprobs":
			first.add(6, d.intPtr(&r.TopLogprobs, &b.topLogprobs, at(nil, "top_logprobs")))
		case "max_tokens":
			first.add(7, d.intPtr(&r.MaxTokens, &b.maxTokens, at(nil, "max_tokens")))
		case "max_completion_tokens":
			first.add(8, d.intPtr(&r.MaxCompletionTokens, &b.maxCompletionTokens, at(nil, "max_completion_tokens")))
		case "n":
			first.add(9, d.intPtr(&r.N, &b.n, at(nil, "n")))
		case "response_format":
			first.add(10, d.responseFormat(&r.ResponseFormat, &b.responseFormat, at(nil, "response_format")))
		case "seed":
			first.add(11, d.seed(&r.Seed, &b.seed, at(nil, "seed")))
		case "stop":
			first.add(12, d.stop(&r.Stop, at(nil, "stop")))
		case "stream":
			first.add(13, d.boolInto(&r.Stream, at(nil, "stream")))
		case "stream_options":
			first.add(14, d.streamOptions(&r.StreamOptions, &b.streamOptions, at(nil, "stream_options")))
		case "thinking":
			first.add(15, d.thinking(&r.Thinking, &b.thinking, at(nil, "thinking")))
		case "temperature":
			first.add(16, d.floatPtr(&r.Temperature, &b.temperature, at(nil, "temperature")))
		case "top_p":
			first.add(17, d.floatPtr(&r.TopP, &b.topP, at(nil, "top_p")))
		case "tools":
			first.add(18, d.tools(&r.Tools, at(nil, "tools")))
		case "tool_choice":
			first.add(19, d.toolChoicePtr(&r.ToolChoice, &b.toolChoice, at(nil, "tool_choice")))
		case "parallel_tool_calls":
			first.add(20, d.boolPtr(&r.ParallelToolCalls, &b.parallelToolCalls, at(nil, "parallel_tool_calls")))
		case "user":
			first.add(21, d.stringInto(&r.User, at(nil, "user"), false))
		case "function_call":
			first.add(22, d.functionCallChoicePtr(&r.FunctionCall, &b.functionCall, at(nil, "function_call")))
		case "functions":
			first.add(23, d.functionDefs(&r.Functions, at(nil, "functions")))
		case "reasoning_effort":
			first.add(24, d.stringInto(&r.ReasoningEffort, at(nil, "reasoning_effort"), true))
		case "metadata":
			first.add(25, d.metadata(&r.Metadata, at(nil, "metadata")))
		case "store":
			first.add(26, d.boolPtr(&r.Store, &b.store, at(nil, "store")))
		case "service_tier":
			first.add(27, d.stringInto(&r.ServiceTier, at(nil, "service_tier"), true))
		case "modalities":
			first.add(28, d.strings(&r.Modalities, at(nil, "modalities")))
		case "audio":
			d.raw(&r.Audio)
		case "prediction":
			d.raw(&r.Prediction)
		case "prompt_cache_key":
			first.add(31, d.stringInto(&r.PromptCacheKey, at(nil, "prompt_cache_key"), false))
		case "prompt_cache_retention":
			first.add(32, d.stringInto(&r.PromptCacheRetention, at(nil, "prompt_cache_retention"), false))
		case "prompt_cache_options":
			d.raw(&r.PromptCacheOptions)
		case "safety_identifier":
			first.add(34, d.stringInto(&r.SafetyIdentifier, at(nil, "safety_identifier"), false))
		case "verbosity":
			first.add(35, d.stringInto(&r.Verbosity, at(nil, "verbosity"), true))
		case "web_search_options":
			d.raw(&r.WebSearchOptions)
		case "moderation":
			d.raw(&r.Moderation)
		default:
			d.skip()
		}
	}
	return first.err
}

func (d *decoder) seed(dst **int64, slot *int64, p *path) *Error {
	if d.data[d.i] == 'n' {
		d.literal("null")
		*dst = nil
		return nil
	}
	v, e := d.integer(p, 64)
	if e != nil {
		return e
	}
	if *dst == nil {
		*dst = slot
	}
	**dst = v
	return nil
}

func (d *decoder) messages(dst *[]Message, p *path) *Error {
	ok, e := d.array(p)
	if !ok {
		if e == nil {
			*dst = nil
		}
		return e
	}
	if *dst != nil {
		s, e := d.messageList((*dst)[:0], p)
		*dst = nonNil(s)
		return e
	}
	// Decode into a stack buffer and copy the messages out once, so that
	// the slice is allocated at its final size.
	var buf [8]Message
	s, e := d.messageList(buf[:0], p)
	*dst = append(make([]Message, 0, len(s)), s...)
	return e
}

// messageList decodes the elements of the array whose '[' was consumed
// into s, reusing its backing array as encoding/json does.
func (d *decoder) messageList(s []Message, p *path) ([]Message, *Error) {
	var first *Error
	for i := 0; d.next(']'); i++ {
		var m *Message
		s, m = grow(s, 8)
		if e := d.message(m, elem(p, i)); first == nil {
			first = e
		}
	}
	return s, first
}

// nonNil returns s, or an empty slice for an empty one: encoding/json
// decodes [] to a non-nil empty slice.
func nonNil[T any](s []T) []T {
	if len(s) == 0 {
		return []T{}
	}
	return s
}

func (d *decoder) message(m *Message, p *path) *Error {
	if ok, e := d.object(p); !ok {
		return e
	}
	var first firstError
	for d.next('}') {
		k, _ := d.key()
		switch string(k) {
		case "role":
			first.add(0, d.stringInto(&m.Role, at(p, "role"), true))
		case "content":
			first.add(1, d.content(&m.Content, at(p, "content")))
		case "name":
			first.add(2, d.stringInto(&m.Name, at(p, "name"), false))
		case "tool_calls":
			first.add(3, d.toolCalls(&m.ToolCalls, at(p, "tool_calls")))
		case "tool_call_id":
			first.add(4, d.stringInto(&m.ToolCallID, at(p, "tool_call_id"), false))
		case "function_call":
			first.add(5, d.functionCallPtr(&m.FunctionCall, at(p, "function_call")))
		case "refusal":
			first.add(6, d.stringInto(&m.Refusal, at(p, "refusal"), false))
		case "reasoning_content":
			first.add(7, d.stringInto(&m.ReasoningContent, at(p, "reasoning_content"), false))
		case "reasoning":
			first.add(8, d.stringInto(&m.Reasoning, at(p, "reasoning"), false))
		case "audio":
			d.raw(&m.Audio)
		default:
			d.skip()
		}
	}
	return first.err
}

// content decodes a message's content as MessageContent.UnmarshalJSON
// does: null, a string or an array of parts, a part of a type not modelled
// here keeping its verbatim JSON in Raw. A null part is reported only when
// no part has a wrong type, as before.
func (d *decoder) content(c *MessageContent, p *path) *Error {
	*c = MessageContent{}
	switch d.data[d.i] {
	case 'n':
		d.literal("null")
		return nil
	case '"':
		c.Kind, c.Text = ContentString, d.str()
		return nil
	case '[':
	default:
		return d.wrongType(p, "a string, an array of content parts or null")
	}
	d.open()
	parts := make([]ContentPart, 0, 2)
	var first *Error
	null := -1
	for i := 0; d.next(']'); i++ {
		parts = append(parts, ContentPart{})
		part := &parts[i]
		start := d.i
		ok, e := d.object(elem(p, i))
		if !ok {
			if e == nil && null < 0 {
				null = i
			}
			if first == nil {
				first = e
			}
			continue
		}
		if e := d.part(part, elem(p, i)); first == nil {
			first = e
		}
		if !knownPartType(part.Type) {
			part.Raw = append(json.RawMessage(nil), d.data[start:d.i]...)
		}
	}
	if first != nil {
		return first
	}
	if null >= 0 {
		return typeError(elem(p, null).String(), "an object", []byte("null"))
	}
	c.Kind, c.Parts = ContentParts, parts
	return nil
}

// part decodes the members of a content part whose '{' was consumed.
func (d *decoder) part(c *ContentPart, p *path) *Error {
	var first firstError
	for d.next('}') {
		k, _ := d.key()
		switch string(k) {
		case "type":
			first.add(0, d.stringInto(&c.Type, at(p, "type"), true))
		case "text":
			first.add(1, d.stringInto(&c.Text, at(p, "text"), false))
		case "refusal":
			first.add(2, d.stringInto(&c.Refusal, at(p, "refusal"), false))
		case "image_url":
			first.add(3, d.imageURL(&c.ImageURL, at(p, "image_url")))
		case "input_audio":
			first.add(4, d.inputAudio(&c.InputAudio, at(p, "input_audio")))
		case "file":
			first.add(5, d.filePart(&c.File, at(p, "file")))
		case "cache_control":
			d.raw(&c.CacheControl)
		default:
			d.skip()
		}
	}
	return first.err
}

// pointerObject prepares a pointer-to-struct field for an object value: a
// null clears it, an object reuses or allocates the struct. ok says the
// members follow.
func pointerObject[T any](d *decoder, dst **T, slot *T, p *path) (ok bool, err *Error) {
	if ok, e := d.object(p); !ok {
		if e == nil {
			*dst = nil
		}
		return false, e
	}
	if *dst == nil {
		*dst = orNew(slot)
	}
	return true, nil
}

// orNew returns slot, or a new variable when slot is nil.
func orNew[T any](slot *T) *T {
	if slot != nil {
		return slot
	}
	return new(T)
}

func (d *decoder) imageURL(dst **ImageURL, p *path) *Error {
	if ok, e := pointerObject(d, dst, nil, p); !ok {
		return e
	}
	v := *dst
	var first firstError
	for d.next('}') {
		k, _ := d.key()
		switch string(k) {
		case "url":
			first.add(0, d.stringInto(&v.URL, at(p, "url"), false))
		case "detail":
			first.add(1, d.stringInto(&v.Detail, at(p, "detail"), true))
		default:
			d.skip()
		}
	}
	return first.err
}

func (d *decoder) inputAudio(dst **InputAudio, p *path) *Error {
	if ok, e := pointerObject(d, dst, nil, p); !ok {
		return e
	}
	v := *dst
	var first firstError
	for d.next('}') {
		k, _ := d.key()
		switch string(k) {
		case "data":
			first.add(0, d.stringInto(&v.Data, at(p, "data"), false))
		case "format":
			first.add(1, d.stringInto(&v.Format, at(p, "format"), false))
		default:
			d.skip()
		}
	}
	return first.err
}

func (d *decoder) filePart(dst **FilePart, p *path) *Error {
	if ok, e := pointerObject(d, dst, nil, p); !ok {
		return e
	}
	v := *dst
	var first firstError
	for d.next('}') {
		k, _ := d.key()
		switch string(k) {
		case "file_id":
			first.add(0, d.stringInto(&v.FileID, at(p, "file_id"), false))
		case "file_data":
			first.add(1, d.stringInto(&v.FileData, at(p, "file_data"), false))
		case "filename":
			first.add(2, d.stringInto(&v.Filename, at(p, "filename"), false))
		default:
			d.skip()
		}
	}
	return first.err
}

func (d *decoder) toolCalls(dst *[]ToolCall, p *path) *Error {
	ok, e := d.array(p)
	if !ok {
		if e == nil {
			*dst = nil
		}
		return e
	}
	s := (*dst)[:0]
	var first *Error
	for i := 0; d.next(']'); i++ {
		var tc *ToolCall
		s, tc = grow(s, 1)
		if e := d.toolCall(tc, elem(p, i)); first == nil {
			first = e
		}
	}
	if len(s) == 0 {
		s = []ToolCall{}
	}
	*dst = s
	return first
}

func (d *decoder) toolCall(tc *ToolCall, p *path) *Error {
	if ok, e := d.object(p); !ok {
		return e
	}
	var first firstError
	for d.next('}') {
		k, _ := d.key()
		switch string(k) {
		case "id":
			first.add(0, d.stringInto(&tc.ID, at(p, "id"), false))
		case "type":
			first.add(1, d.stringInto(&tc.Type, at(p, "type"), true))
		case "function":
			first.add(2, d.functionCall(&tc.Function, at(p, "function")))
		default:
			d.skip()
		}
	}
	return first.err
}

func (d *decoder) functionCallPtr(dst **FunctionCall, p *path) *Error {
	if ok, e := pointerObject(d, dst, nil, p); !ok {
		return e
	}
	return d.functionCallMembers(*dst, p)
}

func (d *decoder) functionCall(f *FunctionCall, p *path) *Error {
	if ok, e := d.object(p); !ok {
		return e
	}
	return d.functionCallMembers(f, p)
}

func (d *decoder) functionCallMembers(f *FunctionCall, p *path) *Error {
	var first firstError
	for d.next('}') {
		k, _ := d.key()
		switch string(k) {
		case "name":
			first.add(0, d.stringInto(&f.Name, at(p, "name"), false))
		case "arguments":
			first.add(1, d.stringInto(&f.Arguments, at(p, "arguments"), false))
		default:
			d.skip()
		}
	}
	return first.err
}

func (d *decoder) tools(dst *[]Tool, p *path) *Error {
	ok, e := d.array(p)
	if !ok {
		if e == nil {
			*dst = nil
		}
		return e
	}
	if *dst != nil {
		s, e := d.toolList((*dst)[:0], p)
		*dst = nonNil(s)
		return e
	}
	var buf [16]Tool // as in messages
	s, e := d.toolList(buf[:0], p)
	*dst = append(make([]Tool, 0, len(s)), s...)
	return e
}

func (d *decoder) toolList(s []Tool, p *path) ([]Tool, *Error) {
	var first *Error
	for i := 0; d.next(']'); i++ {
		var t *Tool
		s, t = grow(s, 16)
		if e := d.tool(t, elem(p, i)); first == nil {
			first = e
		}
	}
	return s, first
}

func (d *decoder) tool(t *Tool, p *path) *Error {
	if ok, e := d.object(p); !ok {
		return e
	}
	var first firstError
	for d.next('}') {
		k, _ := d.key()
		switch string(k) {
		case "type":
			first.add(0, d.stringInto(&t.Type, at(p, "type"), true))
		case "function":
			first.add(1, d.functionDef(&t.Function, at(p, "function")))
		default:
			d.skip()
		}
	}
	return first.err
}

func (d *decoder) functionDefs(dst *[]FunctionDef, p *path) *Error {
	ok, e := d.array(p)
	if !ok {
		if e == nil {
			*dst = nil
		}
		return e
	}
	s := (*dst)[:0]
	var first *Error
	for i := 0; d.next(']'); i++ {
		var f *FunctionDef
		s, f = grow(s, 4)
		if e := d.functionDef(f, elem(p, i)); first == nil {
			first = e
		}
	}
	if len(s) == 0 {
		s = []FunctionDef{}
	}
	*dst = s
	return first
}

func (d *decoder) functionDef(f *FunctionDef, p *path) *Error {
	if ok, e := d.object(p); !ok {
		return e
	}
	var first firstError
	for d.next('}') {
		k, _ := d.key()
		switch string(k) {
		case "name":
			first.add(0, d.stringInto(&f.Name, at(p, "name"), false))
		case "description":
			first.add(1, d.stringInto(&f.Description, at(p, "description"), false))
		case "parameters":
			d.raw(&f.Parameters)
		case "strict":
			first.add(3, d.boolPtr(&f.Strict, nil, at(p, "strict")))
		default:
			d.skip()
		}
	}
	return first.err
}

func (d *decoder) responseFormat(dst **ResponseFormat, slot *ResponseFormat, p *path) *Error {
	if ok, e := pointerObject(d, dst, slot, p); !ok {
		return e
	}
	v := *dst
	var first firstError
	for d.next('}') {
		k, _ := d.key()
		switch string(k) {
		case "type":
			first.add(0, d.stringInto(&v.Type, at(p, "type"), true))
		case "json_schema":
			first.add(1, d.jsonSchema(&v.JSONSchema, at(p, "json_schema")))
		default:
			d.skip()
		}
	}
	return first.err
}

func (d *decoder) jsonSchema(dst **JSONSchemaFormat, p *path) *Error {
	if ok, e := pointerObject(d, dst, nil, p); !ok {
		return e
	}
	v := *dst
	var first firstError
	for d.next('}') {
		k, _ := d.key()
		switch string(k) {
		case "name":
			first.add(0, d.stringInto(&v.Name, at(p, "name"), false))
		case "description":
			first.add(1, d.stringInto(&v.Description, at(p, "description"), false))
		case "schema":
			d.raw(&v.Schema)
		case "strict":
			first.add(3, d.boolPtr(&v.Strict, nil, at(p, "strict")))
		default:
			d.skip()
		}
	}
	return first.err
}

func (d *decoder) streamOptions(dst **StreamOptions, slot *StreamOptions, p *path) *Error {
	if ok, e := pointerObject(d, dst, slot, p); !ok {
		return e
	}
	v := *dst
	var first firstError
	for d.next('}') {
		k, _ := d.key()
		switch string(k) {
		case "include_usage":
			first.add(0, d.boolInto(&v.IncludeUsage, at(p, "include_usage")))
		case "include_obfuscation":
			first.add(1, d.boolPtr(&v.IncludeObfuscation, nil, at(p, "include_obfuscation")))
		default:
			d.skip()
		}
	}
	return first.err
}

func (d *decoder) thinking(dst **Thinking, slot *Thinking, p *path) *Error {
	if ok, e := pointerObject(d, dst, slot, p); !ok {
		return e
	}
	v := *dst
	var first firstError
	for d.next('}') {
		k, _ := d.key()
		switch string(k) {
		case "type":
			first.add(0, d.stringInto(&v.Type, at(p, "type"), true))
		case "budget_tokens":
			first.add(1, d.intPtr(&v.BudgetTokens, nil, at(p, "budget_tokens")))
		default:
			d.skip()
		}
	}
	return first.err
}

// stop decodes stop as Stop.UnmarshalJSON does.
func (d *decoder) stop(dst *Stop, p *path) *Error {
	switch d.data[d.i] {
	case 'n':
		d.literal("null")
		*dst = nil
		return nil
	case '"':
		*dst = Stop{d.str()}
		return nil
	case '[':
		s := make([]string, 0, 4)
		if e := d.strings(&s, p); e != nil {
			return e
		}
		*dst = s
		return nil
	}
	return d.wrongType(p, "a string or an array of strings")
}

// strings decodes an array of strings; a null element is "".
func (d *decoder) strings(dst *[]string, p *path) *Error {
	ok, e := d.array(p)
	if !ok {
		if e == nil {
			*dst = nil
		}
		return e
	}
	s := (*dst)[:0]
	var first *Error
	for i := 0; d.next(']'); i++ {
		var v *string
		s, v = grow(s, 4)
		if e := d.stringInto(v, elem(p, i), true); first == nil {
			first = e
		}
	}
	if len(s) == 0 {
		s = []string{}
	}
	*dst = s
	return first
}

// toolChoicePtr decodes tool_choice as ToolChoice.UnmarshalJSON does; null
// clears the pointer.
func (d *decoder) toolChoicePtr(dst **ToolChoice, slot *ToolChoice, p *path) *Error {
	if d.data[d.i] == 'n' {
		d.literal("null")
		*dst = nil
		return nil
	}
	if *dst == nil {
		*dst = orNew(slot)
	}
	return d.toolChoice(*dst, p)
}

func (d *decoder) toolChoice(c *ToolChoice, p *path) *Error {
	*c = ToolChoice{}
	switch d.data[d.i] {
	case 'n':
		d.literal("null")
		return nil
	case '"':
		c.Mode = d.word()
		return nil
	case '{':
	default:
		return d.wrongType(p, "a string or an object")
	}
	d.open()
	var first firstError
	var w ToolChoice
	for d.next('}') {
		k, _ := d.key()
		switch string(k) {
		case "type":
			first.add(0, d.stringInto(&w.Type, at(p, "type"), true))
		case "function":
			first.add(1, d.functionName(&w.Function, at(p, "function")))
		case "allowed_tools":
			d.raw(&w.AllowedTools)
		default:
			d.skip()
		}
	}
	if first.err != nil {
		return first.err
	}
	*c = w
	return nil
}

func (d *decoder) functionName(dst **FunctionName, p *path) *Error {
	if ok, e := pointerObject(d, dst, nil, p); !ok {
		return e
	}
	return d.functionNameMembers(*dst, p)
}

func (d *decoder) functionNameMembers(f *FunctionName, p *path) *Error {
	var first *Error
	for d.next('}') {
		k, _ := d.key()
		if string(k) == "name" {
			if e := d.stringInto(&f.Name, at(p, "name"), false); first == nil {
				first = e
			}
			continue
		}
		d.skip()
	}
	return first
}

// functionCallChoicePtr decodes the top-level function_call as
// FunctionCallChoice.UnmarshalJSON does; null clears the pointer.
func (d *decoder) functionCallChoicePtr(dst **FunctionCallChoice, slot *FunctionCallChoice, p *path) *Error {
	if d.data[d.i] == 'n' {
		d.literal("null")
		*dst = nil
		return nil
	}
	if *dst == nil {
		*dst = orNew(slot)
	}
	return d.functionCallChoice(*dst, p)
}

func (d *decoder) functionCallChoice(c *FunctionCallChoice, p *path) *Error {
	*c = FunctionCallChoice{}
	switch d.data[d.i] {
	case 'n':
		d.literal("null")
		return nil
	case '"':
		c.Mode = d.word()
		return nil
	case '{':
	default:
		return d.wrongType(p, "a string or an object")
	}
	d.open()
	var w FunctionName
	if e := d.functionNameMembers(&w, p); e != nil {
		return e
	}
	c.Name = w.Name
	return nil
}

// logitBias decodes a map of integers; a null value is 0 and a repeated
// key keeps its last value, as with encoding/json.
func (d *decoder) logitBias(dst *map[string]int, p *path) *Error {
	ok, e := d.object(p)
	if !ok {
		if e == nil {
			*dst = nil
		}
		return e
	}
	if *dst == nil {
		*dst = make(map[string]int)
	}
	m := *dst
	var first *Error
	for d.next('}') {
		k, raw := d.key()
		key := string(k)
		if d.data[d.i] == 'n' {
			d.literal("null")
			m[key] = 0
			continue
		}
		v, e := d.integer(&path{up: p, index: -1, key: raw}, strconv.IntSize)
		if e != nil {
			if first == nil {
				first = e
			}
			continue
		}
		m[key] = int(v)
	}
	return first
}

// metadata decodes a map of strings; a null value is "".
func (d *decoder) metadata(dst *map[string]string, p *path) *Error {
	ok, e := d.object(p)
	if !ok {
		if e == nil {
			*dst = nil
		}
		return e
	}
	if *dst == nil {
		*dst = make(map[string]string)
	}
	m := *dst
	var first *Error
	for d.next('}') {
		k, raw := d.key()
		key := string(k)
		var v string
		if e := d.stringInto(&v, &path{up: p, index: -1, key: raw}, false); e != nil {
			if first == nil {
				first = e
			}
			continue
		}
		m[key] = v
	}
	return first
}

// isIntegerLiteral reports whether a JSON number has neither fraction nor
// exponent; encoding/json decodes only those into Go integers.
func isIntegerLiteral(raw []byte) bool {
	for _, c := range raw {
		if c == '.' || c == 'e' || c == 'E' {
			return false
		}
	}
	return true
}

// rangeError reports a number too large for its Go type, naming the bound
// the validator would apply to the field when there is one.
func rangeError(param string, raw []byte, want string) *Error {
	if b := boundText(param); b != "" {
		want = b
	}
	return &Error{Param: param, Code: CodeInvalidValue, Message: joinMsg(param, "must be "+want+", got "+truncate(string(raw), 40))}
}

// indexParam names element i of the array named path.
func indexParam(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// invalidValueJSON is the error of an UnmarshalJSON method given malformed
// JSON, which encoding/json never passes.
func invalidValueJSON(param string) *Error {
	return &Error{Param: param, Code: CodeInvalidJSON, Message: joinMsg(param, "is not valid JSON")}
}

// asError returns e as an error, nil when e is nil.
func asError(e *Error) error {
	if e == nil {
		return nil
	}
	return e
}
