package auth

import "strings"

// Resources with the control-plane scopes <resource>.create|read|update|
// delete|list (API.md §2 "Which keys may do what").
var ScopeResources = []string{
	"configs", "virtual_keys", "api_keys", "workspaces", "workspace_users", "organisation_users", "invites",
	"integrations", "providers", "prompts", "guardrails", "mcp_integrations", "mcp_servers", "policies",
	"model_pricing", "deployments", "organisation_settings",
}

// ScopeVerbs are the verbs of the resource scopes.
var ScopeVerbs = []string{"create", "read", "update", "delete", "list"}

// Scopes that are not <resource>.<verb> (API.md §2).
const (
	ScopeAPIKeysCreate   = "api_keys.create"
	ScopeAuditLogsList   = "audit_logs.list"
	ScopeAnalyticsView   = "analytics.view"
	ScopeFeedbackWrite   = "feedback.write"
	ScopeMCPInvoke       = "mcp.invoke"
	scopeDeploymentsPfx  = "deployments:"
	scopeDeploymentsNorm = "deployments."
)

// OtherScopes are the scopes beside the resource ones.
var OtherScopes = []string{
	ScopeCompletionsWrite, ScopeLogsList, ScopeLogsView, ScopeLogsExport, ScopeLogsWrite,
	ScopeAuditLogsList, ScopeAnalyticsView, ScopeFeedbackWrite, ScopeMCPInvoke,
}

var knownScopes = func() map[string]bool {
	m := map[string]bool{}
	for _, r := range ScopeResources {
		for _, v := range ScopeVerbs {
			m[r+"."+v] = true
		}
	}
	for _, s := range OtherScopes {
		m[s] = true
	}
	return m
}()

// NormalizeScope returns the canonical spelling of a scope: SPEC.md spells
// the deployment scopes deployments:create etc., API.md deployments.create;
// both are accepted and stored as the latter.
func NormalizeScope(s string) string {
	if rest, ok := strings.CutPrefix(s, scopeDeploymentsPfx); ok {
		return scopeDeploymentsNorm + rest
	}
	return s
}

// KnownScope reports whether s (in either spelling) names a scope.
func KnownScope(s string) bool { return knownScopes[NormalizeScope(s)] }
