package app_test

import (
	"context"
	"encoding/json"
	"time"

	"github.com/ai-gateway/gateway/internal/store"
)

// call sends a control-plane request with key (and header pairs in kv) and
// returns the status and the decoded JSON answer.
func (h *harness) call(key, method, path string, body any, kv ...string) (int, map[string]any) {
	h.t.Helper()
	hdr := map[string]string{"x-gateway-api-key": key}
	for i := 0; i+1 < len(kv); i += 2 {
		hdr[kv[i]] = kv[i+1]
	}
	resp, raw := h.do(method, path, body, hdr)
	var m map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &m); err != nil {
			h.t.Fatalf("%s %s: answer is not a JSON object: %v: %s", method, path, err, raw)
		}
	}
	return resp.StatusCode, m
}

// must is call that fails the test unless the answer is 200.
func (h *harness) must(key, method, path string, body any, kv ...string) map[string]any {
	h.t.Helper()
	status, m := h.call(key, method, path, body, kv...)
	if status != 200 {
		h.t.Fatalf("%s %s: %d %v", method, path, status, m)
	}
	return m
}

// withStore runs fn on a second store over the gateway's SQLite database,
// for what has no endpoint (users arrive by invites accepted at login).
func (h *harness) withStore(fn func(st *store.Store)) {
	h.t.Helper()
	st, err := store.Open(context.Background(), "", h.cfg.DataDir)
	if err != nil {
		h.t.Fatal(err)
	}
	defer st.Close()
	fn(st)
}

// addUser invites email through the API with an organisation role and
// workspace roles (workspace id -> role), then accepts the invite as the
// first login would, and returns the user's id.
func (h *harness) addUser(email, role string, workspaces map[string]string) string {
	h.t.Helper()
	var ws []map[string]string
	for id, r := range workspaces {
		ws = append(ws, map[string]string{"id": id, "role": r})
	}
	h.must(h.key, "POST", "/v1/admin/users/invites", map[string]any{"email": email, "role": role, "workspaces": ws})
	var id string
	h.withStore(func(st *store.Store) {
		u, err := st.AcceptInvite(context.Background(), email, email, time.Now())
		if err != nil {
			h.t.Fatal(err)
		}
		id = u.ID
	})
	return id
}

// newKey creates an API key through the API with caller's key and returns
// the raw key and the key's id.
func (h *harness) newKey(caller, typ, sub string, body map[string]any) (raw, id string) {
	h.t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	if _, ok := body["name"]; !ok {
		body["name"] = typ + " " + sub
	}
	m := h.must(caller, "POST", "/v1/api-keys/"+typ+"/"+sub, body)
	raw, _ = m["key"].(string)
	id, _ = m["id"].(string)
	if raw == "" || id == "" {
		h.t.Fatalf("key creation answered %v", m)
	}
	return raw, id
}

// newWorkspace creates a workspace through the API and returns its id.
func (h *harness) newWorkspace(slug string) string {
	h.t.Helper()
	return h.must(h.key, "POST", "/v1/admin/workspaces", map[string]any{"name": slug, "slug": slug})["id"].(string)
}

// newVirtualKey creates a virtual key in workspace ws and returns its slug.
func (h *harness) newVirtualKey(ws string) string {
	h.t.Helper()
	return h.must(h.key, "POST", "/v1/virtual-keys", map[string]any{"name": "vk", "provider": "openai", "key": "sk-upstream", "workspace_id": ws})["slug"].(string)
}

// chat sends a chat completion to the fake upstream with the gateway key
// raw and returns the status.
func (h *harness) chat(raw string) int {
	h.t.Helper()
	hdr := h.routing()
	hdr["x-gateway-api-key"] = raw
	resp, _ := h.do("POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, hdr)
	return resp.StatusCode
}
