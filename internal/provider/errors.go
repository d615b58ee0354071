package provider

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// ErrorDetail is what the gateway can say about a provider's error body.
type ErrorDetail struct {
	Message string
	Type    string
	Code    string
	Param   string
}

// ParseErrorBody reads the error shapes providers use (PROVIDERS.md §12.3):
// OpenAI-style {"error":{message,type,param,code}}, Anthropic
// {"type":"error","error":{type,message}}, Google {"error":{code,message,status}},
// Mistral and old vLLM {"object":"error","message",...}, FastAPI 422
// {"detail":[...]}, xAI {"code","error":"..."}, Ollama {"error":"..."},
// Bedrock and Cohere {"message":"..."}; anything else (HTML from a CDN,
// plain text) becomes a truncated text message.
func ParseErrorBody(body []byte) ErrorDetail {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return ErrorDetail{}
	}
	if !json.Valid(body) {
		return ErrorDetail{Message: truncate(string(body), 512)}
	}
	root := gjson.ParseBytes(body)
	var d ErrorDetail
	e := root.Get("error")
	switch {
	case e.IsObject():
		d.Message = e.Get("message").String()
		d.Type = e.Get("type").String()
		d.Param = e.Get("param").String()
		if c := e.Get("code"); c.Exists() && c.Type != gjson.Null {
			d.Code = c.String()
		}
		if s := e.Get("status"); d.Type == "" && s.Type == gjson.String {
			d.Type = s.String()
		}
	case e.Type == gjson.String:
		d.Message = e.String()
		d.Code = root.Get("code").String()
	case root.Get("message").Exists():
		d.Message = root.Get("message").String()
		d.Type = root.Get("type").String()
		d.Param = root.Get("param").String()
		if c := root.Get("code"); c.Exists() && c.Type != gjson.Null {
			d.Code = c.String()
		}
	case root.Get("detail").Exists():
		det := root.Get("detail")
		if det.IsArray() {
			var parts []string
			for _, it := range det.Array() {
				loc := make([]string, 0, 4)
				for _, l := range it.Get("loc").Array() {
					loc = append(loc, l.String())
				}
				parts = append(parts, strings.Join(loc, ".")+": "+it.Get("msg").String())
			}
			d.Message = strings.Join(parts, "; ")
		} else {
			d.Message = det.String()
		}
		d.Type = "invalid_request_error"
	default:
		d.Message = truncate(string(body), 512)
	}
	if d.Message == "" {
		d.Message = truncate(string(body), 512)
	}
	return d
}

// ErrorMessageForStatus is the fallback message when a provider's error has
// no readable body.
func ErrorMessageForStatus(providerName string, status int) string {
	return providerName + " answered HTTP " + strconv.Itoa(status)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
