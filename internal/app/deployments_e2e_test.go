package app_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ai-gateway/gateway/internal/app"
	"github.com/ai-gateway/gateway/internal/config"
)

const deploymentAdminKey = "gw-deployment-test-admin-0123456789abcdef"

// startControl starts a gateway serving no deployment over dir, with a
// known admin key so that a second process over the same database can use
// it.
func startControl(t *testing.T, dir string) *harness {
	t.Helper()
	return start(t, func(c *config.Config) { c.DataDir, c.AdminAPIKey = dir, deploymentAdminKey })
}

// startDeployment starts a second gateway process over h's database that
// serves deployment slug, reloading it every 50 ms, in front of h's fake
// upstream.
func startDeployment(t *testing.T, h *harness, slug string) *harness {
	t.Helper()
	d := start(t, func(c *config.Config) {
		c.DataDir, c.AdminAPIKey, c.Deployment, c.KeyCacheTTL = h.cfg.DataDir, deploymentAdminKey, slug, 50*time.Millisecond
	})
	d.up = h.up
	return d
}

// errorCode returns body.error.code of a decoded answer.
func errorCode(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

func errorParam(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	s, _ := e["param"].(string)
	return s
}

func TestDeploymentsCRUD(t *testing.T) {
	h := startControl(t, t.TempDir())
	wsB := h.newWorkspace("team-b")

	prod := h.must(h.key, "POST", "/v1/deployments", map[string]any{"name": "Prod EU", "type": "production", "description": "Europe"})
	if prod["object"] != "deployment" || prod["slug"] != "prod-eu" || prod["type"] != "production" || prod["description"] != "Europe" ||
		prod["config"] != nil || prod["created_at"] == nil || prod["last_updated_at"] == nil || prod["id"] == "" {
		t.Fatalf("created %v", prod)
	}
	if diff := cmp.Diff([]any{}, prod["workspace_ids"]); diff != "" {
		t.Errorf("workspace_ids (-want +got):\n%s", diff)
	}
	// The slug comes from the name, so the same name again conflicts.
	if st, m := h.call(h.key, "POST", "/v1/deployments", map[string]any{"name": "Prod EU", "type": "non-production"}); st != 409 {
		t.Errorf("same slug: %d %v", st, m)
	}

	dev := h.must(h.key, "POST", "/v1/deployments", map[string]any{
		"name": "Dev", "slug": "dev-1", "type": "non-production", "workspace_ids": []string{"team-b", wsB},
		"limits": map[string]any{
			"rate_limits":  []map[string]any{{"type": "requests", "unit": "rpm", "value": 10}},
			"usage_limits": map[string]any{"credit_limit": 5},
		},
	})
	if diff := cmp.Diff([]any{wsB}, dev["workspace_ids"]); diff != "" {
		t.Errorf("workspace_ids resolved from slug and id (-want +got):\n%s", diff)
	}
	wantLimits := map[string]any{
		"rate_limits":  []any{map[string]any{"type": "requests", "unit": "rpm", "value": 10.0}},
		"usage_limits": map[string]any{"type": "cost", "credit_limit": 5.0, "current_usage": 0.0},
	}
	if diff := cmp.Diff(wantLimits, dev["limits"]); diff != "" {
		t.Errorf("limits (-want +got):\n%s", diff)
	}

	for _, key := range []string{"dev-1", dev["id"].(string)} {
		if got := h.must(h.key, "GET", "/v1/deployments/"+key, nil); got["id"] != dev["id"] || got["slug"] != "dev-1" {
			t.Errorf("GET %s: %v", key, got)
		}
	}

	slugs := func(m map[string]any) []string {
		var out []string
		for _, d := range m["data"].([]any) {
			out = append(out, d.(map[string]any)["slug"].(string))
		}
		return out
	}
	for _, tt := range []struct {
		query string
		want  []string
	}{
		{"", []string{"dev-1", "prod-eu"}},
		{"?type=production", []string{"prod-eu"}},
		{"?type=non-production", []string{"dev-1"}},
		{"?page_size=1&current_page=1", []string{"prod-eu"}},
	} {
		m := h.must(h.key, "GET", "/v1/deployments"+tt.query, nil)
		if diff := cmp.Diff(tt.want, slugs(m)); diff != "" || m["object"] != "list" {
			t.Errorf("list %q: object %v (-want +got):\n%s", tt.query, m["object"], diff)
		}
		if tt.query == "?page_size=1&current_page=1" && m["total"] != 2.0 {
			t.Errorf("total %v, want 2", m["total"])
		}
	}
	if st, m := h.call(h.key, "GET", "/v1/deployments?type=staging", nil); st != 400 || errorParam(m) != "type" {
		t.Errorf("bad type filter: %d %v", st, m)
	}

	// PUT changes what it sends; null clears; a taken slug conflicts.
	upd := h.must(h.key, "PUT", "/v1/deployments/dev-1", map[string]any{"description": "staging", "workspace_ids": nil, "limits": nil, "slug": "dev-2"})
	if upd["description"] != "staging" || upd["slug"] != "dev-2" || upd["name"] != "Dev" || upd["type"] != "non-production" ||
		len(upd["workspace_ids"].([]any)) != 0 || len(upd["limits"].(map[string]any)) != 0 {
		t.Errorf("updated %v", upd)
	}
	if st, m := h.call(h.key, "PUT", "/v1/deployments/dev-2", map[string]any{"slug": "prod-eu"}); st != 409 {
		t.Errorf("update to a taken slug: %d %v", st, m)
	}

	// An inline config's credentials are masked, and a masked placeholder
	// sent back keeps them.
	inline := map[string]any{"provider": "openai", "api_key": "sk-inline-secret"}
	withCfg := h.must(h.key, "PUT", "/v1/deployments/dev-2", map[string]any{"config": inline})
	cfg, _ := withCfg["config"].(map[string]any)
	if cfg["api_key"] != "********" || cfg["provider"] != "openai" {
		t.Errorf("inline config answered as %v", withCfg["config"])
	}
	if st, m := h.call(h.key, "PUT", "/v1/deployments/dev-2", map[string]any{"config": cfg}); st != 200 {
		t.Errorf("masked placeholder sent back: %d %v", st, m)
	}

	del := h.must(h.key, "DELETE", "/v1/deployments/dev-2", nil)
	if diff := cmp.Diff(map[string]any{"id": dev["id"], "object": "deployment", "deleted": true}, del); diff != "" {
		t.Errorf("delete (-want +got):\n%s", diff)
	}
	if st, _ := h.call(h.key, "GET", "/v1/deployments/dev-2", nil); st != 404 {
		t.Errorf("after delete: %d", st)
	}
}

func TestDeploymentsValidation(t *testing.T) {
	h := startControl(t, t.TempDir())
	saved := h.must(h.key, "POST", "/v1/configs", map[string]any{"name": "main", "config": map[string]any{"provider": "openai"}})["slug"].(string)
	ok := h.must(h.key, "POST", "/v1/deployments", map[string]any{"name": "With saved", "type": "production", "config": saved})
	if ok["config"] != saved {
		t.Errorf("saved config answered as %v, want %q", ok["config"], saved)
	}
	if st, m := h.call(h.key, "POST", "/v1/deployments", map[string]any{"name": "By id", "type": "production", "config": h.must(h.key, "GET", "/v1/configs/"+saved, nil)["id"]}); st != 200 || m["config"] != saved {
		t.Errorf("saved config by id: %d %v", st, m)
	}

	long := strings.Repeat("a", 256)
	tests := []struct {
		name      string
		body      map[string]any
		status    int
		code      string
		param     string
		codeMatch func(string) bool
	}{
		{"missing type", map[string]any{"name": "x"}, 400, "missing_required", "type", nil},
		{"bad type", map[string]any{"name": "x", "type": "staging"}, 400, "invalid_value", "type", nil},
		{"missing name", map[string]any{"type": "production"}, 400, "missing_required", "name", nil},
		{"long name", map[string]any{"name": long, "type": "production"}, 400, "invalid_value", "name", nil},
		{"long slug", map[string]any{"name": "x", "slug": long, "type": "production"}, 400, "invalid_value", "slug", nil},
		{"bad slug", map[string]any{"name": "x", "slug": "Not A Slug", "type": "production"}, 400, "invalid_value", "slug", nil},
		{"unknown field", map[string]any{"name": "x", "type": "production", "region": "eu"}, 400, "unknown_field", "region", nil},
		{"unknown workspace", map[string]any{"name": "x", "type": "production", "workspace_ids": []string{"nope"}}, 400, "unknown_workspace", "workspace_ids[0]", nil},
		{"workspace_ids not a list", map[string]any{"name": "x", "type": "production", "workspace_ids": "nope"}, 400, "invalid_type", "workspace_ids", nil},
		{"invalid inline config", map[string]any{"name": "x", "type": "production", "config": map[string]any{"provider": "openai", "retry": map[string]any{"attempts": "many"}}}, 400, "", "",
			func(c string) bool { return strings.HasPrefix(c, "AB01_") }},
		{"unknown config field", map[string]any{"name": "x", "type": "production", "config": map[string]any{"provider": "openai", "colour": "red"}}, 400, "AB01_UNKNOWN_FIELD", "config.colour", nil},
		{"unknown saved config", map[string]any{"name": "x", "type": "production", "config": "pc-missing"}, 400, "AB01_CONFIG_NOT_FOUND", "config", nil},
		{"config of wrong type", map[string]any{"name": "x", "type": "production", "config": 3}, 400, "AB01_INVALID_TYPE", "config", nil},
		{"unknown limits field", map[string]any{"name": "x", "type": "production", "limits": map[string]any{"budget": 3}}, 400, "unknown_field", "limits.budget", nil},
		{"unknown rate limit field", map[string]any{"name": "x", "type": "production", "limits": map[string]any{"rate_limits": []map[string]any{{"type": "requests", "unit": "rpm", "value": 1, "burst": 2}}}}, 400, "unknown_field", "limits.rate_limits.burst", nil},
		{"bad rate limit unit", map[string]any{"name": "x", "type": "production", "limits": map[string]any{"rate_limits": []map[string]any{{"type": "requests", "unit": "rps", "value": 1}}}}, 400, "invalid_value", "limits.rate_limits[0].unit", nil},
		{"bad usage limit", map[string]any{"name": "x", "type": "production", "limits": map[string]any{"usage_limits": map[string]any{"credit_limit": -1}}}, 400, "invalid_value", "limits.usage_limits.credit_limit", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, m := h.call(h.key, "POST", "/v1/deployments", tt.body)
			code := errorCode(m)
			if st != tt.status || (tt.codeMatch == nil && code != tt.code) || (tt.codeMatch != nil && !tt.codeMatch(code)) {
				t.Fatalf("%d %v", st, m)
			}
			if tt.param != "" && errorParam(m) != tt.param {
				t.Errorf("param %q, want %q", errorParam(m), tt.param)
			}
		})
	}
	// Nothing invalid was stored.
	if total := h.must(h.key, "GET", "/v1/deployments", nil)["total"]; total != 2.0 {
		t.Errorf("%v deployments stored, want 2", total)
	}
}

