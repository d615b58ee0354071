package provider

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func gjsonValid(b []byte) bool { return gjson.ValidBytes(b) }

func TestParseErrorBody(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       ErrorDetail
	}{
		{"openai", `{"error":{"message":"bad","type":"invalid_request_error","param":"max_tokens","code":"unsupported_parameter"}}`,
			ErrorDetail{Message: "bad", Type: "invalid_request_error", Param: "max_tokens", Code: "unsupported_parameter"}},
		{"openai null code", `{"error":{"message":"m","type":"server_error","param":null,"code":null}}`, ErrorDetail{Message: "m", Type: "server_error"}},
		{"anthropic", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}`, ErrorDetail{Message: "Overloaded", Type: "overloaded_error"}},
		{"google", `{"error":{"code":429,"message":"Resource exhausted","status":"RESOURCE_EXHAUSTED"}}`, ErrorDetail{Message: "Resource exhausted", Type: "RESOURCE_EXHAUSTED", Code: "429"}},
		{"mistral", `{"object":"error","message":"Rate limit exceeded","type":"rate_limited","param":null,"code":"1300"}`, ErrorDetail{Message: "Rate limit exceeded", Type: "rate_limited", Code: "1300"}},
		{"fastapi 422", `{"detail":[{"loc":["body","messages",0,"role"],"msg":"field required","type":"missing"}]}`, ErrorDetail{Message: "body.messages.0.role: field required", Type: "invalid_request_error"}},
		{"xai", `{"code":"invalid-argument","error":"Model does not support parameter reasoningEffort"}`, ErrorDetail{Message: "Model does not support parameter reasoningEffort", Code: "invalid-argument"}},
		{"ollama", `{"error":"model \"x\" not found, try pulling it first"}`, ErrorDetail{Message: `model "x" not found, try pulling it first`}},
		{"bedrock", `{"message":"The security token included in the request is invalid."}`, ErrorDetail{Message: "The security token included in the request is invalid."}},
		{"html", `<html><body>502 Bad Gateway</body></html>`, ErrorDetail{Message: `<html><body>502 Bad Gateway</body></html>`}},
		{"empty", ``, ErrorDetail{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ParseErrorBody([]byte(tc.body)); got != tc.want {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func FuzzParseErrorBody(f *testing.F) {
	f.Add([]byte(`{"error":{"message":"x"}}`))
	f.Add([]byte(`{"detail":[{"loc":[1],"msg":"m"}]}`))
	f.Add([]byte("\xff<html>"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d := ParseErrorBody(b)
		if len(d.Message) > 2048 && !gjsonValid(b) {
			t.Errorf("message of %d bytes from a non-JSON body", len(d.Message))
		}
	})
}

func TestParseErrorBodyDeeplyNested(t *testing.T) {
	d := ParseErrorBody([]byte(`{"error":` + strings.Repeat("[", 4<<20)))
	if d.Message == "" {
		t.Error("no message for a malformed body")
	}
}
