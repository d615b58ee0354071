package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ai-gateway/gateway/internal/audit"
	"github.com/ai-gateway/gateway/internal/config"
	"github.com/ai-gateway/gateway/internal/store"
)

// auditRecords lists the audit log with query q (admin key).
func (h *harness) auditRecords(q string) []map[string]any {
	h.t.Helper()
	m := h.must(h.key, "GET", "/v1/audit-logs?"+q, nil)
	var out []map[string]any
	for _, d := range m["data"].([]any) {
		out = append(out, d.(map[string]any))
	}
	return out
}

// TestAuditLog: every control-plane write and every authentication failure
// leaves a record with its actor, action, resource, time, client IP,
// request id, method, uri, status, workspace and masked body; GET
// /v1/audit-logs filters and pages them.
func TestAuditLog(t *testing.T) {
	h := start(t)
	began := time.Now().Add(-time.Second).UTC()
	adminKeyID := ""
	for _, d := range h.must(h.key, "GET", "/v1/api-keys?type=organisation", nil)["data"].([]any) {
		adminKeyID = d.(map[string]any)["id"].(string)
	}

	// A write by the admin key, with secrets in the body.
	resp, body := h.do("POST", "/v1/virtual-keys", map[string]any{
		"name": "Main", "provider": "openai", "key": "sk-provider-secret", "note": "team",
		"aws_secret_access_key": "aws-secret", "vertex_service_account_json": "{\"private_key\":\"pk\"}",
	}, h.admin())
	if resp.StatusCode != 200 {
		t.Fatalf("create virtual key: %d %s", resp.StatusCode, body)
	}
	vk := decode(t, body)
	recs := h.auditRecords("action=virtual_keys.create")
	if len(recs) != 1 {
		t.Fatalf("%d records of virtual_keys.create", len(recs))
	}
	r := recs[0]
	for k, want := range map[string]any{
		"object": "audit-log", "actor_type": "api_key", "actor_id": adminKeyID, "method": "POST", "uri": "/v1/virtual-keys",
		"resource_type": "virtual_key", "resource_id": vk["id"], "workspace_id": h.app.Bootstrap.WorkspaceID,
		"status_code": 200.0, "client_ip": "127.0.0.1", "request_id": resp.Header.Get("x-gateway-request-id"),
	} {
		if r[k] != want {
			t.Errorf("%s = %v, want %v", k, r[k], want)
		}
	}
	if ts, err := time.Parse(time.RFC3339Nano, r["timestamp"].(string)); err != nil || ts.Before(began) || ts.After(time.Now()) {
		t.Errorf("timestamp = %v, %v", r["timestamp"], err)
	}
	reqBody := r["request_body"].(string)
	for _, secret := range []string{"sk-provider-secret", "aws-secret", "pk"} {
		if strings.Contains(reqBody, secret) {
			t.Errorf("secret %q in the recorded body %s", secret, reqBody)
		}
	}
	if !strings.Contains(reqBody, `"key":"********"`) || !strings.Contains(reqBody, `"note":"team"`) {
		t.Errorf("recorded body = %s", reqBody)
	}

	// Authentication failures, reads included, with what was attempted.
	for _, key := range []string{"", "gw-not-a-key"} {
		hdr := map[string]string{}
		if key != "" {
			hdr["x-gateway-api-key"] = key
		}
		resp, _ := h.do("GET", "/v1/admin/users", nil, hdr)
		if resp.StatusCode != 401 {
			t.Fatalf("bad key: %d", resp.StatusCode)
		}
	}
	resp, _ = h.do("POST", "/v1/admin/users/invites", map[string]any{"email": "a@example.com", "password": "hunter2"}, map[string]string{"x-gateway-api-key": "gw-wrong"})
	if resp.StatusCode != 401 {
		t.Fatalf("bad key on a write: %d", resp.StatusCode)
	}
	fails := h.auditRecords("status_code=401")
	if len(fails) != 3 {
		t.Fatalf("%d authentication failures recorded, want 3", len(fails))
	}
	f := fails[0]
	if f["action"] != "invites.create" || f["resource_type"] != "invite" || f["actor_id"] != "" || f["method"] != "POST" ||
		f["request_id"] != resp.Header.Get("x-gateway-request-id") || strings.Contains(f["request_body"].(string), "hunter2") {
		t.Errorf("failure record = %v", f)
	}
	if fails[2]["action"] != "organisation_users.list" {
		t.Errorf("read failure record = %v", fails[2])
	}

	// A user's key is recorded as that user; denied writes are recorded too.
	ws := h.newWorkspace("team")
	member := h.addUser("m@example.com", "member", map[string]string{ws: "member"})
	memberKey, _ := h.newKey(h.key, "workspace", "user", map[string]any{"user_id": member, "workspace_id": ws})
	if status, _ := h.call(memberKey, "POST", "/v1/virtual-keys", map[string]any{"name": "x", "provider": "openai", "key": "sk-member"}); status != 403 {
		t.Fatalf("member creating a virtual key: %d", status)
	}
	recs = h.auditRecords("actor_id=" + member)
	if len(recs) != 1 || recs[0]["actor_type"] != "user" || recs[0]["status_code"] != 403.0 || recs[0]["workspace_id"] != ws ||
		strings.Contains(recs[0]["request_body"].(string), "sk-member") {
		t.Errorf("member's records = %v", recs)
	}
	if status, _ := h.call(memberKey, "GET", "/v1/audit-logs", nil); status != 403 {
		t.Errorf("workspace key reading the audit log: %d", status)
	}
	// Reads are not recorded; writes of every family are.
	h.must(h.key, "GET", "/v1/virtual-keys", nil)
	h.must(h.key, "DELETE", "/v1/virtual-keys/"+vk["slug"].(string), nil)
	h.must(h.key, "PUT", "/v1/admin/workspaces/"+ws, map[string]any{"description": "d"})
	for _, tt := range []struct {
		q    string
		want int
	}{
		{"action=virtual_keys.list", 0},
		{"method=DELETE", 1},
		{"action=workspaces.update&resource_id=" + ws, 1},
		{"resource_type=workspace", 2},
		{"actor_type=user", 1},
		{"user=" + member, 1},
		{"start_time=" + time.Now().Add(time.Hour).Format(time.RFC3339), 0},
		{"end_time=" + began.Format(time.RFC3339), 0},
		{"start_time=" + began.Format(time.RFC3339) + "&status_code=200&method=POST", len(h.auditRecords("method=POST&status_code=200"))},
	} {
		if got := len(h.auditRecords(tt.q)); got != tt.want {
			t.Errorf("%s: %d records, want %d", tt.q, got, tt.want)
		}
	}
	all := h.must(h.key, "GET", "/v1/audit-logs", nil)
	total := int(all["total"].(float64))
	page := h.must(h.key, "GET", "/v1/audit-logs?page_size=2&current_page=1", nil)
	if page["object"] != "list" || int(page["total"].(float64)) != total || len(page["data"].([]any)) != 2 ||
		page["data"].([]any)[0].(map[string]any)["id"] != all["data"].([]any)[2].(map[string]any)["id"] {
		t.Errorf("page 1 of 2 = %v (total %d)", page, total)
	}
	for _, q := range []string{"status_code=abc", "start_time=yesterday", "actor_type=robot", "page_size=0"} {
		if status, _ := h.call(h.key, "GET", "/v1/audit-logs?"+q, nil); status != 400 {
			t.Errorf("%s: %d", q, status)
		}
	}
}

// TestAuditLogDisabled: AUDIT_LOGS_ENABLED=OFF records nothing and answers
// feature_disabled.
func TestAuditLogDisabled(t *testing.T) {
	h := start(t, func(c *config.Config) { c.Settings.Disabled["AUDIT_LOGS_ENABLED"] = true })
	h.must(h.key, "POST", "/v1/admin/workspaces", map[string]any{"name": "x"})
	status, m := h.call(h.key, "GET", "/v1/audit-logs", nil)
	if status != 403 || m["error"].(map[string]any)["code"] != "feature_disabled" {
		t.Errorf("GET /v1/audit-logs: %d %v", status, m)
	}
	h.withStore(func(st *store.Store) {
		_, total, err := st.ListAuditRecords(context.Background(), audit.Filter{OrganisationID: h.app.Bootstrap.OrganisationID})
		if err != nil || total != 0 {
			t.Errorf("%d records, %v", total, err)
		}
	})
}