// TestDeploymentsScopes: either spelling of the deployment scopes works on
// a key; a key that may only read cannot write; a workspace key never
// writes deployments (they belong to the organisation).
func TestDeploymentsScopes(t *testing.T) {
	h := startControl(t, t.TempDir())
	h.must(h.key, "POST", "/v1/deployments", map[string]any{"name": "Prod", "type": "production"})
	body := map[string]any{"name": "New", "type": "non-production"}

	colon, _ := h.newKey(h.key, "organisation", "service", map[string]any{"scopes": []string{"deployments:read", "deployments:list"}})
	dotted, _ := h.newKey(h.key, "organisation", "service", map[string]any{"scopes": []string{"deployments.read", "deployments.list"}})
	for name, key := range map[string]string{"colon": colon, "dotted": dotted} {
		if st, m := h.call(key, "GET", "/v1/deployments", nil); st != 200 || m["total"] != 1.0 {
			t.Errorf("%s: list %d %v", name, st, m)
		}
		if st, m := h.call(key, "GET", "/v1/deployments/prod", nil); st != 200 {
			t.Errorf("%s: read %d %v", name, st, m)
		}
		if st, m := h.call(key, "POST", "/v1/deployments", body); st != 403 {
			t.Errorf("%s: create without the scope: %d %v", name, st, m)
		}
	}
	writer, _ := h.newKey(h.key, "organisation", "service", map[string]any{"scopes": []string{"deployments:create", "deployments:delete"}})
	created := h.must(writer, "POST", "/v1/deployments", body)
	if st, m := h.call(writer, "GET", "/v1/deployments", nil); st != 403 {
		t.Errorf("list without the scope: %d %v", st, m)
	}
	h.must(writer, "DELETE", "/v1/deployments/"+created["slug"].(string), nil)

	wsKey, _ := h.newKey(h.key, "workspace", "service", nil)
	if st, m := h.call(wsKey, "POST", "/v1/deployments", body); st != 403 {
		t.Errorf("workspace key create: %d %v", st, m)
	}
	if st, m := h.call(wsKey, "PUT", "/v1/deployments/prod", map[string]any{"description": "x"}); st != 403 {
		t.Errorf("workspace key update: %d %v", st, m)
	}
	// A workspace key reads the deployments serving its workspace only.
	wsB := h.newWorkspace("team-b")
	h.must(h.key, "POST", "/v1/deployments", map[string]any{"name": "B only", "type": "production", "workspace_ids": []string{wsB}})
	if st, m := h.call(wsKey, "GET", "/v1/deployments", nil); st != 200 || m["total"] != 1.0 {
		t.Errorf("workspace key list: %d %v", st, m)
	}
	if st, m := h.call(wsKey, "GET", "/v1/deployments/b-only", nil); st != 404 {
		t.Errorf("workspace key reads another workspace's deployment: %d %v", st, m)
	}
}

