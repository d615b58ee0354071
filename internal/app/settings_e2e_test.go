package app_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/ai-gateway/gateway/internal/config"
)

// withSettings starts a gateway whose deployment settings come from env.
func withSettings(env map[string]string) func(*config.Config) {
	return func(c *config.Config) {
		c.Settings = config.SettingsFromEnv(func(k string) string { return env[k] })
		if err := c.Validate(); err != nil {
			panic(err)
		}
	}
}

// Each *_ENABLED feature set OFF answers its endpoints with 403
// feature_disabled (API.md §1), whoever asks; with the feature on the same
// paths reach their handlers (or the JSON 404 of routes not built yet).
func TestFeatureFlagsOff(t *testing.T) {
	off := map[string]string{}
	for _, f := range config.Features {
		if f != "API_ACCESS_ENABLED" {
			off[f] = "OFF"
		}
	}
	h := start(t, withSettings(off))
	on := start(t)
	for _, tc := range []struct{ method, path string }{
		{"GET", "/v1/guardrails"},
		{"POST", "/v1/guardrails"},
		{"GET", "/v1/audit-logs"},
		{"GET", "/v1/logs/exports"},
		{"POST", "/v1/logs/exports"},
		{"GET", "/v1/policies/rate-limits"},
		{"GET", "/v1/policies/usage-limits"},
		{"GET", "/scim/v2/Users"},
	} {
		path := tc.path
		if path[:4] != "/v1/" {
			path = "/v1" + path
		}
		status, m := h.call(h.key, tc.method, path, map[string]any{})
		if status != http.StatusForbidden || errCode(m) != "feature_disabled" {
			t.Errorf("OFF: %s %s = %d %v, want 403 feature_disabled", tc.method, path, status, m)
		}
		if status, m := on.call(on.key, tc.method, path, map[string]any{}); status == http.StatusForbidden {
			t.Errorf("ON: %s %s = %d %v", tc.method, path, status, m)
		}
	}
	// The request logs themselves stay available without exports.
	h.must(h.key, "GET", "/v1/logs", nil)
}

func errCode(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

// With AUDIT_LOGS_ENABLED=OFF writes are not recorded: turning the log back
// on over the same database shows none of them.
func TestAuditLogsOffRecordsNothing(t *testing.T) {
	dir := t.TempDir()
	key := "gw-settings-test-admin-key-0123456789"
	h := start(t, withSettings(map[string]string{"AUDIT_LOGS_ENABLED": "OFF"}), func(c *config.Config) {
		c.DataDir, c.AdminAPIKey = dir, key
	})
	h.must(h.key, "POST", "/v1/configs", map[string]any{"name": "quiet", "config": map[string]any{"provider": "openai", "api_key": "sk-x"}})
	h.shutdown()
	h2 := start(t, func(c *config.Config) { c.DataDir, c.AdminAPIKey = dir, key })
	got := h2.must(h2.key, "GET", "/v1/audit-logs", nil)
	if got["total"].(float64) != 0 {
		t.Fatalf("audit records written while AUDIT_LOGS_ENABLED=OFF: %v", got)
	}
}

// USAGE_LIMITS_ENABLED=OFF refuses a write that sets usage_limits; the same
// write without them succeeds.
func TestUsageLimitsOff(t *testing.T) {
	h := start(t, withSettings(map[string]string{"USAGE_LIMITS_ENABLED": "OFF"}))
	body := map[string]any{"name": "limited", "usage_limits": map[string]any{"type": "cost", "credit_limit": 10}}
	status, m := h.call(h.key, "POST", "/v1/api-keys/organisation/service", body)
	if status != http.StatusForbidden || errCode(m) != "feature_disabled" {
		t.Fatalf("usage_limits with the feature off: %d %v", status, m)
	}
	delete(body, "usage_limits")
	h.must(h.key, "POST", "/v1/api-keys/organisation/service", body)
	body["usage_limits"] = nil
	h.must(h.key, "POST", "/v1/api-keys/organisation/service", body)
}

// API_ACCESS_ENABLED=OFF closes the control plane to API keys (only console
// sessions may use it); the data plane keeps working.
func TestAPIAccessOff(t *testing.T) {
	h := start(t, withSettings(map[string]string{"API_ACCESS_ENABLED": "OFF"}))
	status, m := h.call(h.key, "GET", "/v1/configs", nil)
	if status != http.StatusForbidden || errCode(m) != "feature_disabled" {
		t.Fatalf("control plane with API access off: %d %v", status, m)
	}
	resp, body := h.do("POST", "/v1/chat/completions", map[string]any{
		"model": "gpt-4o-mini", "messages": []map[string]any{{"role": "user", "content": "hi"}},
	}, h.routing())
	if resp.StatusCode != 200 {
		t.Fatalf("data plane with API access off: %d %s", resp.StatusCode, body)
	}
}

// LOG_RETENTION_DISPLAY bounds what the log endpoints show: a record older
// than the window is neither listed nor fetched, even when asked for by
// time range.
func TestLogRetentionDisplay(t *testing.T) {
	h := start(t, withSettings(map[string]string{"LOG_RETENTION_DISPLAY": "2"}))
	old := time.Now().Add(-72 * time.Hour).UTC().Format(time.RFC3339)
	recent := time.Now().Add(-24 * time.Hour).UTC().Format(time.RFC3339)
	ins := h.must(h.key, "POST", "/v1/logs", []map[string]any{
		{"model": "old-model", "created_at": old, "status_code": 200},
		{"model": "recent-model", "created_at": recent, "status_code": 200},
	})
	data := ins["data"].([]any)
	oldID := data[0].(map[string]any)["id"].(string)
	recentID := data[1].(map[string]any)["id"].(string)

	list := h.must(h.key, "GET", "/v1/logs?start_time="+time.Now().Add(-30*24*time.Hour).UTC().Format(time.RFC3339), nil)
	if list["total"].(float64) != 1 || list["data"].([]any)[0].(map[string]any)["id"] != recentID {
		t.Fatalf("want only the recent record, got %v", list)
	}
	if status, m := h.call(h.key, "GET", "/v1/logs/"+oldID, nil); status != http.StatusNotFound {
		t.Fatalf("old record by id: %d %v", status, m)
	}
	h.must(h.key, "GET", "/v1/logs/"+recentID, nil)
}
