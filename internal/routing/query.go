package routing

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// Query is a compiled conditional-routing query (API.md §4): keys
// metadata.<k>, params.<k> and url.pathname; operators $eq $ne $gt $gte $lt
// $lte $in $nin $regex; logic $and $or; several keys in one object must all
// match. A key whose value is not an operator object is compared with $eq.
type Query struct {
	all []*Query // every one must match (an object's keys, $and)
	any []*Query // at least one must match ($or)

	// A leaf compares field with op.
	field string
	op    string
	val   any   // operand of $eq $ne $gt $gte $lt $lte
	list  []any // operand of $in $nin
	re    *regexp.Regexp
}

// Facts are what a query can look at.
type Facts struct {
	// Metadata is the request's x-gateway-metadata.
	Metadata map[string]string
	// Params is the request body (JSON); params.<k> is a gjson path into it.
	Params []byte
	// Path is the request's URL path (url.pathname).
	Path string
}

var operators = []string{"$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$regex"}

// query compiles a query object at path.
func (d *decoder) query(path string, v []byte) *Query {
	ms, ok := d.object(path, v)
	if !ok {
		return nil
	}
	if len(ms) == 0 {
		d.add(path, CodeInvalidValue, "%s: must not be empty", path)
		return nil
	}
	q := new(Query)
	for _, m := range ms {
		p := path + "." + m.key
		switch {
		case m.key == "$and" || m.key == "$or":
			els, ok := elements(m.val)
			if !ok || len(els) == 0 {
				d.add(p, CodeInvalidType, "%s: must be a non-empty array of queries", p)
				continue
			}
			sub := &Query{}
			for i, e := range els {
				if c := d.query(fmt.Sprintf("%s[%d]", p, i), e); c != nil {
					if m.key == "$and" {
						sub.all = append(sub.all, c)
					} else {
						sub.any = append(sub.any, c)
					}
				}
			}
			q.all = append(q.all, sub)
		case strings.HasPrefix(m.key, "$"):
			d.add(p, CodeInvalidValue, "%s: unknown logical operator; use $and or $or, or a key metadata.<k>, params.<k> or url.pathname", p)
		case !validField(m.key):
			d.add(p, CodeInvalidValue, "%s: unknown query key; use metadata.<k>, params.<k> or url.pathname", p)
		default:
			q.all = append(q.all, d.fieldQuery(p, m.key, m.val)...)
		}
	}
	return q
}

func validField(k string) bool {
	if k == "url.pathname" {
		return true
	}
	for _, prefix := range []string{"metadata.", "params."} {
		if rest, ok := strings.CutPrefix(k, prefix); ok && rest != "" {
			return true
		}
	}
	return false
}

// fieldQuery compiles the value of one key: an operator object, or a plain
// value meaning $eq.
func (d *decoder) fieldQuery(path, field string, v []byte) []*Query {
	ms, isObj := members(v)
	if !isObj || len(ms) == 0 || !strings.HasPrefix(ms[0].key, "$") {
		if isObj {
			d.add(path, CodeInvalidValue, "%s: must be a value or an object of operators (%s)", path, strings.Join(operators, " "))
			return nil
		}
		return []*Query{{field: field, op: "$eq", val: scalar(v)}}
	}
	var out []*Query
	for _, m := range ms {
		p := path + "." + m.key
		q := &Query{field: field, op: m.key}
		switch m.key {
		case "$eq", "$ne":
			if k := kindOf(m.val); k == "an object" || k == "an array" {
				d.add(p, CodeInvalidType, "%s: must be a string, number, boolean or null, got %s", p, k)
				continue
			}
			q.val = scalar(m.val)
		case "$gt", "$gte", "$lt", "$lte":
			if k := kindOf(m.val); k != "a number" && k != "a string" {
				d.add(p, CodeInvalidType, "%s: must be a number or a string, got %s", p, k)
				continue
			}
			q.val = scalar(m.val)
		case "$in", "$nin":
			els, ok := elements(m.val)
			if !ok {
				d.add(p, CodeInvalidType, "%s: must be an array, got %s", p, kindOf(m.val))
				continue
			}
			for i, e := range els {
				if k := kindOf(e); k == "an object" || k == "an array" {
					d.add(fmt.Sprintf("%s[%d]", p, i), CodeInvalidType, "%s[%d]: must be a string, number, boolean or null, got %s", p, i, k)
					continue
				}
				q.list = append(q.list, scalar(e))
			}
		case "$regex":
			s, ok := d.str(p, m.val)
			if !ok {
				continue
			}
			re, err := regexp.Compile(s)
			if err != nil {
				d.add(p, CodeInvalidValue, "%s: invalid regular expression: %v", p, err)
				continue
			}
			q.re = re
		default:
			d.add(p, CodeInvalidValue, "%s: unknown operator; use one of %s", p, strings.Join(operators, " "))
			continue
		}
		out = append(out, q)
	}
	return out
}

