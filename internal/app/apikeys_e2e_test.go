package app_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ai-gateway/gateway/internal/config"
	"github.com/ai-gateway/gateway/internal/store"
)

// TestAPIKeyLifecycle: create, use on the data plane, rotate (the old key
// works during the transition only), expire (the worker), delete; raw keys
// appear only in the answers to create and rotate, never in a list, a log
// record, an audit record or the database.
func TestAPIKeyLifecycle(t *testing.T) {
	h := start(t, func(c *config.Config) { c.KeyExpiryInterval = 20 * time.Millisecond })
	ws := h.app.Bootstrap.WorkspaceID
	var raws []string

	// Create and use.
	raw, id := h.newKey(h.key, "workspace", "service", map[string]any{
		"name": "ci", "description": "for CI", "scopes": []string{"completions.write", "logs.list"},
		"usage_limits": map[string]any{"credit_limit": 10, "current_usage": 0.35}, "alert_emails": []string{"ops@example.com"},
		"rate_limits": []any{map[string]any{"type": "requests", "unit": "rpm", "value": 60}},
		"defaults":    map[string]any{"config_id": "pc-x", "metadata": map[string]string{"team": "a"}, "allow_config_override": true},
	})
	raws = append(raws, raw)
	if !strings.HasPrefix(raw, "gw-") {
		t.Fatalf("raw key %q", raw)
	}
	if got := h.chat(raw); got != 200 {
		t.Fatalf("new key on the data plane: %d", got)
	}
	m := h.must(h.key, "GET", "/v1/api-keys/"+id, nil)
	if m["key"] == raw || !strings.Contains(m["key"].(string), "…") || m["workspace_id"] != ws {
		t.Errorf("GET shows key %v, workspace %v", m["key"], m["workspace_id"])
	}
	if m["usage_limits"].(map[string]any)["current_usage"] != 0.35 || m["status"] != "active" || m["description"] != "for CI" {
		t.Errorf("stored key = %v", m)
	}

	// Rotate with a transition: both work, then only the new one.
	rot := h.must(h.key, "POST", "/v1/api-keys/"+id+"/rotate", map[string]any{"key_transition_period_ms": 600})
	raw2, _ := rot["key"].(string)
	raws = append(raws, raw2)
	if raw2 == "" || raw2 == raw || rot["key_transition_expires_at"] == nil || rot["id"] != id {
		t.Fatalf("rotate answered %v", rot)
	}
	until, err := time.Parse(time.RFC3339Nano, rot["key_transition_expires_at"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if got := h.chat(raw); got != 200 {
		t.Errorf("old key during the transition: %d", got)
	}
	if got := h.chat(raw2); got != 200 {
		t.Errorf("new key: %d", got)
	}
	time.Sleep(time.Until(until) + 50*time.Millisecond)
	if got := h.chat(raw); got != 401 {
		t.Errorf("old key after the transition: %d", got)
	}
	if got := h.chat(raw2); got != 200 {
		t.Errorf("new key after the transition: %d", got)
	}
	// Without a transition the old key stops at once.
	rot = h.must(h.key, "POST", "/v1/api-keys/"+id+"/rotate", nil)
	raw3 := rot["key"].(string)
	raws = append(raws, raw3)
	if got := h.chat(raw2); got != 401 {
		t.Errorf("key rotated without transition: %d", got)
	}
	if got := h.chat(raw3); got != 200 {
		t.Errorf("newest key: %d", got)
	}
	for _, ms := range []any{-1, 7*24*3600*1000 + 1, "1"} {
		if status, _ := h.call(h.key, "POST", "/v1/api-keys/"+id+"/rotate", map[string]any{"key_transition_period_ms": ms}); status != 400 {
			t.Errorf("key_transition_period_ms %v: %d", ms, status)
		}
	}

	// Expire: rejected once past expires_at, marked expired by the worker.
	exp := time.Now().Add(400 * time.Millisecond).UTC()
	rawE, idE := h.newKey(h.key, "workspace", "service", map[string]any{"expires_at": exp.Format(time.RFC3339Nano)})
	raws = append(raws, rawE)
	if got := h.chat(rawE); got != 200 {
		t.Errorf("expiring key before its expiry: %d", got)
	}
	time.Sleep(time.Until(exp) + 20*time.Millisecond)
	if got := h.chat(rawE); got != 401 {
		t.Errorf("key past its expiry: %d", got)
	}
	deadline := time.Now().Add(3 * time.Second)
	for h.must(h.key, "GET", "/v1/api-keys/"+idE, nil)["status"] != "expired" {
		if time.Now().After(deadline) {
			t.Fatal("the worker did not mark the key expired")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if status, m := h.call(h.key, "POST", "/v1/api-keys/"+idE+"/rotate", nil); status != 400 {
		t.Errorf("rotating an expired key: %d %v", status, m)
	}
	// A new expiry in the future revives it.
	h.must(h.key, "PUT", "/v1/api-keys/"+idE, map[string]any{"expires_at": time.Now().Add(time.Hour).Format(time.RFC3339)})
	if got := h.chat(rawE); got != 200 {
		t.Errorf("revived key: %d", got)
	}

	// Delete.
	if m := h.must(h.key, "DELETE", "/v1/api-keys/"+id, nil); m["deleted"] != true {
		t.Errorf("delete answered %v", m)
	}
	if got := h.chat(raw3); got != 401 {
		t.Errorf("deleted key on the data plane: %d", got)
	}
	if status, _ := h.call(h.key, "GET", "/v1/api-keys/"+id, nil); status != 404 {
		t.Errorf("deleted key: %d", status)
	}

	// No raw key anywhere but the answers that created them.
	var seen strings.Builder
	for _, path := range []string{"/v1/api-keys?page_size=1000", "/v1/logs?page_size=1000", "/v1/audit-logs?page_size=1000", "/v1/api-keys/" + idE} {
		_, b := h.do("GET", path, nil, h.admin())
		seen.Write(b)
	}
	h.shutdown()
	for _, name := range []string{"gateway.db", "gateway.db-wal"} {
		b, err := os.ReadFile(filepath.Join(h.cfg.DataDir, name))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		seen.Write(b)
	}
	for _, r := range append(raws, h.key) {
		if strings.Contains(seen.String(), r) {
			t.Errorf("raw key %s…%s found in a list, a record or the database", r[:6], r[len(r)-4:])
		}
	}
	if !strings.Contains(seen.String(), "api_keys.rotate") {
		t.Error("the scan saw no audit records")
	}
}

// TestAPIKeyValidation: every field is validated strictly, scopes follow
// the key's kind and role, and the deployments:create spelling is accepted.
func TestAPIKeyValidation(t *testing.T) {
	h := start(t)
	for _, tt := range []struct {
		name, path string
		body       map[string]any
		param      string
	}{
		{"unknown field", "workspace/service", map[string]any{"name": "n", "colour": "red"}, "colour"},
		{"no name", "workspace/service", map[string]any{}, "name"},
		{"long name", "workspace/service", map[string]any{"name": strings.Repeat("n", 256)}, "name"},
		{"unknown scope", "workspace/service", map[string]any{"name": "n", "scopes": []string{"logs.list", "root"}}, "scopes[1]"},
		{"scope of an admin key", "workspace/service", map[string]any{"name": "n", "scopes": []string{"workspaces.create"}}, "scopes[0]"},
		{"feedback on an admin key", "organisation/service", map[string]any{"name": "n", "scopes": []string{"feedback.write"}}, "scopes[0]"},
		{"rate limit unit", "workspace/service", map[string]any{"name": "n", "rate_limits": []any{map[string]any{"type": "requests", "unit": "rps", "value": 1}}}, "rate_limits[0].unit"},
		{"rate limit value", "workspace/service", map[string]any{"name": "n", "rate_limits": []any{map[string]any{"type": "requests", "unit": "rpm", "value": 0.5}}}, "rate_limits.value"},
		{"rate limit object", "workspace/service", map[string]any{"name": "n", "rate_limits": map[string]any{"type": "requests"}}, "rate_limits"},
		{"rate limit extra field", "workspace/service", map[string]any{"name": "n", "rate_limits": []any{map[string]any{"type": "requests", "unit": "rpm", "value": 1, "burst": 2}}}, "rate_limits.burst"},
		{"usage limit missing", "workspace/service", map[string]any{"name": "n", "usage_limits": map[string]any{"type": "cost"}}, "usage_limits.credit_limit"},
		{"usage limit negative usage", "workspace/service", map[string]any{"name": "n", "usage_limits": map[string]any{"credit_limit": 5, "current_usage": -1}}, "usage_limits.current_usage"},
		{"usage limit reset", "workspace/service", map[string]any{"name": "n", "usage_limits": map[string]any{"credit_limit": 5, "periodic_reset": "hourly"}}, "usage_limits.periodic_reset"},
		{"defaults field", "workspace/service", map[string]any{"name": "n", "defaults": map[string]any{"config": "x"}}, "defaults.config"},
		{"defaults metadata", "workspace/service", map[string]any{"name": "n", "defaults": map[string]any{"metadata": map[string]any{"a": 1}}}, "defaults.metadata"},
		{"email", "workspace/service", map[string]any{"name": "n", "alert_emails": []string{"Ops <ops@example.com>"}}, "alert_emails[0]"},
		{"past expiry", "workspace/service", map[string]any{"name": "n", "expires_at": "2020-01-01T00:00:00Z"}, "expires_at"},
		{"bad expiry", "workspace/service", map[string]any{"name": "n", "expires_at": "tomorrow"}, "expires_at"},
		{"org key with workspace", "organisation/service", map[string]any{"name": "n", "workspace_id": h.app.Bootstrap.WorkspaceID}, "workspace_id"},
		{"service key with user", "workspace/service", map[string]any{"name": "n", "user_id": h.app.Bootstrap.UserID}, "user_id"},
		{"user key without user", "workspace/user", map[string]any{"name": "n"}, "user_id"},
		{"unknown user", "workspace/user", map[string]any{"name": "n", "user_id": "nobody"}, "user_id"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, m := h.call(h.key, "POST", "/v1/api-keys/"+tt.path, tt.body)
			if status != 400 {
				t.Fatalf("%d %v", status, m)
			}
			if e := m["error"].(map[string]any); e["param"] != tt.param || e["type"] != "invalid_request_error" {
				t.Errorf("error = %v, want param %q", e, tt.param)
			}
		})
	}
	if status, _ := h.call(h.key, "POST", "/v1/api-keys/team/service", map[string]any{"name": "n"}); status != 404 {
		t.Errorf("unknown key type: %d", status)
	}

	// Scopes: the SPEC.md spelling is stored in API.md's; no scopes gives
	// every scope the kind and role allow.
	m := h.must(h.key, "POST", "/v1/api-keys/organisation/service", map[string]any{"name": "d", "scopes": []string{"deployments:create", "deployments.read", "deployments:create"}})
	if got := m["scopes"].([]any); len(got) != 2 || got[0] != "deployments.create" || got[1] != "deployments.read" {
		t.Errorf("scopes = %v", got)
	}
	deploy := m["key"].(string)
	// The key may create deployments: past RBAC, the handler validates.
	if status, m := h.call(deploy, "POST", "/v1/deployments", map[string]any{}); status != 400 || m["error"].(map[string]any)["param"] != "name" {
		t.Errorf("deployments:create key on POST /v1/deployments: %d %v", status, m)
	}
	if status, _ := h.call(deploy, "GET", "/v1/deployments", nil); status != 403 {
		t.Errorf("deployments:create key on GET /v1/deployments (deployments.list): %d", status)
	}
	m = h.must(h.key, "POST", "/v1/api-keys/workspace/service", map[string]any{"name": "all"})
	scopes := strings.Join(toStrings(m["scopes"]), " ")
	for _, want := range []string{"completions.write", "configs.create", "virtual_keys.delete", "api_keys.create", "feedback.write", "analytics.view", "logs.write", "workspaces.read"} {
		if !strings.Contains(scopes, want) {
			t.Errorf("default workspace-key scopes lack %s: %s", want, scopes)
		}
	}
	for _, not := range []string{"workspaces.create", "organisation_users.list", "invites.create", "audit_logs.list", "organisation_settings.update"} {
		if strings.Contains(scopes, not) {
			t.Errorf("default workspace-key scopes include %s", not)
		}
	}
	m = h.must(h.key, "POST", "/v1/api-keys/organisation/service", map[string]any{"name": "all"})
	if scopes := strings.Join(toStrings(m["scopes"]), " "); strings.Contains(scopes, "feedback.write") || !strings.Contains(scopes, "audit_logs.list") {
		t.Errorf("default admin-key scopes: %s", scopes)
	}
	// A key cannot grant what it lacks.
	limited := h.must(h.key, "POST", "/v1/api-keys/organisation/service", map[string]any{"name": "l", "scopes": []string{"api_keys.create", "logs.list"}})["key"].(string)
	if status, m := h.call(limited, "POST", "/v1/api-keys/workspace/service", map[string]any{"name": "x", "scopes": []string{"configs.create"}}); status != 403 {
		t.Errorf("granting an unheld scope: %d %v", status, m)
	}
	m = h.must(limited, "POST", "/v1/api-keys/workspace/service", map[string]any{"name": "x"})
	if got := toStrings(m["scopes"]); len(got) != 2 || got[0] != "api_keys.create" || got[1] != "logs.list" {
		t.Errorf("default scopes under a limited creator = %v", got)
	}
	// A key missing the route's scope gets 403, whatever its role.
	if status, _ := h.call(limited, "GET", "/v1/virtual-keys", nil); status != 403 {
		t.Errorf("list virtual keys without the scope: %d", status)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}

// TestWorkspaceKeySettings: a workspace's maximum number of user keys and
// default and maximum user-key expiry apply to user keys created in it.
func TestWorkspaceKeySettings(t *testing.T) {
	h := start(t)
	ws := h.must(h.key, "POST", "/v1/admin/workspaces", map[string]any{"name": "Limited", "settings": map[string]any{
		"maxUserApiKeys": 1, "defaultUserApiKeyExpiryDays": 10, "maxUserApiKeyExpiryDays": 30,
	}})
	wsID := ws["id"].(string)
	if s := ws["settings"].(map[string]any); s["membersViewAnalytics"] != true || s["maxUserApiKeys"] != 1.0 {
		t.Errorf("settings = %v", s)
	}
	user := h.addUser("dev@example.com", "member", map[string]string{wsID: "member"})
	body := func(extra map[string]any) map[string]any {
		b := map[string]any{"name": "dev", "user_id": user, "workspace_id": ws["slug"]}
		for k, v := range extra {
			b[k] = v
		}
		return b
	}
	if status, m := h.call(h.key, "POST", "/v1/api-keys/workspace/user", body(map[string]any{"expires_at": time.Now().Add(40 * 24 * time.Hour).Format(time.RFC3339)})); status != 400 {
		t.Errorf("expiry beyond the maximum: %d %v", status, m)
	}
	m := h.must(h.key, "POST", "/v1/api-keys/workspace/user", body(nil))
	exp, err := time.Parse(time.RFC3339Nano, m["expires_at"].(string))
	if err != nil || exp.Sub(time.Now()) < 9*24*time.Hour || exp.Sub(time.Now()) > 10*24*time.Hour+time.Minute {
		t.Errorf("default expiry = %v, %v", m["expires_at"], err)
	}
	if m["workspace_id"] != wsID || m["user_id"] != user || m["sub_type"] != "user" {
		t.Errorf("user key = %v", m)
	}
	if status, m := h.call(h.key, "POST", "/v1/api-keys/workspace/user", body(nil)); status != 400 || m["error"].(map[string]any)["code"] != "user_api_key_limit" {
		t.Errorf("second user key: %d %v", status, m)
	}
	if status, m := h.call(h.key, "PUT", "/v1/api-keys/"+m["id"].(string), map[string]any{"expires_at": nil}); status != 400 {
		t.Errorf("clearing the expiry of a user key under a maximum: %d %v", status, m)
	}
	// Service keys are not user keys.
	h.must(h.key, "POST", "/v1/api-keys/workspace/service", map[string]any{"name": "svc", "workspace_id": wsID})
	// A member's key lists the workspace's keys: its own masked, other
	// users' and service keys without any key.
	other := h.addUser("dev2@example.com", "member", map[string]string{wsID: "member"})
	h.must(h.key, "POST", "/v1/api-keys/workspace/user", map[string]any{"name": "dev2", "user_id": other, "workspace_id": wsID})
	mine := m["key"].(string)
	list := h.must(mine, "GET", "/v1/api-keys", nil)
	if list["total"] != 3.0 {
		t.Errorf("member lists %v keys", list["total"])
	}
	for _, d := range list["data"].([]any) {
		k := d.(map[string]any)
		key, shown := k["key"]
		switch {
		case k["id"] == m["id"] && (!shown || !strings.Contains(key.(string), "…")):
			t.Errorf("own key shown as %v", key)
		case k["id"] != m["id"] && shown:
			t.Errorf("%s key of user %v shown to a member as %v", k["sub_type"], k["user_id"], key)
		}
	}
	if status, _ := h.call(mine, "DELETE", "/v1/api-keys/"+m["id"].(string), nil); status != 403 {
		t.Errorf("member deleting a key: %d", status)
	}
	h.withStore(func(st *store.Store) {
		n, err := st.CountUserAPIKeys(context.Background(), wsID, user)
		if err != nil || n != 1 {
			t.Errorf("CountUserAPIKeys = %d, %v", n, err)
		}
	})
}
