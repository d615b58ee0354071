package auth

import "testing"

func TestScopeSpellings(t *testing.T) {
	p := &Principal{Scopes: []string{"deployments:create", "logs.list"}}
	for scope, want := range map[string]bool{
		"deployments.create": true, "deployments:create": true, "deployments.read": false, "logs.list": true, "logs.view": false,
	} {
		if got := p.Can(scope); got != want {
			t.Errorf("Can(%s) = %v", scope, got)
		}
	}
	if !(&Principal{Scopes: AdminScopes}).Can("anything.at_all") {
		t.Error("the bootstrap scopes do not cover everything")
	}
	for scope, want := range map[string]bool{
		"deployments:list": true, "deployments.list": true, "configs.create": true, "audit_logs.list": true,
		"organisation_settings.update": true, "feedback.write": true, "configs.frobnicate": false, "*": false, "": false,
	} {
		if got := KnownScope(scope); got != want {
			t.Errorf("KnownScope(%q) = %v", scope, got)
		}
	}
	if NormalizeScope("deployments:delete") != "deployments.delete" || NormalizeScope("logs.list") != "logs.list" {
		t.Error("NormalizeScope")
	}
}
