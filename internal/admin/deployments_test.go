package admin

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/registry"
	"github.com/ai-gateway/gateway/internal/secret"
)

func TestDeploymentSlug(t *testing.T) {
	tests := []struct{ name, want string }{
		{"Prod EU", "prod-eu"},
		{"  Prod -- EU (west) ", "prod-eu-west"},
		{"Ünïcode only", "n-code-only"},
		{"!!!", "deployment"},
		{strings.Repeat("ab ", 200), strings.TrimRight(strings.Repeat("ab-", 85), "-")},
	}
	for _, tt := range tests {
		got := deploymentSlug(tt.name)
		if got != tt.want {
			t.Errorf("deploymentSlug(%q) = %q, want %q", tt.name, got, tt.want)
		}
		if !slugPattern.MatchString(got) {
			t.Errorf("deploymentSlug(%q) = %q is not a valid slug", tt.name, got)
		}
	}
}

func TestValidDeploymentLimits(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		want  registry.DeploymentLimits
		param string
	}{
		{"null", `null`, registry.DeploymentLimits{}, ""},
		{"empty", `{}`, registry.DeploymentLimits{}, ""},
		{"rate", `{"rate_limits":[{"type":"tokens","unit":"rph","value":100}]}`,
			registry.DeploymentLimits{RateLimits: json.RawMessage(`[{"type":"tokens","unit":"rph","value":100}]`)}, ""},
		{"usage", `{"usage_limits":{"credit_limit":2}}`,
			registry.DeploymentLimits{UsageLimits: json.RawMessage(`{"type":"cost","credit_limit":2,"current_usage":0}`)}, ""},
		{"unknown field", `{"rate_limit":[]}`, registry.DeploymentLimits{}, "limits.rate_limit"},
		{"not an object", `[]`, registry.DeploymentLimits{}, "limits"},
		{"bad value", `{"rate_limits":[{"type":"requests","unit":"rpm","value":0}]}`, registry.DeploymentLimits{}, "limits.rate_limits[0].value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := validDeploymentLimits(json.RawMessage(tt.in))
			if tt.param != "" {
				if he := httpx.As(err); err == nil || he.Status != 400 || he.Param != tt.param {
					t.Fatalf("err %v (param %q), want a 400 naming %s", err, httpx.As(err).Param, tt.param)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestDeploymentConfigSeal: an inline config is sealed bound to its
// deployment, and cannot be opened as another deployment's.
func TestDeploymentConfigSeal(t *testing.T) {
	box, err := secret.NewBox(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	plain := []byte(`{"provider":"openai","api_key":"sk-x"}`)
	d := &registry.Deployment{ID: "d1", Config: SealDeploymentConfig(box, "d1", plain)}
	if strings.Contains(string(d.Config), "sk-x") {
		t.Fatalf("sealed form shows the credential: %s", d.Config)
	}
	got, err := OpenDeploymentConfig(box, d)
	if err != nil || string(got) != string(plain) {
		t.Fatalf("open: %s %v", got, err)
	}
	other := &registry.Deployment{ID: "d2", Config: d.Config}
	if _, err := OpenDeploymentConfig(box, other); err == nil {
		t.Error("opened as another deployment's config")
	}
	if got, err := OpenDeploymentConfig(box, &registry.Deployment{ID: "d3"}); got != nil || err != nil {
		t.Errorf("no config: %s %v", got, err)
	}
}
