package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ai-gateway/gateway/internal/store"
)

// TestWorkspaces: create, get by id and slug, list, update (settings merge
// and reset), delete with what belongs to the workspace; a workspace key
// sees only its own workspace.
func TestWorkspaces(t *testing.T) {
	h := start(t)
	ws := h.must(h.key, "POST", "/v1/admin/workspaces", map[string]any{
		"name": "Research", "description": "R&D", "usage_limits": map[string]any{"credit_limit": 100},
		"rate_limits": []any{map[string]any{"type": "tokens", "unit": "rpd", "value": 1000000}},
	})
	id, slug := ws["id"].(string), ws["slug"].(string)
	if ws["object"] != "workspace" || !strings.HasPrefix(slug, "research-") || ws["organisation_id"] != h.app.Bootstrap.OrganisationID || ws["is_default"] != false {
		t.Errorf("created = %v", ws)
	}
	s := ws["settings"].(map[string]any)
	if s["membersViewAnalytics"] != true || s["managersViewAnalytics"] != true || s["maxUserApiKeys"] != nil {
		t.Errorf("default settings = %v", s)
	}
	for _, key := range []string{id, slug} {
		if got := h.must(h.key, "GET", "/v1/admin/workspaces/"+key, nil); got["id"] != id {
			t.Errorf("GET %s = %v", key, got)
		}
	}
	if status, _ := h.call(h.key, "POST", "/v1/admin/workspaces", map[string]any{"name": "dup", "slug": slug}); status != 409 {
		t.Errorf("duplicate slug: %d", status)
	}
	for _, bad := range []map[string]any{
		{"name": ""}, {"name": "x", "slug": "Bad Slug"}, {"name": "x", "settings": map[string]any{"maxUserApiKeys": 0}},
		{"name": "x", "settings": map[string]any{"membersViewAnalytics": "yes"}}, {"name": "x", "settings": map[string]any{"colour": 1}},
		{"name": "x", "settings": map[string]any{"defaultUserApiKeyExpiryDays": 40, "maxUserApiKeyExpiryDays": 30}},
		{"name": "x", "usage_limits": map[string]any{"credit_limit": -1}}, {"name": "x", "rate_limits": []any{map[string]any{"type": "bytes", "unit": "rpm", "value": 1}}},
	} {
		if status, m := h.call(h.key, "POST", "/v1/admin/workspaces", bad); status != 400 {
			t.Errorf("%v: %d %v", bad, status, m)
		}
	}

	up := h.must(h.key, "PUT", "/v1/admin/workspaces/"+slug, map[string]any{"settings": map[string]any{"membersViewAnalytics": false, "maxUserApiKeys": 5}})
	if s := up["settings"].(map[string]any); s["membersViewAnalytics"] != false || s["managersViewAnalytics"] != true || s["maxUserApiKeys"] != 5.0 {
		t.Errorf("after update = %v", s)
	}
	up = h.must(h.key, "PUT", "/v1/admin/workspaces/"+id, map[string]any{"settings": map[string]any{"membersViewAnalytics": nil}, "usage_limits": nil})
	if s := up["settings"].(map[string]any); s["membersViewAnalytics"] != true || s["maxUserApiKeys"] != 5.0 || up["usage_limits"] != nil || up["description"] != "R&D" {
		t.Errorf("after reset = %v", up)
	}

	list := h.must(h.key, "GET", "/v1/admin/workspaces", nil)
	if list["total"] != 2.0 || list["data"].([]any)[0].(map[string]any)["is_default"] != true {
		t.Errorf("list = %v", list)
	}
	wsKey, _ := h.newKey(h.key, "workspace", "service", map[string]any{"workspace_id": id})
	if own := h.must(wsKey, "GET", "/v1/admin/workspaces", nil); own["total"] != 1.0 {
		t.Errorf("workspace key lists %v workspaces", own["total"])
	}
	if status, _ := h.call(wsKey, "GET", "/v1/admin/workspaces/"+h.app.Bootstrap.WorkspaceID, nil); status != 404 {
		t.Errorf("workspace key GET another workspace: %d", status)
	}
	if status, _ := h.call(wsKey, "GET", "/v1/virtual-keys", nil, "x-gateway-workspace", "default"); status != 404 {
		t.Errorf("workspace key naming another workspace: %d", status)
	}
	if status, _ := h.call(h.key, "GET", "/v1/virtual-keys", nil, "x-gateway-workspace", "nope"); status != 404 {
		t.Errorf("admin key naming an unknown workspace: %d", status)
	}

	// An organisation key names the workspace it creates in by header or
	// field (id or slug), else the default workspace.
	for hdr, want := range map[string]string{"": h.app.Bootstrap.WorkspaceID, slug: id, id: id} {
		var kv []string
		if hdr != "" {
			kv = []string{"x-gateway-workspace", hdr}
		}
		vk := h.must(h.key, "POST", "/v1/virtual-keys", map[string]any{"name": "v", "provider": "openai", "key": "k"}, kv...)
		if vk["workspace_id"] != want {
			t.Errorf("header %q: virtual key in %v, want %s", hdr, vk["workspace_id"], want)
		}
	}
	vk := h.must(h.key, "POST", "/v1/virtual-keys", map[string]any{"name": "v", "provider": "openai", "key": "k", "workspace_id": slug})
	if vk["workspace_id"] != id {
		t.Errorf("workspace_id by slug: %v", vk["workspace_id"])
	}
	if n := h.must(h.key, "GET", "/v1/virtual-keys", nil, "x-gateway-workspace", slug)["total"]; n != 3.0 {
		t.Errorf("virtual keys listed in the named workspace: %v", n)
	}
	if n := h.must(h.key, "GET", "/v1/virtual-keys", nil)["total"]; n != 4.0 {
		t.Errorf("virtual keys listed across workspaces: %v", n)
	}

	if status, m := h.call(h.key, "DELETE", "/v1/admin/workspaces/default", nil); status != 409 {
		t.Errorf("deleting the default workspace: %d %v", status, m)
	}
	if h.chat(wsKey) != 200 {
		t.Fatal("workspace key before deletion")
	}
	if m := h.must(h.key, "DELETE", "/v1/admin/workspaces/"+slug, nil); m["deleted"] != true || m["id"] != id {
		t.Errorf("delete = %v", m)
	}
	if got := h.chat(wsKey); got != 401 {
		t.Errorf("key of a deleted workspace: %d", got)
	}
	if status, _ := h.call(h.key, "GET", "/v1/virtual-keys/"+vk["slug"].(string), nil); status != 404 {
		t.Errorf("virtual key of a deleted workspace: %d", status)
	}
}

