package audit

import (
	"strings"
	"testing"
)

func TestMaskBody(t *testing.T) {
	raw := "gw-" + strings.Repeat("a1B2", 10)
	for _, tt := range []struct{ in, want string }{
		{``, ``},
		{`{"name":"n","key":"sk-1"}`, `{"key":"********","name":"n"}`},
		{`{"config":{"targets":[{"provider":"openai","api_key":"sk-2","override_params":{"max_tokens":5}}]}}`,
			`{"config":{"targets":[{"api_key":"********","override_params":{"max_tokens":5},"provider":"openai"}]}}`},
		{`{"aws_secret_access_key":"s","aws_session_token":"t","aws_access_key_id":"AKIA","vertex_service_account_json":"{}","client_secret":"c","password":"p","secrets":{"a":1}}`,
			`{"aws_access_key_id":"AKIA","aws_secret_access_key":"********","aws_session_token":"********","client_secret":"********","password":"********","secrets":"********","vertex_service_account_json":"********"}`},
		{`{"api_key_id":"k1","key":null,"note":"contains ` + raw + `"}`, `{"api_key_id":"k1","key":null,"note":"contains ********"}`},
		{`[{"token":"x"},1.50]`, `[{"token":"********"},1.50]`},
		{`not json key=sk-3`, `[non-JSON body of 17 bytes not recorded]`},
		{`{"a":1}{"b":2}`, `[non-JSON body of 14 bytes not recorded]`},
	} {
		if got := MaskBody([]byte(tt.in)); got != tt.want {
			t.Errorf("MaskBody(%s) =\n%s\nwant\n%s", tt.in, got, tt.want)
		}
	}
	long := `{"note":"` + strings.Repeat("é", MaxBody) + `"}`
	if got := MaskBody([]byte(long)); len(got) > MaxBody+20 || !strings.HasSuffix(got, "…[truncated]") {
		t.Errorf("long body masked to %d bytes", len(got))
	}
	if got := MaskBody([]byte(`{"x":"` + strings.Repeat("a", maxParse) + `"}`)); !strings.HasPrefix(got, "[body of") {
		t.Errorf("huge body = %.40s", got)
	}
}
