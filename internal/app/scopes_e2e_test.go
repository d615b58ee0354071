package app_test

import (
	"context"
	"testing"

	"github.com/ai-gateway/gateway/internal/auth"
	"github.com/ai-gateway/gateway/internal/store"
)

// addKey stores an API key directly (key management arrives with the
// control-plane issue) and returns the raw key.
func (h *harness) addKey(typ, workspaceID string, scopes ...string) string {
	h.t.Helper()
	st, err := store.Open(context.Background(), "", h.cfg.DataDir)
	if err != nil {
		h.t.Fatal(err)
	}
	defer st.Close()
	raw := auth.GenerateKey()
	k := &auth.APIKey{
		OrganisationID: h.app.Bootstrap.OrganisationID, WorkspaceID: workspaceID, Name: "test", Type: typ, Subtype: auth.KeySubtypeService,
		Hash: auth.HashKey(raw), Mask: auth.MaskKey(raw), Scopes: scopes, Status: auth.StatusActive,
	}
	if err := st.CreateAPIKey(context.Background(), k); err != nil {
		h.t.Fatal(err)
	}
	return raw
}

func TestScopes(t *testing.T) {
	h := start(t)
	ws := h.app.Bootstrap.WorkspaceID
	logsOnly := h.addKey(auth.KeyTypeWorkspace, ws, auth.ScopeLogsList)
	hdr := h.routing()
	hdr["x-gateway-api-key"] = logsOnly
	resp, body := h.do("POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, hdr)
	if resp.StatusCode != 403 || errorField(t, body, "type") != "permission_error" {
		t.Errorf("chat without completions.write: %d %s", resp.StatusCode, body)
	}
	if resp, body := h.do("POST", "/v1/virtual-keys", map[string]any{"name": "x", "provider": "openai"}, map[string]string{"x-gateway-api-key": logsOnly}); resp.StatusCode != 403 {
		t.Errorf("virtual key create without scope: %d %s", resp.StatusCode, body)
	}
	if resp, body := h.do("GET", "/v1/logs", nil, map[string]string{"x-gateway-api-key": logsOnly}); resp.StatusCode != 200 {
		t.Errorf("logs.list: %d %s", resp.StatusCode, body)
	}

	// A key of another workspace sees neither this workspace's virtual keys
	// nor its logs (404, so ids do not leak).
	resp, body = h.do("POST", "/v1/virtual-keys", map[string]any{"name": "Main", "provider": "openai", "key": "k"}, h.admin())
	slug := decode(t, body)["slug"].(string)
	resp, _ = h.do("POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, h.routing())
	logID := resp.Header.Get("x-gateway-request-id")
	h.logRecord(logID)
	st, err := store.Open(context.Background(), "", h.cfg.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	otherWS, err := st.CreateWorkspace(context.Background(), h.app.Bootstrap.OrganisationID, "team-b", "Team B")
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	other := h.addKey(auth.KeyTypeWorkspace, otherWS, "*")
	for _, path := range []string{"/v1/virtual-keys/" + slug, "/v1/logs/" + logID} {
		if resp, body := h.do("GET", path, nil, map[string]string{"x-gateway-api-key": other}); resp.StatusCode != 404 {
			t.Errorf("other workspace GET %s: %d %s", path, resp.StatusCode, body)
		}
	}
	resp, body = h.do("GET", "/v1/logs", nil, map[string]string{"x-gateway-api-key": other})
	if decode(t, body)["total"] != 0.0 {
		t.Errorf("other workspace lists %v logs", decode(t, body)["total"])
	}
	hdr = map[string]string{"x-gateway-api-key": other, "x-gateway-virtual-key": slug}
	if resp, body := h.do("POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, hdr); resp.StatusCode != 401 {
		t.Errorf("other workspace using the virtual key: %d %s", resp.StatusCode, body)
	}
}