// TestMembersAndUsers: workspace members (add, list, get, change role,
// remove, whose keys go with the membership) and organisation users (list,
// get, change role keeping an owner, remove).
func TestMembersAndUsers(t *testing.T) {
	h := start(t)
	ws := h.newWorkspace("team")
	alice := h.addUser("alice@example.com", "member", nil)
	bob := h.addUser("bob@example.com", "admin", nil)

	added := h.must(h.key, "POST", "/v1/admin/workspaces/"+ws+"/users", map[string]any{"users": []any{
		map[string]any{"id": alice, "role": "member"}, map[string]any{"user_id": bob, "role": "manager"},
	}})
	if added["total"] != 2.0 {
		t.Errorf("added = %v", added)
	}
	if status, _ := h.call(h.key, "POST", "/v1/admin/workspaces/"+ws+"/users", map[string]any{"users": []any{map[string]any{"id": alice, "role": "member"}}}); status != 409 {
		t.Errorf("adding twice: %d", status)
	}
	for _, bad := range []any{
		[]any{map[string]any{"id": "nobody", "role": "member"}}, []any{map[string]any{"id": alice, "role": "owner"}}, []any{},
	} {
		if status, _ := h.call(h.key, "POST", "/v1/admin/workspaces/"+ws+"/users", map[string]any{"users": bad}); status != 400 {
			t.Errorf("add %v: %d", bad, status)
		}
	}
	members := h.must(h.key, "GET", "/v1/admin/workspaces/team/users", nil)
	if members["total"] != 2.0 {
		t.Errorf("members = %v", members)
	}
	m := h.must(h.key, "GET", "/v1/admin/workspaces/"+ws+"/users/"+alice, nil)
	if m["role"] != "member" || m["email"] != "alice@example.com" || m["organisation_role"] != "member" || m["object"] != "workspace-member" {
		t.Errorf("member = %v", m)
	}
	aliceKey, aliceKeyID := h.newKey(h.key, "workspace", "user", map[string]any{"user_id": alice, "workspace_id": ws})
	if status, _ := h.call(aliceKey, "POST", "/v1/virtual-keys", map[string]any{"name": "a", "provider": "openai", "key": "k"}); status != 403 {
		t.Errorf("member writes: %d", status)
	}
	if status, _ := h.call(aliceKey, "GET", "/v1/admin/workspaces/"+ws+"/users", nil); status != 403 {
		t.Errorf("member lists members: %d", status)
	}
	managerScopes := map[string]any{"scopes": []string{"virtual_keys.create", "workspace_users.list", "completions.write"}}
	if status, m := h.call(h.key, "PUT", "/v1/api-keys/"+aliceKeyID, managerScopes); status != 400 {
		t.Errorf("manager scopes on a member's key: %d %v", status, m)
	}
	// A promotion counts at once; the key's scopes, fixed when it was made,
	// are widened separately.
	h.must(h.key, "PUT", "/v1/admin/workspaces/"+ws+"/users/"+alice, map[string]any{"role": "manager"})
	h.must(h.key, "PUT", "/v1/api-keys/"+aliceKeyID, managerScopes)
	if status, _ := h.call(aliceKey, "POST", "/v1/virtual-keys", map[string]any{"name": "a", "provider": "openai", "key": "k"}); status != 200 {
		t.Errorf("manager writes: %d", status)
	}
	if got := h.must(aliceKey, "GET", "/v1/admin/workspaces/"+ws+"/users", nil)["total"]; got != 2.0 {
		t.Errorf("manager lists %v members", got)
	}
	if status, _ := h.call(h.key, "PUT", "/v1/admin/workspaces/"+ws+"/users/"+alice, map[string]any{"role": "admin"}); status != 400 {
		t.Errorf("invalid workspace role: %d", status)
	}
	// Removal ends the membership and the keys that came with it.
	if m := h.must(h.key, "DELETE", "/v1/admin/workspaces/"+ws+"/users/"+alice, nil); m["deleted"] != true {
		t.Errorf("remove = %v", m)
	}
	if got := h.chat(aliceKey); got != 401 {
		t.Errorf("key of a removed member: %d", got)
	}
	if status, _ := h.call(h.key, "GET", "/v1/admin/workspaces/"+ws+"/users/"+alice, nil); status != 404 {
		t.Errorf("removed member: %d", status)
	}

	// Users.
	users := h.must(h.key, "GET", "/v1/admin/users", nil)
	if users["total"] != 3.0 {
		t.Errorf("users = %v", users)
	}
	if got := h.must(h.key, "GET", "/v1/admin/users?role=admin", nil); got["total"] != 1.0 || got["data"].([]any)[0].(map[string]any)["id"] != bob {
		t.Errorf("admins = %v", got)
	}
	if got := h.must(h.key, "GET", "/v1/admin/users?email=ALICE@example.com", nil); got["total"] != 1.0 {
		t.Errorf("by email = %v", got)
	}
	owner := h.app.Bootstrap.UserID
	if status, m := h.call(h.key, "PUT", "/v1/admin/users/"+owner, map[string]any{"role": "admin"}); status != 409 {
		t.Errorf("demoting the last owner: %d %v", status, m)
	}
	if status, _ := h.call(h.key, "DELETE", "/v1/admin/users/"+owner, nil); status != 409 {
		t.Errorf("removing the last owner: %d", status)
	}
	bobKey, _ := h.newKey(h.key, "organisation", "user", map[string]any{"user_id": bob})
	if status, _ := h.call(h.key, "POST", "/v1/api-keys/organisation/user", map[string]any{"name": "x", "user_id": alice}); status != 400 {
		t.Errorf("organisation key for a member: %d", status)
	}
	h.must(bobKey, "GET", "/v1/admin/users", nil)
	// Demoting an admin takes their admin key's powers at once.
	if u := h.must(h.key, "PUT", "/v1/admin/users/"+bob, map[string]any{"role": "member"}); u["role"] != "member" {
		t.Errorf("demoted = %v", u)
	}
	if status, _ := h.call(bobKey, "GET", "/v1/admin/users", nil); status != 403 {
		t.Errorf("admin key of a demoted admin: %d", status)
	}
	if status, _ := h.call(h.key, "PUT", "/v1/admin/users/"+bob, map[string]any{"role": "king"}); status != 400 {
		t.Errorf("invalid role: %d", status)
	}
	if m := h.must(h.key, "DELETE", "/v1/admin/users/"+bob, nil); m["deleted"] != true {
		t.Errorf("delete user = %v", m)
	}
	if status, _ := h.call(bobKey, "GET", "/v1/virtual-keys", nil); status != 401 {
		t.Errorf("key of a removed user: %d", status)
	}
	if status, _ := h.call(h.key, "GET", "/v1/admin/users/"+bob, nil); status != 404 {
		t.Errorf("removed user: %d", status)
	}
}

