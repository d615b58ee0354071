package app_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3/option"
)

const chatBody = `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`

// newIntegration creates an OpenAI integration pointing at the fake
// upstream with the credential key, and returns its slug.
func (h *harness) newIntegration(slug, key string, extra map[string]any) string {
	h.t.Helper()
	body := map[string]any{"name": slug, "slug": slug, "ai_provider": "openai", "key": key, "custom_host": h.up.BaseURL()}
	for k, v := range extra {
		body[k] = v
	}
	return h.must(h.key, "POST", "/v1/integrations", body)["slug"].(string)
}

// storedChat sends a chat completion routed with x-gateway-provider: ref
// and the gateway key raw; no provider credential is sent.
func (h *harness) storedChat(raw, ref, body string, kv ...string) (*http.Response, []byte) {
	h.t.Helper()
	hdr := map[string]string{"x-gateway-api-key": raw, "x-gateway-provider": ref}
	for i := 0; i+1 < len(kv); i += 2 {
		hdr[kv[i]] = kv[i+1]
	}
	return h.do("POST", "/v1/chat/completions", body, hdr)
}

// TestIntegrationsControlPlane: create, read, update, list with tag
// filters, limits returned exactly, lengths, the credential never returned
// nor stored in clear.
func TestIntegrationsControlPlane(t *testing.T) {
	h := start(t)
	const secretKey = "sk-integration-very-secret-0123456789"
	rateLimits := []any{map[string]any{"type": "requests", "unit": "rpm", "value": float64(100)}, map[string]any{"type": "tokens", "unit": "rpd", "value": float64(50000)}}
	usageLimits := map[string]any{"type": "cost", "credit_limit": 12.5, "alert_threshold": 10.0, "periodic_reset": "monthly", "current_usage": 1.25}
	created := h.must(h.key, "POST", "/v1/integrations", map[string]any{
		"name": "OpenAI prod", "ai_provider": "openai", "key": secretKey, "description": "d",
		"provider_options": map[string]any{"azure_api_version": "2024-10-21", "aws_secret_access_key": "aws-very-secret"},
		"tags":             map[string]any{"team": "search", "env": "prod"},
		"rate_limits":      rateLimits, "usage_limits": usageLimits,
	})
	slug, _ := created["slug"].(string)
	if !strings.HasPrefix(slug, "openai-prod-") || created["object"] != "integration" || created["id"] == "" {
		t.Fatalf("created = %v", created)
	}
	got := h.must(h.key, "GET", "/v1/integrations/"+slug, nil)
	for _, f := range []string{"rate_limits", "usage_limits"} {
		want := map[string]any{"rate_limits": rateLimits, "usage_limits": usageLimits}[f]
		if diff := cmp.Diff(want, got[f]); diff != "" {
			t.Errorf("%s (-sent +returned):\n%s", f, diff)
		}
	}
	if diff := cmp.Diff(map[string]any{"azure_api_version": "2024-10-21"}, got["provider_options"]); diff != "" {
		t.Errorf("provider_options (-want +got):\n%s", diff)
	}
	// By id too.
	if byID := h.must(h.key, "GET", "/v1/integrations/"+created["id"].(string), nil); byID["slug"] != slug {
		t.Errorf("GET by id = %v", byID)
	}

	h.newIntegration("ads-dev", "k", map[string]any{"tags": map[string]any{"team": "ads", "env": "dev"}})
	h.newIntegration("search-dev", "k", map[string]any{"tags": map[string]any{"team": "search", "env": "dev"}})
	for _, tt := range []struct{ tags, want string }{
		{`{"team":"search"}`, "search-dev " + slug},
		{`{"team":"search","env":"dev"}`, "search-dev"},
		{`{"env":"dev"}`, "search-dev ads-dev"},
		{`{"team":"none"}`, ""},
	} {
		l := h.must(h.key, "GET", "/v1/integrations?tags="+urlQuery(tt.tags), nil)
		if got := listSlugs(l); got != tt.want || l["object"] != "list" {
			t.Errorf("tags=%s: %q (total %v), want %q", tt.tags, got, l["total"], tt.want)
		}
	}
	if status, m := h.call(h.key, "GET", "/v1/integrations?tags=[1]", nil); status != 400 || m["error"].(map[string]any)["param"] != "tags" {
		t.Errorf("bad tags filter: %d %v", status, m)
	}

	// Names and slugs: 255 characters pass, 256 do not.
	for _, tt := range []struct {
		field string
		n     int
		want  int
	}{{"name", 255, 200}, {"name", 256, 400}, {"slug", 255, 200}, {"slug", 256, 400}} {
		body := map[string]any{"name": "n", "ai_provider": "openai"}
		body[tt.field] = strings.Repeat("a", tt.n)
		if status, m := h.call(h.key, "POST", "/v1/integrations", body); status != tt.want {
			t.Errorf("%s of %d characters: %d %v, want %d", tt.field, tt.n, status, m, tt.want)
		}
	}
	for _, body := range []map[string]any{
		{"name": "x", "ai_provider": "openai", "rate_limits": []any{map[string]any{"type": "requests", "unit": "rpm", "value": 1, "extra": 1}}},
		{"name": "x", "ai_provider": "openai", "usage_limits": map[string]any{"credit_limit": -1}},
		{"name": "x", "ai_provider": "openai", "tags": map[string]any{"team": 1}},
		{"name": "x", "ai_provider": "nope"},
		{"name": "x", "ai_provider": "openai", "provider_options": map[string]any{"nope": "x"}},
		{"name": "x", "ai_provider": "openai", "unknown": 1},
	} {
		if status, m := h.call(h.key, "POST", "/v1/integrations", body); status != 400 {
			t.Errorf("POST %v: %d %v, want 400", body, status, m)
		}
	}

	// Update: the credential is kept unless replaced.
	upd := h.must(h.key, "PUT", "/v1/integrations/"+slug, map[string]any{"name": "renamed", "tags": map[string]any{"team": "x"}, "rate_limits": nil})
	if upd["name"] != "renamed" || upd["rate_limits"] != nil || upd["tags"].(map[string]any)["team"] != "x" {
		t.Errorf("after PUT: %v", upd)
	}

	// The credential is never returned, nor stored in clear.
	for _, path := range []string{"/v1/integrations/" + slug, "/v1/integrations", "/v1/audit-logs"} {
		_, raw := h.do("GET", path, nil, h.admin())
		if bytes.Contains(raw, []byte(secretKey)) || bytes.Contains(raw, []byte("aws-very-secret")) {
			t.Errorf("GET %s returns the credential: %s", path, raw)
		}
	}
	h.shutdown()
	for _, name := range []string{"gateway.db", "gateway.db-wal"} {
		b, err := os.ReadFile(filepath.Join(h.cfg.DataDir, name))
		if err != nil && (name == "gateway.db" || !os.IsNotExist(err)) {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(secretKey)) || bytes.Contains(b, []byte("aws-very-secret")) {
			t.Errorf("%s holds the credential in clear", name)
		}
	}
}

