package admin

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/ai-gateway/gateway/internal/auth"
)

func TestRuleFor(t *testing.T) {
	for _, tt := range []struct {
		method, pattern, path string
		scope, action, res    string
	}{
		{"POST", "POST /v1/api-keys/{type}/{subtype}", "/v1/api-keys/workspace/user", "api_keys.create", "api_keys.create", "api_key"},
		{"GET", "GET /v1/api-keys", "/v1/api-keys", "api_keys.list", "api_keys.list", "api_key"},
		{"GET", "GET /v1/api-keys/{id}", "/v1/api-keys/x", "api_keys.read", "api_keys.read", "api_key"},
		{"POST", "POST /v1/api-keys/{id}/rotate", "/v1/api-keys/x/rotate", "api_keys.update", "api_keys.rotate", "api_key"},
		{"DELETE", "DELETE /v1/api-keys/{id}", "/v1/api-keys/x", "api_keys.delete", "api_keys.delete", "api_key"},
		{"PUT", "PUT /v1/virtual-keys/{slug}", "/v1/virtual-keys/x", "virtual_keys.update", "virtual_keys.update", "virtual_key"},
		{"GET", "GET /v1/configs/{slug}/versions", "/v1/configs/x/versions", "configs.list", "configs.list", "config"},
		{"POST", "POST /v1/admin/workspaces", "/v1/admin/workspaces", "workspaces.create", "workspaces.create", "workspace"},
		{"POST", "POST /v1/admin/workspaces/{id}/users", "/v1/admin/workspaces/w/users", "workspace_users.create", "workspace_users.create", "workspace_member"},
		{"PUT", "PUT /v1/admin/workspaces/{id}/users/{user_id}", "/v1/admin/workspaces/w/users/u", "workspace_users.update", "workspace_users.update", "workspace_member"},
		{"GET", "GET /v1/admin/users", "/v1/admin/users", "organisation_users.list", "organisation_users.list", "user"},
		{"POST", "POST /v1/admin/users/invites/{id}/resend", "/v1/admin/users/invites/i/resend", "invites.update", "invites.resend", "invite"},
		{"PUT", "PUT /v1/admin/organisation", "/v1/admin/organisation", "organisation_settings.update", "organisation_settings.update", "organisation"},
		{"GET", "GET /v1/logs", "/v1/logs", "logs.list", "logs.list", "log"},
		{"GET", "GET /v1/logs/{id}", "/v1/logs/x", "logs.view", "logs.view", "log"},
		{"POST", "POST /v1/logs", "/v1/logs", "logs.write", "logs.write", "log"},
		{"GET", "GET /v1/audit-logs", "/v1/audit-logs", "audit_logs.list", "audit_logs.list", "audit_log"},
		// Routes not served yet are judged by their path.
		{"POST", "", "/v1/logs/exports", "logs.export", "logs.export", "log"},
		{"POST", "", "/v1/feedback", "feedback.write", "feedback.create", "feedback"},
		{"PUT", "", "/v1/feedback/f", "feedback.write", "feedback.update", "feedback"},
		{"GET", "", "/v1/analytics/graphs/cost", "analytics.view", "analytics.view", "analytics"},
		{"GET", "", "/v1/prompts/p", "prompts.read", "prompts.read", "prompt"},
		{"POST", "", "/v1/prompts/p/makeDefault", "prompts.update", "prompts.makeDefault", "prompt"},
		{"POST", "", "/v1/deployments", "deployments.create", "deployments.create", "deployment"},
		{"GET", "", "/v1/nothing-here", "", "", ""},
		{"GET", "", "/health/live", "", "", ""},
	} {
		r := ruleFor(tt.method, tt.pattern, tt.path)
		if r.scope != tt.scope || r.action != tt.action || r.resource != tt.res {
			t.Errorf("ruleFor(%s %q %s) = %+v, want %s %s %s", tt.method, tt.pattern, tt.path, r, tt.scope, tt.action, tt.res)
		}
		if r.scope != "" && !auth.KnownScope(r.scope) {
			t.Errorf("%s: scope %s is not in auth's catalogue", tt.path, r.scope)
		}
	}
}

