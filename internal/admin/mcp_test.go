package admin

import (
	"strings"
	"testing"

	"github.com/ai-gateway/gateway/internal/httpx"
)

func TestValidMCPHeaders(t *testing.T) {
	many := map[string]string{}
	for i := range maxMCPHeaders + 1 {
		many["X-H"+strings.Repeat("a", i+1)] = "v"
	}
	for _, tc := range []struct {
		name    string
		headers map[string]string
		ok      bool
	}{
		{"bearer", map[string]string{"Authorization": "Bearer x"}, true},
		{"several", map[string]string{"X-Api-Key": "k", "X-Team": "t"}, true},
		{"space in name", map[string]string{"X Api": "k"}, false},
		{"empty name", map[string]string{"": "k"}, false},
		{"empty value", map[string]string{"X-Api-Key": ""}, false},
		{"line break", map[string]string{"X-Api-Key": "a\r\nHost: evil"}, false},
		{"reserved", map[string]string{"Mcp-Session-Id": "s"}, false},
		{"reserved any case", map[string]string{"content-TYPE": "text/plain"}, false},
		{"twice", map[string]string{"X-A": "1", "x-a": "2"}, false},
		{"too many", many, false},
		{"value too long", map[string]string{"X-A": strings.Repeat("v", maxMCPHeaderValue+1)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := validMCPHeaders(tc.headers)
			if tc.ok != (err == nil) {
				t.Fatalf("validMCPHeaders = %v, want ok=%v", err, tc.ok)
			}
			if err != nil {
				if he := httpx.As(err); he.Status != 400 || he.Param != "headers" {
					t.Errorf("error %d param %q, want 400 on headers", he.Status, he.Param)
				}
				for _, v := range tc.headers {
					if len(v) > 3 && strings.Contains(err.Error(), v) {
						t.Errorf("the error shows a header value: %v", err)
					}
				}
			}
		})
	}
}

func TestSameOrigin(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"https://mcp.example/a", "https://mcp.example/b?x=1", true},
		{"https://mcp.example/a", "https://MCP.example/a", true},
		{"https://mcp.example/a", "http://mcp.example/a", false},
		{"https://mcp.example/a", "https://mcp.example:8443/a", false},
		{"https://mcp.example/a", "https://evil.example/a", false},
	} {
		if got := sameOrigin(tc.a, tc.b); got != tc.want {
			t.Errorf("sameOrigin(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestMCPValidURL(t *testing.T) {
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"https://mcp.example/mcp", true},
		{"http://127.0.0.1:8080/sse", true},
		{"ftp://mcp.example/", false},
		{"mcp.example/mcp", false},
		{"https:///nohost", false},
		{"https://mcp.example/" + strings.Repeat("a", 2048), false},
	} {
		if err := mcpValidURL(tc.url); tc.ok != (err == nil) {
			t.Errorf("mcpValidURL(%.40q) = %v, want ok=%v", tc.url, err, tc.ok)
		}
	}
}