// TestDeploymentDataPlane: a process started with --deployment serves only
// the deployment's workspaces, routes a request without routing headers
// with the deployment's saved config, picks up control-plane changes, and
// enforces the deployment's rate limit.
func TestDeploymentDataPlane(t *testing.T) {
	h := startControl(t, t.TempDir())
	wsA := h.must(h.key, "GET", "/v1/admin/workspaces", nil)["data"].([]any)[0].(map[string]any)["id"].(string)
	wsB := h.newWorkspace("team-b")
	keyA, _ := h.newKey(h.key, "workspace", "service", map[string]any{"workspace_id": wsA})
	keyB, _ := h.newKey(h.key, "workspace", "service", map[string]any{"workspace_id": wsB})
	saved := h.must(h.key, "POST", "/v1/configs", map[string]any{"name": "edge", "workspace_id": wsA, "config": map[string]any{
		"provider": "openai", "api_key": "sk-from-deployment", "custom_host": h.up.BaseURL(),
	}})["slug"].(string)
	h.must(h.key, "POST", "/v1/deployments", map[string]any{
		"name": "Edge", "type": "production", "config": saved, "workspace_ids": []string{wsA},
		// A day's window: the test cannot straddle a window's end.
		"limits": map[string]any{"rate_limits": []map[string]any{{"type": "requests", "unit": "rpd", "value": 5}}},
	})
	d := startDeployment(t, h, "edge")

	const chat = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`
	// bare sends a chat completion with only the gateway key: the
	// deployment's config routes it.
	bare := func(key string) (int, map[string]any, map[string][]string) {
		resp, body := d.do("POST", "/v1/chat/completions", chat, map[string]string{"x-gateway-api-key": key})
		var m map[string]any
		if st := resp.StatusCode; st != 200 {
			m = decode(t, body)
		}
		return resp.StatusCode, m, resp.Header
	}

	// Outside the deployment's workspaces, with or without routing headers.
	if st, m, _ := bare(keyB); st != 403 || errorCode(m) != "workspace_not_in_deployment" || m["error"].(map[string]any)["type"] != "permission_error" {
		t.Errorf("workspace B: %d %v", st, m)
	}
	if st := d.chat(keyB); st != 403 {
		t.Errorf("workspace B with routing headers: %d", st)
	}

	// Inside: the saved config routes to the fake upstream with its key.
	if st, m, _ := bare(keyA); st != 200 {
		t.Fatalf("workspace A: %d %v", st, m)
	}
	if got := h.up.Last().Header.Get("Authorization"); got != "Bearer sk-from-deployment" {
		t.Errorf("upstream saw Authorization %q", got)
	}

	// The control plane opens the deployment to workspace B; the process
	// picks it up on its next reload. B's key routes with the deployment's
	// config although that config was saved in workspace A.
	h.must(h.key, "PUT", "/v1/deployments/edge", map[string]any{"workspace_ids": []string{wsA, wsB}})
	deadline := time.Now().Add(10 * time.Second)
	for st, _, _ := bare(keyB); st != 200; st, _, _ = bare(keyB) {
		if st != 403 || time.Now().After(deadline) {
			t.Fatalf("workspace B after the update: %d", st)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Two requests counted so far; three more fit in the limit of five.
	for i := 0; i < 3; i++ {
		if st, m, _ := bare(keyA); st != 200 {
			t.Fatalf("request %d within the limit: %d %v", i+3, st, m)
		}
	}
	st, m, hdr := bare(keyA)
	if st != 429 || m["error"].(map[string]any)["type"] != "rate_limit_error" {
		t.Fatalf("past the limit: %d %v", st, m)
	}
	if hdr["Retry-After"] == nil || hdr["X-Ratelimit-Limit-Requests"][0] != "5" {
		t.Errorf("429 headers %v", hdr)
	}
}

// TestDeploymentInlineConfigAndTokens: an inline config (sealed at rest)
// routes, and a tokens rule refuses requests once the answers' tokens
// have used it up.
func TestDeploymentInlineConfigAndTokens(t *testing.T) {
	h := startControl(t, t.TempDir())
	h.must(h.key, "POST", "/v1/deployments", map[string]any{
		"name": "Inline", "type": "non-production",
		"config": map[string]any{"provider": "openai", "api_key": "sk-inline", "custom_host": h.up.BaseURL()},
		"limits": map[string]any{"rate_limits": []map[string]any{{"type": "tokens", "unit": "rpd", "value": 1}}},
	})
	// The audit log records the write with the credential masked.
	_, audit := h.do("GET", "/v1/audit-logs", nil, h.admin())
	if !strings.Contains(string(audit), "deployments.create") || strings.Contains(string(audit), "sk-inline") {
		t.Errorf("audit log: %s", audit)
	}
	d := startDeployment(t, h, "inline")
	const chat = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`
	resp, body := d.do("POST", "/v1/chat/completions", chat, map[string]string{"x-gateway-api-key": h.key})
	if resp.StatusCode != 200 {
		t.Fatalf("first request: %d %s", resp.StatusCode, body)
	}
	if got := h.up.Last().Header.Get("Authorization"); got != "Bearer sk-inline" {
		t.Errorf("upstream saw Authorization %q", got)
	}
	// The answer's tokens are counted once its record is enqueued, just
	// after the response.
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, body = d.do("POST", "/v1/chat/completions", chat, map[string]string{"x-gateway-api-key": h.key})
		if resp.StatusCode == 429 {
			break
		}
		if resp.StatusCode != 200 || time.Now().After(deadline) {
			t.Fatalf("tokens limit not enforced: %d %s", resp.StatusCode, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if resp.Header.Get("x-ratelimit-limit-tokens") != "1" {
		t.Errorf("429 headers %v", resp.Header)
	}
}

// TestDeploymentUnknownSlug: a process cannot start for a deployment that
// does not exist.
func TestDeploymentUnknownSlug(t *testing.T) {
	cfg := config.Defaults()
	cfg.DataDir, cfg.Addr, cfg.Deployment = t.TempDir(), "127.0.0.1:0", "nope"
	a, err := app.New(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil {
		_ = a.Shutdown(context.Background())
		t.Fatal("app.New succeeded for an unknown deployment")
	}
	if !strings.Contains(err.Error(), `deployment "nope"`) || !strings.Contains(err.Error(), "not found") {
		t.Errorf("error %q does not name the deployment", err)
	}
}