// TestInvitesAPI: invites with an organisation role and workspace roles,
// their statuses, resend, delete and expiry.
func TestInvitesAPI(t *testing.T) {
	h := start(t)
	ws := h.newWorkspace("team")
	inv := h.must(h.key, "POST", "/v1/admin/users/invites", map[string]any{
		"email": "New@Example.com", "role": "admin", "workspaces": []any{map[string]any{"id": "team", "role": "manager"}},
	})
	id := inv["id"].(string)
	exp, _ := time.Parse(time.RFC3339Nano, inv["expires_at"].(string))
	if inv["object"] != "invite" || inv["email"] != "new@example.com" || inv["status"] != "pending" || inv["invited_by"] == "" ||
		exp.Sub(time.Now()) < 6*24*time.Hour || inv["accepted_at"] != nil {
		t.Errorf("invite = %v", inv)
	}
	if w := inv["workspaces"].([]any)[0].(map[string]any); w["id"] != ws || w["role"] != "manager" {
		t.Errorf("workspaces = %v", inv["workspaces"])
	}
	for _, bad := range []map[string]any{
		{"email": "not an email"}, {"email": "a@example.com", "role": "king"},
		{"email": "a@example.com", "workspaces": []any{map[string]any{"id": "nope", "role": "member"}}},
		{"email": "a@example.com", "workspaces": []any{map[string]any{"id": ws, "role": "admin"}}},
		{"email": "a@example.com", "expires_in_days": 31},
	} {
		if status, _ := h.call(h.key, "POST", "/v1/admin/users/invites", bad); status != 400 {
			t.Errorf("%v: %d", bad, status)
		}
	}
	if status, _ := h.call(h.key, "POST", "/v1/admin/users/invites", map[string]any{"email": "new@example.com"}); status != 409 {
		t.Errorf("second pending invite: %d", status)
	}
	if status, _ := h.call(h.key, "POST", "/v1/admin/users/invites", map[string]any{"email": "owner@localhost"}); status != 400 && status != 409 {
		t.Errorf("invite of a user: %d", status)
	}
	re := h.must(h.key, "POST", "/v1/admin/users/invites/"+id+"/resend", nil)
	if re["resend_count"] != 1.0 || re["status"] != "pending" {
		t.Errorf("resent = %v", re)
	}

	other := h.must(h.key, "POST", "/v1/admin/users/invites", map[string]any{"email": "other@example.com", "expires_in_days": 1})["id"].(string)
	gone := h.must(h.key, "POST", "/v1/admin/users/invites", map[string]any{"email": "gone@example.com"})["id"].(string)
	if m := h.must(h.key, "DELETE", "/v1/admin/users/invites/"+gone, nil); m["deleted"] != true {
		t.Errorf("delete = %v", m)
	}
	// Accepted at the first login; expired by time (and the worker).
	h.withStore(func(st *store.Store) {
		if _, err := st.AcceptInvite(context.Background(), "new@example.com", "New", time.Now()); err != nil {
			t.Fatal(err)
		}
		if _, err := st.ExpireInvites(context.Background(), time.Now().Add(2*24*time.Hour)); err != nil {
			t.Fatal(err)
		}
	})
	for status, want := range map[string]string{"pending": "", "accepted": id, "expired": other, "cancelled": gone} {
		got := h.must(h.key, "GET", "/v1/admin/users/invites?status="+status, nil)
		ids := ""
		for _, d := range got["data"].([]any) {
			ids += d.(map[string]any)["id"].(string)
		}
		if ids != want {
			t.Errorf("status %s lists %q, want %q", status, ids, want)
		}
	}
	if got := h.must(h.key, "GET", "/v1/admin/users/invites/"+id, nil); got["status"] != "accepted" || got["accepted_at"] == nil {
		t.Errorf("accepted invite = %v", got)
	}
	if m := h.must(h.key, "GET", "/v1/admin/workspaces/"+ws+"/users?page_size=10", nil); m["total"] != 1.0 {
		t.Errorf("the accepted invite's workspace has %v members", m["total"])
	}
	if status, _ := h.call(h.key, "POST", "/v1/admin/users/invites/"+id+"/resend", nil); status != 409 {
		t.Errorf("resending an accepted invite: %d", status)
	}
	if re := h.must(h.key, "POST", "/v1/admin/users/invites/"+other+"/resend", nil); re["status"] != "pending" {
		t.Errorf("resent expired invite = %v", re)
	}
	h.must(h.key, "DELETE", "/v1/admin/users/invites/"+gone, nil) // a cancelled invite is removed
	if status, _ := h.call(h.key, "GET", "/v1/admin/users/invites/"+gone, nil); status != 404 {
		t.Errorf("removed invite: %d", status)
	}
	if status, _ := h.call(h.key, "GET", "/v1/admin/users/invites?status=lost", nil); status != 400 {
		t.Errorf("unknown status filter: %d", status)
	}
}

