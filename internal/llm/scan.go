package llm

import (
	"encoding/binary"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// This file holds the byte-level JSON primitives of the request decoder: a
// cursor that checks the grammar as it walks, so that a body is read once,
// and a validator for the values the cursor skips.
//
// Both accept exactly what encoding/json accepts: RFC 8259 grammar, any
// byte above 0x7f inside strings, nesting at most maxDepth. Neither
// recurses per nesting level, so a body of millions of '[' costs a linear
// scan (gjson.ValidBytes recurses per level and overflows the goroutine
// stack on such a body, which is fatal).

// maxDepth is encoding/json's nesting limit (scanner.go maxNestingDepth):
// a document nested deeper is a syntax error.
const maxDepth = 10000

// validValue checks the JSON value at i, inside depth open containers, and
// returns the index after it.
func validValue(data []byte, i, depth int) (int, bool) {
	// inObject has bit k set when the k-th container opened here is an
	// object; it grows past 128 levels.
	var small [2]uint64
	inObject := small[:]
	base := depth
	n := len(data)
	// Each iteration reads one value at i, then the punctuation that
	// follows it, closing containers as they end.
	for {
		if i >= n {
			return i, false
		}
		switch c := data[i]; c {
		case '{', '[':
			if depth == maxDepth {
				return i, false
			}
			k := depth - base
			i = skipSpace(data, i+1)
			if i >= n {
				return i, false
			}
			depth++
			if k/64 == len(inObject) {
				inObject = append(inObject, 0)
			}
			if c == '{' {
				inObject[k/64] |= 1 << (k % 64)
				if data[i] == '}' {
					i++
					depth--
					break
				}
				var ok bool
				if i, ok = validKey(data, i); !ok {
					return i, false
				}
				continue
			}
			inObject[k/64] &^= 1 << (k % 64)
			if data[i] == ']' {
				i++
				depth--
				break
			}
			continue
		case '"':
			end, ok := validString(data, i+1)
			if !ok {
				return end, false
			}
			i = end
		case 't':
			if !hasLiteral(data, i, "true") {
				return i, false
			}
			i += 4
		case 'f':
			if !hasLiteral(data, i, "false") {
				return i, false
			}
			i += 5
		case 'n':
			if !hasLiteral(data, i, "null") {
				return i, false
			}
			i += 4
		default:
			end, ok := validNumber(data, i)
			if !ok {
				return end, false
			}
			i = end
		}
		// After a value: close containers, or move to the next value.
		for {
			if depth == base {
				return i, true
			}
			i = skipSpace(data, i)
			if i >= n {
				return i, false
			}
			k := depth - base - 1
			object := inObject[k/64]&(1<<(k%64)) != 0
			c := data[i]
			if c == ',' {
				i = skipSpace(data, i+1)
				if object {
					var ok bool
					if i, ok = validKey(data, i); !ok {
						return i, false
					}
				}
				break
			}
			if object && c == '}' || !object && c == ']' {
				i++
				depth--
				continue
			}
			return i, false
		}
	}
}

// validKey checks an object key and its colon at i and returns the index of
// the member's value, whitespace skipped.
func validKey(data []byte, i int) (int, bool) {
	if i >= len(data) || data[i] != '"' {
		return i, false
	}
	i, ok := validString(data, i+1)
	if !ok {
		return i, false
	}
	i = skipSpace(data, i)
	if i >= len(data) || data[i] != ':' {
		return i, false
	}
	return skipSpace(data, i+1), true
}

// validString checks the rest of a string whose opening quote is before i
// and returns the index after its closing quote.
func validString(data []byte, i int) (int, bool) {
	for {
		// Skip eight ordinary bytes at a time; stop at a word holding a
		// quote, a backslash or a control byte.
		for i+8 <= len(data) {
			x := binary.LittleEndian.Uint64(data[i:])
			if hasByte(x, '"')|hasByte(x, '\\')|hasLess(x, ' ') != 0 {
				break
			}
			i += 8
		}
		for ; i < len(data); i++ {
			if c := data[i]; c == '"' || c == '\\' || c < ' ' {
				break
			}
		}
		if i >= len(data) {
			return i, false
		}
		switch data[i] {
		case '"':
			return i + 1, true
		case '\\':
			if i+1 >= len(data) {
				return i, false
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(data) {
					return i, false
				}
				for _, h := range data[i+2 : i+6] {
					if !isHex(h) {
						return i, false
					}
				}
				i += 6
			default:
				return i, false
			}
		default: // a control byte
			return i, false
		}
	}
}

// SWAR tests on eight bytes at once. hasByte is non-zero when x holds byte
// c; hasLess is non-zero when x holds a byte below n (n <= 128). Either may
// flag a word wrongly only when it also holds a byte that is flagged
// rightly, so a zero result is exact.
const (
	lsbs = 0x0101010101010101
	msbs = 0x8080808080808080
)

func hasLess(x uint64, n byte) uint64 { return (x - lsbs*uint64(n)) &^ x & msbs }

func hasByte(x uint64, c byte) uint64 { return hasLess(x^(lsbs*uint64(c)), 1) }

// validNumber checks the number at i:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(data []byte, i int) (int, bool) {
	n := len(data)
	if i < n && data[i] == '-' {
		i++
	}
	switch {
	case i >= n:
		return i, false
	case data[i] == '0':
		i++
	case data[i] >= '1' && data[i] <= '9':
		i = skipDigits(data, i+1)
	default:
		return i, false
	}
	if i < n && data[i] == '.' {
		i++
		if i >= n || !isDigit(data[i]) {
			return i, false
		}
		i = skipDigits(data, i+1)
	}
	if i < n && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < n && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= n || !isDigit(data[i]) {
			return i, false
		}
		i = skipDigits(data, i+1)
	}
	return i, true
}