func urlQuery(s string) string {
	r := strings.NewReplacer("{", "%7B", "}", "%7D", `"`, "%22", ":", "%3A", ",", "%2C", "[", "%5B", "]", "%5D")
	return r.Replace(s)
}

// listSlugs returns the slugs of a list answer, newest first.
func listSlugs(l map[string]any) string {
	var out []string
	for _, e := range l["data"].([]any) {
		out = append(out, e.(map[string]any)["slug"].(string))
	}
	return strings.Join(out, " ")
}

// TestStoredProviderRouting: x-gateway-provider: @slug and a config
// target's "@slug" reach the upstream with the integration's credential;
// the OpenAI SDK works through it; the log names the adapter and the
// stored provider.
func TestStoredProviderRouting(t *testing.T) {
	h := start(t)
	integ := h.newIntegration("openai-main", "sk-stored-credential", nil)
	p := h.must(h.key, "POST", "/v1/providers", map[string]any{"name": "Prod", "slug": "prod", "integration_id": integ,
		"tags": map[string]any{"team": "search"}, "note": "n"})
	if p["object"] != "provider" || p["slug"] != "prod" || p["integration_id"] == integ {
		t.Fatalf("provider = %v (integration_id must be the id)", p)
	}

	resp, body := h.storedChat(h.key, "@prod", chatBody, "Authorization", "Bearer sk-client-ignored")
	if resp.StatusCode != 200 {
		t.Fatalf("@prod: %d %s", resp.StatusCode, body)
	}
	if got := h.up.Last().Header.Get("Authorization"); got != "Bearer sk-stored-credential" {
		t.Errorf("upstream Authorization = %q", got)
	}
	rec := h.logRecord(resp.Header.Get("x-gateway-request-id"))
	if rec["provider"] != "openai" || rec["virtual_key"] != "@prod" {
		t.Errorf("log record provider=%v virtual_key=%v", rec["provider"], rec["virtual_key"])
	}

	// A config target, inline.
	cfg := `{"strategy":{"mode":"fallback"},"targets":[{"provider":"@nope"},{"provider":"@prod"}]}`
	resp, body = h.do("POST", "/v1/chat/completions", chatBody, map[string]string{"x-gateway-api-key": h.key, "x-gateway-config": cfg})
	if resp.StatusCode != 200 || resp.Header.Get("x-gateway-last-used-option-index") != "config.targets[1]" {
		t.Fatalf("config target: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	if got := h.up.Last().Header.Get("Authorization"); got != "Bearer sk-stored-credential" {
		t.Errorf("upstream Authorization via config = %q", got)
	}
	// A malformed reference is refused when the config is read.
	resp, body = h.do("POST", "/v1/chat/completions", chatBody, map[string]string{"x-gateway-api-key": h.key, "x-gateway-config": `{"provider":"@Not Valid"}`})
	if resp.StatusCode != 400 || errorField(t, body, "param") != "config.provider" {
		t.Errorf("malformed @ref: %d %s", resp.StatusCode, body)
	}
	// A saved config naming it.
	saved := h.must(h.key, "POST", "/v1/configs", map[string]any{"name": "c", "config": map[string]any{"provider": "@prod"}})["slug"].(string)

	// The official SDK, by header and by saved config.
	for _, opt := range []option.RequestOption{option.WithHeader("x-gateway-provider", "@prod"), option.WithHeader("x-gateway-config", saved)} {
		comp, err := h.sdkOnly(h.key, opt).Chat.Completions.New(context.Background(), userParams("gpt-4o"))
		if err != nil {
			t.Fatalf("SDK: %v", err)
		}
		if comp.Choices[0].Message.Content == "" || h.up.Last().Header.Get("Authorization") != "Bearer sk-stored-credential" {
			t.Errorf("SDK answer %+v, upstream auth %q", comp.Choices[0].Message, h.up.Last().Header.Get("Authorization"))
		}
	}

	// Embeddings, and a stream whose tokens count (the fake answers 17):
	// stream, then a plain answer, then the 20-token rule refuses.
	resp, body = h.do("POST", "/v1/embeddings", `{"model":"text-embedding-3-small","input":"hi"}`, map[string]string{"x-gateway-api-key": h.key, "x-gateway-provider": "@prod"})
	if resp.StatusCode != 200 {
		t.Errorf("embeddings through @prod: %d %s", resp.StatusCode, body)
	}
	h.must(h.key, "PUT", "/v1/providers/prod", map[string]any{"rate_limits": []any{map[string]any{"type": "tokens", "unit": "rpd", "value": 20}}})
	resp, body = h.storedChat(h.key, "@prod", `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 200 || !bytes.HasSuffix(bytes.TrimSpace(body), []byte("data: [DONE]")) {
		t.Errorf("stream through @prod: %d %s", resp.StatusCode, body)
	}
	for i, want := range []int{200, 429} {
		if resp, body := h.storedChat(h.key, "@prod", chatBody); resp.StatusCode != want {
			t.Errorf("request %d after the stream: %d %s, want %d", i, resp.StatusCode, body, want)
		}
	}
	h.must(h.key, "PUT", "/v1/providers/prod", map[string]any{"rate_limits": nil})

	// Unknown slugs.
	resp, body = h.storedChat(h.key, "@missing", chatBody)
	if resp.StatusCode != 400 || errorField(t, body, "code") != "unknown_provider" {
		t.Errorf("@missing: %d %s", resp.StatusCode, body)
	}

	// The organisation's credential goes only to the integration's host.
	if resp, body := h.storedChat(h.key, "@prod", chatBody, "x-gateway-custom-host", "http://127.0.0.1:1/v1"); resp.StatusCode != 400 || errorField(t, body, "code") != "custom_host_not_allowed" {
		t.Errorf("@prod with a custom host header: %d %s", resp.StatusCode, body)
	}
	resp, body = h.do("POST", "/v1/chat/completions", chatBody, map[string]string{"x-gateway-api-key": h.key, "x-gateway-config": `{"custom_host":"http://127.0.0.1:1/v1","provider":"@prod"}`})
	if resp.StatusCode != 400 || errorField(t, body, "code") != "custom_host_not_allowed" {
		t.Errorf("@prod with a config custom_host: %d %s", resp.StatusCode, body)
	}

	// A change on the control plane is seen at once: disable, enable.
	h.must(h.key, "PUT", "/v1/providers/prod", map[string]any{"status": "disabled"})
	if resp, body := h.storedChat(h.key, "@prod", chatBody); resp.StatusCode != 403 || errorField(t, body, "code") != "provider_disabled" {
		t.Errorf("disabled provider: %d %s", resp.StatusCode, body)
	}
	h.must(h.key, "PUT", "/v1/providers/prod", map[string]any{"status": "active"})
	h.must(h.key, "PUT", "/v1/integrations/"+integ, map[string]any{"key": "sk-rotated"})
	if resp, body := h.storedChat(h.key, "@prod", chatBody); resp.StatusCode != 200 || h.up.Last().Header.Get("Authorization") != "Bearer sk-rotated" {
		t.Errorf("after rotating the integration's key: %d %s, upstream %q", resp.StatusCode, body, h.up.Last().Header.Get("Authorization"))
	}

	// The integration cannot go while the provider uses it.
	if status, m := h.call(h.key, "DELETE", "/v1/integrations/"+integ, nil); status != 409 {
		t.Errorf("delete a used integration: %d %v", status, m)
	}
	if m := h.must(h.key, "DELETE", "/v1/providers/prod", nil); m["deleted"] != true {
		t.Errorf("delete provider: %v", m)
	}
	if resp, _ := h.storedChat(h.key, "@prod", chatBody); resp.StatusCode != 400 {
		t.Errorf("deleted provider answered %d", resp.StatusCode)
	}
	h.must(h.key, "DELETE", "/v1/integrations/"+integ, nil)
}

// TestStoredProviderModelsAndLimits: the allow-list refuses other models;
// request and token rate limits answer 429 with their headers; limits are
// returned as sent.
func TestStoredProviderModelsAndLimits(t *testing.T) {
	h := start(t)
	integ := h.newIntegration("openai-limited", "sk-x", nil)

	m := h.must(h.key, "GET", "/v1/integrations/"+integ+"/models", nil)
	if m["allow_all_models"] != true || m["total"] != float64(0) {
		t.Errorf("initial models = %v", m)
	}
	m = h.must(h.key, "PUT", "/v1/integrations/"+integ+"/models", map[string]any{"models": []any{
		map[string]any{"slug": "gpt-4o", "enabled": true}, map[string]any{"slug": "gpt-4o-mini", "enabled": false},
	}})
	if m["allow_all_models"] != false || m["total"] != float64(2) {
		t.Errorf("models after PUT = %v", m)
	}
	rl := []any{map[string]any{"type": "requests", "unit": "rpd", "value": float64(2)}}
	ul := map[string]any{"type": "tokens", "credit_limit": 1000.0, "current_usage": 0.5}
	p := h.must(h.key, "POST", "/v1/providers", map[string]any{"name": "L", "slug": "limited", "integration_id": integ, "rate_limits": rl, "usage_limits": ul})
	got := h.must(h.key, "GET", "/v1/providers/"+p["id"].(string), nil)
	if diff := cmp.Diff(map[string]any{"rate_limits": rl, "usage_limits": ul}, map[string]any{"rate_limits": got["rate_limits"], "usage_limits": got["usage_limits"]}); diff != "" {
		t.Errorf("provider limits (-sent +returned):\n%s", diff)
	}

	for _, model := range []string{"gpt-4o-mini", "other"} {
		resp, body := h.storedChat(h.key, "@limited", `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`)
		if resp.StatusCode != 403 || errorField(t, body, "code") != "model_not_allowed" || errorField(t, body, "param") != "model" {
			t.Errorf("model %s: %d %s", model, resp.StatusCode, body)
		}
	}
	for i := range 2 {
		if resp, body := h.storedChat(h.key, "@limited", chatBody); resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, body)
		}
	}
	resp, body := h.storedChat(h.key, "@limited", chatBody)
	if resp.StatusCode != 429 || errorField(t, body, "type") != "rate_limit_error" {
		t.Fatalf("third request: %d %s", resp.StatusCode, body)
	}
	if resp.Header.Get("Retry-After") == "" || resp.Header.Get("x-ratelimit-limit-requests") != "2" || resp.Header.Get("x-ratelimit-remaining-requests") != "0" {
		t.Errorf("429 headers: %v", resp.Header)
	}

	// Tokens, counted after each answer (the fake answers 17 tokens), on
	// the integration: shared by its providers.
	h.must(h.key, "PUT", "/v1/integrations/"+integ, map[string]any{"rate_limits": []any{map[string]any{"type": "tokens", "unit": "rpd", "value": 20}}})
	h.must(h.key, "PUT", "/v1/providers/limited", map[string]any{"rate_limits": nil})
	h.must(h.key, "POST", "/v1/providers", map[string]any{"name": "L2", "slug": "limited-2", "integration_id": integ})
	for _, ref := range []string{"@limited", "@limited-2"} {
		if resp, body := h.storedChat(h.key, ref, chatBody); resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", ref, resp.StatusCode, body)
		}
	}
	resp, body = h.storedChat(h.key, "@limited", chatBody)
	if resp.StatusCode != 429 || resp.Header.Get("x-ratelimit-limit-tokens") != "20" {
		t.Errorf("over the integration's tokens: %d %v %s", resp.StatusCode, resp.Header, body)
	}
}

// TestProvidersAcrossWorkspaces: sharing decides where providers may be
// created; a workspace key sees and uses only its workspace's providers.
func TestProvidersAcrossWorkspaces(t *testing.T) {
	h := start(t)
	wsB := h.newWorkspace("team-b")
	integ := h.newIntegration("shared-b", "sk-b", nil)
	w := h.must(h.key, "PUT", "/v1/integrations/"+integ+"/workspaces", map[string]any{"global": false, "workspaces": []any{map[string]any{"id": "team-b"}}})
	if w["global"] != false || len(w["workspaces"].([]any)) != 1 || w["workspaces"].([]any)[0].(map[string]any)["id"] != wsB {
		t.Fatalf("workspaces = %v", w)
	}
	keyA, _ := h.newKey(h.key, "workspace", "service", map[string]any{"workspace_id": h.defaultWorkspace()})
	keyB, _ := h.newKey(h.key, "workspace", "service", map[string]any{"workspace_id": wsB})

	// Not shared with the default workspace: refused there.
	status, m := h.call(h.key, "POST", "/v1/providers", map[string]any{"name": "a", "integration_id": integ})
	if status != 400 || m["error"].(map[string]any)["code"] != "integration_not_shared" {
		t.Errorf("provider in an unshared workspace (admin key): %d %v", status, m)
	}
	if status, m := h.call(keyA, "POST", "/v1/providers", map[string]any{"name": "a", "integration_id": integ}); status != 404 {
		t.Errorf("provider in an unshared workspace (workspace key): %d %v", status, m)
	}
	if status, _ := h.call(keyA, "GET", "/v1/integrations/"+integ, nil); status != 404 {
		t.Errorf("workspace A reads an integration not shared with it: %d", status)
	}
	// Shared with B: created there, by the admin key naming B and by B's key.
	h.must(h.key, "POST", "/v1/providers", map[string]any{"name": "b", "slug": "b-prov", "integration_id": integ, "workspace_id": wsB, "tags": map[string]any{"team": "b", "tier": "1"}})
	h.must(keyB, "POST", "/v1/providers", map[string]any{"name": "b2", "slug": "b-prov-2", "integration_id": integ, "tags": map[string]any{"team": "b", "tier": "2"}})

	for _, tt := range []struct{ key, tags, want string }{
		{keyB, "", "b-prov-2 b-prov"},
		{keyB, `{"team":"b"}`, "b-prov-2 b-prov"},
		{keyB, `{"team":"b","tier":"1"}`, "b-prov"},
		{keyA, "", ""},
		{h.key, `{"tier":"2"}`, "b-prov-2"},
	} {
		path := "/v1/providers"
		if tt.tags != "" {
			path += "?tags=" + urlQuery(tt.tags)
		}
		if got := listSlugs(h.must(tt.key, "GET", path, nil)); got != tt.want {
			t.Errorf("GET %s = %q, want %q", path, got, tt.want)
		}
	}
	if status, _ := h.call(keyA, "GET", "/v1/providers/b-prov", nil); status != 404 {
		t.Errorf("workspace A reads B's provider: %d", status)
	}

	// The data plane: B's key uses B's provider; A's key cannot; the admin
	// key reaches it by naming the workspace.
	if resp, body := h.storedChat(keyB, "@b-prov", chatBody); resp.StatusCode != 200 || h.up.Last().Header.Get("Authorization") != "Bearer sk-b" {
		t.Errorf("B uses @b-prov: %d %s", resp.StatusCode, body)
	}
	if resp, body := h.storedChat(keyA, "@b-prov", chatBody, "x-gateway-workspace", "team-b"); resp.StatusCode != 400 || errorField(t, body, "code") != "unknown_provider" {
		t.Errorf("A uses @b-prov: %d %s", resp.StatusCode, body)
	}
	if resp, _ := h.storedChat(h.key, "@b-prov", chatBody); resp.StatusCode != 400 {
		t.Errorf("admin key in the default workspace found B's provider: %d", resp.StatusCode)
	}
	if resp, body := h.storedChat(h.key, "@b-prov", chatBody, "x-gateway-workspace", "team-b"); resp.StatusCode != 200 {
		t.Errorf("admin key naming team-b: %d %s", resp.StatusCode, body)
	}

	// Unsharing stops B's providers from routing.
	h.must(h.key, "PUT", "/v1/integrations/"+integ+"/workspaces", map[string]any{"global": false, "workspaces": []any{}})
	if resp, body := h.storedChat(keyB, "@b-prov", chatBody); resp.StatusCode != 403 || errorField(t, body, "code") != "integration_not_shared" {
		t.Errorf("after unsharing: %d %s", resp.StatusCode, body)
	}
}

// defaultWorkspace returns the default workspace's id.
func (h *harness) defaultWorkspace() string {
	h.t.Helper()
	l := h.must(h.key, "GET", "/v1/admin/workspaces", nil)
	for _, e := range l["data"].([]any) {
		if ws := e.(map[string]any); ws["is_default"] == true {
			return ws["id"].(string)
		}
	}
	h.t.Fatal("no default workspace")
	return ""
}