// TestAnalyticsSettings: membersViewAnalytics and managersViewAnalytics
// (default enabled, organisation default, workspace override) decide for
// user keys of members and managers; owners and admins always see
// analytics. The analytics routes arrive with their issue: an allowed key
// meets the JSON 404 of a route not yet served.
func TestAnalyticsSettings(t *testing.T) {
	h := start(t)
	ws := h.newWorkspace("team")
	member := h.addUser("m@example.com", "member", map[string]string{ws: "member"})
	manager := h.addUser("g@example.com", "member", map[string]string{ws: "manager"})
	admin := h.addUser("a@example.com", "admin", nil)
	keys := map[string]string{}
	keys["member"], _ = h.newKey(h.key, "workspace", "user", map[string]any{"user_id": member, "workspace_id": ws})
	keys["manager"], _ = h.newKey(h.key, "workspace", "user", map[string]any{"user_id": manager, "workspace_id": ws})
	keys["admin"], _ = h.newKey(h.key, "workspace", "user", map[string]any{"user_id": admin, "workspace_id": ws})
	keys["service"], _ = h.newKey(h.key, "workspace", "service", map[string]any{"workspace_id": ws})
	check := func(step string, want map[string]int) {
		t.Helper()
		for who, status := range want {
			if got, m := h.call(keys[who], "GET", "/v1/analytics/summary/cache", nil); got != status {
				t.Errorf("%s: %s: %d %v, want %d", step, who, got, m, status)
			}
		}
	}
	check("defaults", map[string]int{"member": 404, "manager": 404, "admin": 404, "service": 404})
	h.must(h.key, "PUT", "/v1/admin/organisation", map[string]any{"settings": map[string]any{"membersViewAnalytics": false}})
	if o := h.must(h.key, "GET", "/v1/admin/organisation", nil); o["settings"].(map[string]any)["membersViewAnalytics"] != false {
		t.Errorf("organisation = %v", o)
	}
	check("organisation default off for members", map[string]int{"member": 403, "manager": 404, "admin": 404})
	h.must(h.key, "PUT", "/v1/admin/workspaces/"+ws, map[string]any{"settings": map[string]any{"membersViewAnalytics": true, "managersViewAnalytics": false}})
	check("workspace override", map[string]int{"member": 404, "manager": 403, "admin": 404, "service": 404})
}