// TestScopeAccessCoversCatalogue: every scope of API.md §2 has an access
// rule, and the rules follow SPEC.md's operation table.
func TestScopeAccessCoversCatalogue(t *testing.T) {
	for _, res := range auth.ScopeResources {
		for _, v := range auth.ScopeVerbs {
			if _, ok := scopeAccess[res+"."+v]; !ok {
				t.Errorf("no access rule for %s.%s", res, v)
			}
		}
	}
	for _, s := range auth.OtherScopes {
		if _, ok := scopeAccess[s]; !ok {
			t.Errorf("no access rule for %s", s)
		}
	}
	for _, tt := range []struct {
		scope string
		kind  keyKinds
		r     role
		want  bool
	}{
		{"organisation_settings.update", orgKeys, roleAdmin, true},
		{"organisation_settings.update", wsKeys, roleManager, false},
		{"workspaces.create", wsKeys, roleManager, false},
		{"workspaces.read", wsKeys, roleMember, true},
		{"organisation_users.update", wsKeys, roleManager, false},
		{"configs.create", wsKeys, roleManager, true},
		{"configs.create", wsKeys, roleMember, false},
		{"configs.read", wsKeys, roleMember, true},
		{"virtual_keys.delete", orgKeys, roleAdmin, true},
		{"analytics.view", wsKeys, roleMember, true},
		{"feedback.write", orgKeys, roleAdmin, false},
		{"feedback.write", wsKeys, roleMember, true},
		{"deployments:create", orgKeys, roleAdmin, true},
		{"audit_logs.list", wsKeys, roleManager, false},
		{"completions.write", wsKeys, roleNone, false},
		{"nonsense", orgKeys, roleAdmin, false},
	} {
		if got := allows(tt.scope, tt.kind, tt.r); got != tt.want {
			t.Errorf("allows(%s, %d, %s) = %v", tt.scope, tt.kind, tt.r, got)
		}
	}
	member := scopesFor(wsKeys, roleMember)
	for _, s := range member {
		if acc := scopeAccess[s]; acc.role > roleMember {
			t.Errorf("member scopes include %s", s)
		}
	}
	if !slices.Contains(member, "completions.write") || slices.Contains(member, "api_keys.create") {
		t.Errorf("member scopes = %v", member)
	}
	if len(scopesFor(orgKeys, roleNone)) != 0 {
		t.Error("a key with no role gets scopes")
	}
}

func TestLimitsValidation(t *testing.T) {
	for _, tt := range []struct {
		raw  string
		want string // "" for an error
	}{
		{`null`, `null`},
		{`[]`, `[]`},
		{`[{"type":"requests","unit":"rpm","value":10}]`, `[{"type":"requests","unit":"rpm","value":10}]`},
		{`[{"type":"requests","unit":"rpm","value":10},{"type":"requests","unit":"rpm","value":5}]`, ""},
		{`[{"type":"requests","unit":"rpm"}]`, ""},
		{`{"type":"requests","unit":"rpm","value":10}`, ""},
	} {
		got, err := validRateLimits(json.RawMessage(tt.raw), "rate_limits")
		if tt.want == "" {
			if err == nil {
				t.Errorf("rate limits %s: accepted as %s", tt.raw, got)
			}
			continue
		}
		if err != nil || string(jsonOrNull(got)) != tt.want {
			t.Errorf("rate limits %s = %s, %v", tt.raw, got, err)
		}
	}
	for _, tt := range []struct {
		raw  string
		want string
	}{
		{`{"credit_limit":5}`, `{"type":"cost","credit_limit":5,"current_usage":0}`},
		{`{"credit_limit":5,"current_usage":1.25,"alert_threshold":4,"periodic_reset":"monthly","type":"tokens"}`,
			`{"type":"tokens","credit_limit":5,"alert_threshold":4,"periodic_reset":"monthly","current_usage":1.25}`},
		{`{"credit_limit":5,"alert_threshold":6}`, ""},
		{`{"credit_limit":0}`, ""},
		{`{"credit_limit":"5"}`, ""},
		{`[]`, ""},
	} {
		got, err := validUsageLimits(json.RawMessage(tt.raw), "usage_limits")
		if tt.want == "" {
			if err == nil {
				t.Errorf("usage limits %s: accepted as %s", tt.raw, got)
			}
			continue
		}
		if err != nil || string(got) != tt.want {
			t.Errorf("usage limits %s = %s, %v", tt.raw, got, err)
		}
	}
}