// scalar decodes a JSON scalar to string, float64, bool or nil.
func scalar(v []byte) any {
	v = bytes.TrimSpace(v)
	var x any
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	if dec.Decode(&x) != nil {
		return nil
	}
	if n, ok := x.(json.Number); ok {
		f, _ := n.Float64()
		return f
	}
	return x
}

// Match reports whether the query matches f.
func (q *Query) Match(f *Facts) bool {
	if q == nil {
		return false
	}
	if q.field != "" {
		return q.matchField(f)
	}
	for _, s := range q.all {
		if !s.Match(f) {
			return false
		}
	}
	if len(q.any) > 0 {
		return slices.ContainsFunc(q.any, func(s *Query) bool { return s.Match(f) })
	}
	return true
}

func (q *Query) matchField(f *Facts) bool {
	v, ok := lookup(f, q.field)
	switch q.op {
	case "$eq":
		return ok && equal(v, q.val)
	case "$ne":
		return !ok || !equal(v, q.val)
	case "$in":
		return ok && slices.ContainsFunc(q.list, func(x any) bool { return equal(v, x) })
	case "$nin":
		return !ok || !slices.ContainsFunc(q.list, func(x any) bool { return equal(v, x) })
	case "$regex":
		return ok && q.re.MatchString(text(v))
	}
	if !ok {
		return false
	}
	c, comparable := compare(v, q.val)
	if !comparable {
		return false
	}
	switch q.op {
	case "$gt":
		return c > 0
	case "$gte":
		return c >= 0
	case "$lt":
		return c < 0
	case "$lte":
		return c <= 0
	}
	return false
}

// lookup reads a query key's value from the facts.
func lookup(f *Facts, field string) (any, bool) {
	if field == "url.pathname" {
		return f.Path, true
	}
	if k, ok := strings.CutPrefix(field, "metadata."); ok {
		v, ok := f.Metadata[k]
		return v, ok
	}
	k := strings.TrimPrefix(field, "params.")
	if len(f.Params) == 0 {
		return nil, false
	}
	r := gjson.GetBytes(f.Params, k)
	switch r.Type {
	case gjson.String:
		return r.Str, true
	case gjson.Number:
		return r.Num, true
	case gjson.True:
		return true, true
	case gjson.False:
		return false, true
	case gjson.Null:
		if !r.Exists() {
			return nil, false
		}
		return nil, true
	}
	return r.Raw, true // an object or array: compared as its JSON text
}

// number reads v as a number: numbers as they are, strings that parse
// (metadata values are always strings).
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil
	}
	return 0, false
}

func text(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return "null"
	}
	return fmt.Sprint(v)
}

// equal compares a looked-up value with an operand: numerically when either
// is a number and both read as numbers, otherwise by type and value.
func equal(v, operand any) bool {
	_, vNum := v.(float64)
	_, oNum := operand.(float64)
	if vNum || oNum {
		a, ok1 := number(v)
		b, ok2 := number(operand)
		return ok1 && ok2 && a == b
	}
	switch o := operand.(type) {
	case string:
		s, ok := v.(string)
		return ok && s == o
	case bool:
		b, ok := v.(bool)
		if !ok {
			s, isStr := v.(string)
			return isStr && s == strconv.FormatBool(o)
		}
		return b == o
	case nil:
		return v == nil
	}
	return false
}

// compare orders v against operand: numerically when both read as numbers,
// as strings when both are strings; otherwise they are not comparable.
func compare(v, operand any) (int, bool) {
	if a, ok := number(v); ok {
		if b, ok := number(operand); ok {
			switch {
			case a < b:
				return -1, true
			case a > b:
				return 1, true
			}
			return 0, true
		}
	}
	s1, ok1 := v.(string)
	s2, ok2 := operand.(string)
	if ok1 && ok2 {
		return strings.Compare(s1, s2), true
	}
	return 0, false
}
