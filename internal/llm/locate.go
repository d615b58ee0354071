package llm

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// This file turns an encoding/json failure into an *Error that names the
// exact field ("messages[2].content[0].text") in the same words the
// validator uses. encoding/json reports type errors without array indices
// and in its own vocabulary, so on failure the value is walked again
// against the Go type it was decoded into. The walk runs only on the error
// path; an accepted body is decoded once.

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// locateIn explains why json.Unmarshal(data, dst) failed with err. param is
// the JSON name of data's field, which prefixes every reported Param.
func locateIn(data []byte, dst any, param string, err error) *Error {
	var syn *json.SyntaxError
	if errors.As(err, &syn) || !json.Valid(data) {
		return &Error{Param: param, Code: CodeInvalidJSON, Message: joinMsg(param, "is not valid JSON")}
	}
	if e := locate(data, reflect.TypeOf(dst).Elem(), param, ""); e != nil {
		return e
	}
	// The walk mirrors encoding/json's rules, so this is a fallback for a
	// mismatch between the two rather than an expected outcome.
	var ute *json.UnmarshalTypeError
	if errors.As(err, &ute) {
		p := joinPath(param, ute.Field)
		return &Error{Param: p, Code: CodeInvalidType, Message: joinMsg(p, "has the wrong type, got "+truncate(ute.Value, 40))}
	}
	return &Error{Param: param, Code: CodeInvalidType, Message: joinMsg(param, "has the wrong type")}
}

// locate returns the first error, in field-declaration order, of decoding
// raw into a value of type t, or nil. path names raw; prefix is prepended to
// the Params of errors returned by custom unmarshalers, which name
// themselves relative to their parent object.
func locate(raw []byte, t reflect.Type, path, prefix string) *Error {
	kind := jsonKind(raw)
	if t.Kind() == reflect.Pointer {
		if kind == 'n' {
			return nil
		}
		return locate(raw, t.Elem(), path, prefix)
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		err := reflect.New(t).Interface().(json.Unmarshaler).UnmarshalJSON(raw)
		if err == nil {
			return nil
		}
		var e *Error
		if errors.As(err, &e) {
			return &Error{Param: prefix + e.Param, Code: e.Code, Message: prefix + e.Message}
		}
		return &Error{Param: path, Code: CodeInvalidType, Message: joinMsg(path, "could not be decoded")}
	}
	switch t.Kind() {
	case reflect.Struct:
		return locateStruct(raw, kind, t, path)
	case reflect.Slice:
		if kind == 'n' {
			return nil
		}
		if kind != 'a' {
			return typeError(path, "an array", raw)
		}
		var found *Error
		i := 0
		gjson.ParseBytes(raw).ForEach(func(_, v gjson.Result) bool {
			found = locate([]byte(v.Raw), t.Elem(), indexParam(path, i), "")
			i++
			return found == nil
		})
		return found
	case reflect.Map:
		if kind == 'n' {
			return nil
		}
		if kind != 'o' {
			return typeError(path, "an object", raw)
		}
		var found *Error
		gjson.ParseBytes(raw).ForEach(func(k, v gjson.Result) bool {
			found = locate([]byte(v.Raw), t.Elem(), path+"."+truncate(k.String(), 64), "")
			return found == nil
		})
		return found
	case reflect.String:
		if kind != 's' && kind != 'n' {
			return typeError(path, "a string", raw)
		}
	case reflect.Bool:
		if kind != 'b' && kind != 'n' {
			return typeError(path, "a boolean", raw)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if kind == 'n' {
			return nil
		}
		if kind != 'd' || !isIntegerLiteral(raw) {
			return typeError(path, "an integer", raw)
		}
		if _, err := strconv.ParseInt(string(raw), 10, t.Bits()); err != nil {
			return rangeError(path, raw, t)
		}
	case reflect.Float32, reflect.Float64:
		if kind == 'n' {
			return nil
		}
		if kind != 'd' {
			return typeError(path, "a number", raw)
		}
		if _, err := strconv.ParseFloat(string(raw), t.Bits()); err != nil {
			return rangeError(path, raw, t)
		}
	}
	return nil
}

// locateStruct walks the members of an object that decodes into struct t.
// Keys match fields the way encoding/json matches them: exactly, else
// case-insensitively; every occurrence of a duplicated key is checked,
// since encoding/json decodes (and fails on) each one.
func locateStruct(raw []byte, kind byte, t reflect.Type, path string) *Error {
	if kind == 'n' {
		return nil
	}
	if kind != 'o' {
		return typeError(path, "an object", raw)
	}
	type field struct {
		name  string
		index int
		vals  []gjson.Result
	}
	fields := make([]field, 0, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields = append(fields, field{name: name, index: i})
	}
	gjson.ParseBytes(raw).ForEach(func(k, v gjson.Result) bool {
		key := k.String()
		match := -1
		for i := range fields {
			if fields[i].name == key {
				match = i
				break
			}
		}
		if match < 0 {
			for i := range fields {
				if strings.EqualFold(fields[i].name, key) {
					match = i
					break
				}
			}
		}
		if match >= 0 {
			fields[match].vals = append(fields[match].vals, v)
		}
		return true
	})
	prefix := ""
	if path != "" {
		prefix = path + "."
	}
	for _, f := range fields {
		for _, v := range f.vals {
			if e := locate([]byte(v.Raw), t.Field(f.index).Type, prefix+f.name, prefix); e != nil {
				return e
			}
		}
	}
	return nil
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
func rangeError(path string, raw []byte, t reflect.Type) *Error {
	want := boundText(path)
	if want == "" {
		switch t.Kind() {
		case reflect.Float32, reflect.Float64:
			want = "a finite number"
		default:
			bits := uint(t.Bits())
			lo := int64(math.MinInt64) >> (64 - bits)
			hi := int64(math.MaxInt64) >> (64 - bits)
			want = "between " + strconv.FormatInt(lo, 10) + " and " + strconv.FormatInt(hi, 10)
		}
	}
	return &Error{Param: path, Code: CodeInvalidValue, Message: joinMsg(path, "must be "+want+", got "+truncate(string(raw), 40))}
}

// indexParam names element i of the array named path.
func indexParam(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// joinPath joins a parent path and encoding/json's dotted field path.
func joinPath(parent, field string) string {
	switch {
	case parent == "":
		return field
	case field == "":
		return parent
	}
	return parent + "." + field
}
