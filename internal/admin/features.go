package admin

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/ai-gateway/gateway/internal/auth"
	"github.com/ai-gateway/gateway/internal/httpx"
)

// SPEC.md's deployment feature flags that switch control-plane surfaces off
// (API.md §1: a feature set OFF answers its endpoints with 403
// feature_disabled).
const (
	FeatureGuardrails  = "GUARDRAILS_ENABLED"
	FeatureAPIAccess   = "API_ACCESS_ENABLED"
	FeatureDataExports = "DATA_EXPORTS_ENABLED"
	FeatureUsageLimits = "USAGE_LIMITS_ENABLED"
	FeatureAuditLogs   = "AUDIT_LOGS_ENABLED"
	FeatureSCIM        = "SCIM_ENABLED"
	FeaturePolicy      = "POLICY_ENABLED"
)

// enabled reports whether a feature flag is on; every flag is on when Deps
// has no Features function.
func (a *API) enabled(feature string) bool {
	return a.d.Features == nil || a.d.Features(feature)
}

func featureDisabled(feature, what string) error {
	return httpx.Forbidden("feature_disabled", what+" is disabled on this deployment ("+feature+"=OFF)")
}

// featureGate refuses, before authentication, a route whose feature is
// switched off, so that a disabled surface looks the same to every caller.
func (a *API) featureGate(r *http.Request, rl rule) error {
	path := strings.TrimPrefix(r.URL.Path, "/v1/")
	type gate struct {
		feature string
		what    string
		match   bool
	}
	for _, g := range []gate{
		{FeatureGuardrails, "guardrails", rl.resource == "guardrail"},
		{FeatureAuditLogs, "the audit log", rl.resource == "audit_log"},
		{FeatureDataExports, "log exports", rl.resource == "log" && strings.HasPrefix(path, "logs/exports")},
		{FeaturePolicy, "policies", rl.resource == "policy"},
		{FeatureUsageLimits, "usage limits", strings.HasPrefix(path, "policies/usage-limits")},
		{FeatureSCIM, "SCIM provisioning", path == "scim" || strings.HasPrefix(path, "scim/")},
	} {
		if g.match && !a.enabled(g.feature) {
			return featureDisabled(g.feature, g.what)
		}
	}
	return nil
}

// apiAccessGate applies API_ACCESS_ENABLED: when it is OFF the control
// plane is reachable only from the console (an SSO session), never with an
// API key or a JWT. The data plane is not affected.
func (a *API) apiAccessGate(p *auth.Principal) error {
	if p.Method == auth.MethodSession || a.enabled(FeatureAPIAccess) {
		return nil
	}
	return featureDisabled(FeatureAPIAccess, "programmatic access to the control plane")
}

// usageLimitsGate applies USAGE_LIMITS_ENABLED to writes: with the feature
// OFF a body may not set usage_limits (on API keys, virtual keys,
// providers, integrations, workspaces or deployments).
func (a *API) usageLimitsGate(body []byte) error {
	if a.enabled(FeatureUsageLimits) || !bytes.Contains(body, []byte(`"usage_limits"`)) {
		return nil
	}
	var b struct {
		UsageLimits json.RawMessage `json:"usage_limits"`
	}
	if json.Unmarshal(body, &b) != nil || isNull(b.UsageLimits) {
		return nil
	}
	return featureDisabled(FeatureUsageLimits, "usage limits")
}