func hasLiteral(data []byte, i int, lit string) bool {
	return len(data)-i >= len(lit) && string(data[i:i+len(lit)]) == lit
}

func skipDigits(data []byte, i int) int {
	for i < len(data) && isDigit(data[i]) {
		i++
	}
	return i
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// decoder is a cursor over JSON input that checks the grammar as it moves.
// Between calls, i is at the first byte of a value (never at whitespace or
// the end of input) or just after one. Malformed input makes a method
// panic with syntaxFailure, which decodeValue recovers: malformed JSON is
// reported whatever type errors came before it, as encoding/json checks
// the whole input before decoding any of it.
type decoder struct {
	data []byte
	i    int
	// depth counts the containers open at the cursor; fresh says the last
	// one was just opened, so next expects no comma.
	depth int
	fresh bool
}

// syntaxFailure is the panic value of a decoder that met malformed input.
type syntaxFailure struct{}

func (d *decoder) fail() { panic(syntaxFailure{}) }

// decodeValue runs f over data, which must hold one JSON value with
// optional whitespace around it. valid is false, and e nil, when data is
// not valid JSON by encoding/json's rules.
func decodeValue(data []byte, f func(d *decoder) *Error) (e *Error, valid bool) {
	defer catchSyntax(&valid, &e)
	d := decoder{data: data, i: skipSpace(data, 0)}
	if d.i == len(data) {
		return nil, false
	}
	e = f(&d)
	return e, d.end()
}

// catchSyntax, deferred, recovers a decoder's syntaxFailure, clearing e
// and valid; any other panic goes on.
func catchSyntax(valid *bool, e **Error) {
	if r := recover(); r != nil {
		if _, ok := r.(syntaxFailure); !ok {
			panic(r)
		}
		*valid, *e = false, nil
	}
}

// end reports whether only whitespace follows the cursor.
func (d *decoder) end() bool {
	return skipSpace(d.data, d.i) == len(d.data)
}

// open consumes the '{' or '[' at the cursor; next must follow.
func (d *decoder) open() {
	d.i++
	d.depth++
	d.fresh = true
}

// next moves to the next member of the object, or element of the array,
// open at the cursor, whose closing byte is close. It reports false,
// consuming close, at the end of the container.
func (d *decoder) next(close byte) bool {
	d.i = skipSpace(d.data, d.i)
	if d.i >= len(d.data) {
		d.fail()
	}
	c := d.data[d.i]
	if d.fresh {
		d.fresh = false
	} else if c == ',' {
		d.i = skipSpace(d.data, d.i+1)
		if d.i >= len(d.data) {
			d.fail()
		}
		return true
	} else if c != close {
		d.fail()
	}
	if c == close {
		d.i++
		d.depth--
		return false
	}
	return true
}

// key reads the key of the member at the cursor and the colon after it,
// leaving the cursor at the value. name is the unescaped key, valid until
// the next call; raw is the key as written, quotes included.
func (d *decoder) key() (name, raw []byte) {
	start := d.i
	if d.data[start] != '"' {
		d.fail()
	}
	end, esc, high := d.stringEnd(start + 1)
	raw = d.data[start : end+1]
	name = raw[1 : len(raw)-1]
	if esc || high && !utf8.Valid(name) {
		name = []byte(unquote(name))
	}
	d.i = skipSpace(d.data, end+1)
	if d.i >= len(d.data) || d.data[d.i] != ':' {
		d.fail()
	}
	d.i = skipSpace(d.data, d.i+1)
	if d.i >= len(d.data) {
		d.fail()
	}
	return name, raw
}

// literal consumes the literal lit ("null", "true", "false") whose first
// byte is at the cursor.
func (d *decoder) literal(lit string) {
	if !hasLiteral(d.data, d.i, lit) {
		d.fail()
	}
	d.i += len(lit)
}

// stringEnd returns the index of the closing quote of the string whose
// content starts at i, and whether the content has escapes or bytes above
// 0x7f.
func (d *decoder) stringEnd(i int) (end int, esc, high bool) {
	data := d.data
	var highBits uint64
	for {
		// Skip eight ordinary bytes at a time; stop at a word holding a
		// quote, a backslash or a control byte.
		for i+8 <= len(data) {
			x := binary.LittleEndian.Uint64(data[i:])
			if hasByte(x, '"')|hasByte(x, '\\')|hasLess(x, ' ') != 0 {
				break
			}
			highBits |= x
			i += 8
		}
		for ; i < len(data); i++ {
			c := data[i]
			if c == '"' {
				return i, esc, high || highBits&msbs != 0
			}
			if c == '\\' || c < ' ' {
				break
			}
			high = high || c >= utf8.RuneSelf
		}
		if i >= len(data) || data[i] != '\\' {
			d.fail()
		}
		esc = true
		if i+1 >= len(data) {
			d.fail()
		}
		switch data[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			if i+6 > len(data) {
				d.fail()
			}
			for _, h := range data[i+2 : i+6] {
				if !isHex(h) {
					d.fail()
				}
			}
			i += 6
		default:
			d.fail()
		}
	}
}

// str reads the string at the cursor as encoding/json decodes it: escapes
// resolved and invalid UTF-8 replaced by U+FFFD.
func (d *decoder) str() string {
	start := d.i + 1
	end, esc, high := d.stringEnd(start)
	d.i = end + 1
	s := d.data[start:end]
	if esc || high && !utf8.Valid(s) {
		return unquote(s)
	}
	return string(s)
}

// word reads a string like str, returning a constant for the values that
// recur in every request (roles, part and tool types, modes) so that they
// cost no allocation.
func (d *decoder) word() string {
	start := d.i + 1
	end, esc, high := d.stringEnd(start)
	if esc || high {
		return d.str()
	}
	d.i = end + 1
	s := d.data[start:end]
	switch string(s) {
	case RoleSystem:
		return RoleSystem
	case RoleDeveloper:
		return RoleDeveloper
	case RoleUser:
		return RoleUser
	case RoleAssistant:
		return RoleAssistant
	case RoleTool:
		return RoleTool
	case "function":
		return "function"
	case PartText:
		return PartText
	case PartImageURL:
		return PartImageURL
	case PartInputAudio:
		return PartInputAudio
	case PartFile:
		return PartFile
	case PartRefusal:
		return PartRefusal
	case "auto":
		return "auto"
	case "none":
		return "none"
	case "required":
		return "required"
	case "json_object":
		return "json_object"
	case "json_schema":
		return "json_schema"
	case "enabled":
		return "enabled"
	case "disabled":
		return "disabled"
	case "low":
		return "low"
	case "medium":
		return "medium"
	case "high":
		return "high"
	}
	return string(s)
}

// skip moves past the value at the cursor and returns its bytes.
func (d *decoder) skip() []byte {
	start := d.i
	switch d.data[d.i] {
	case '"':
		end, _, _ := d.stringEnd(d.i + 1)
		d.i = end + 1
	case 'n':
		d.literal("null")
	case 't':
		d.literal("true")
	case 'f':
		d.literal("false")
	case '{', '[':
		end, ok := validValue(d.data, d.i, d.depth)
		if !ok {
			d.fail()
		}
		d.i = end
	default:
		end, ok := validNumber(d.data, d.i)
		if !ok {
			d.fail()
		}
		d.i = end
	}
	return d.data[start:d.i]
}

// unquote resolves the escapes of a string's content and replaces invalid
// UTF-8 with U+FFFD, exactly as encoding/json's unquoteBytes does (a lone or
// mismatched surrogate escape also becomes U+FFFD). s has been validated.
func unquote(s []byte) string {
	var b strings.Builder
	b.Grow(len(s))
	for r := 0; r < len(s); {
		c := s[r]
		switch {
		case c == '\\':
			switch e := s[r+1]; e {
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				rr := hex4(s[r+2:])
				r += 6
				if utf16.IsSurrogate(rr) {
					if r+6 <= len(s) && s[r] == '\\' && s[r+1] == 'u' {
						if dec := utf16.DecodeRune(rr, hex4(s[r+2:])); dec != unicode.ReplacementChar {
							r += 6
							b.WriteRune(dec)
							continue
						}
					}
					rr = unicode.ReplacementChar
				}
				b.WriteRune(rr)
				continue
			default: // '"', '\\', '/'
				b.WriteByte(e)
			}
			r += 2
		case c < utf8.RuneSelf:
			// Copy the run of ASCII up to the next escape at once.
			end := r + 1
			for end < len(s) && s[end] != '\\' && s[end] < utf8.RuneSelf {
				end++
			}
			b.Write(s[r:end])
			r = end
		default:
			rr, size := utf8.DecodeRune(s[r:])
			r += size
			b.WriteRune(rr)
		}
	}
	return b.String()
}

// hex4 decodes the four hex digits at the start of s.
func hex4(s []byte) rune {
	var r rune
	for _, c := range s[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		default:
			c = c - 'A' + 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
