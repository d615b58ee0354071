package store

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ai-gateway/gateway/internal/audit"
	"github.com/ai-gateway/gateway/internal/auth"
	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/tenancy"
)

func ptr[T any](v T) *T { return &v }

// newKey returns an active key of the organisation with a fresh random hash.
func newKey(org, ws, user, typ, subtype string) (*auth.APIKey, string) {
	raw := auth.GenerateKey()
	return &auth.APIKey{
		OrganisationID: org, WorkspaceID: ws, UserID: user, Name: "k " + raw[len(raw)-4:], Type: typ, Subtype: subtype,
		Hash: auth.HashKey(raw), Mask: auth.MaskKey(raw), Scopes: []string{auth.ScopeCompletionsWrite}, Status: auth.StatusActive,
	}, raw
}

func TestAPIKeyAdmin(t *testing.T) {
	forEachBootstrapped(t, func(t *testing.T, s *Store, res BootstrapResult) {
		ctx := t.Context()
		exp := time.Date(2031, 2, 3, 4, 5, 6, 7000, time.UTC)
		k, _ := newKey(res.OrganisationID, res.WorkspaceID, res.UserID, auth.KeyTypeWorkspace, auth.KeySubtypeUser)
		k.Description = "ci"
		k.Scopes = []string{"logs.list", "deployments.read"}
		k.Defaults = []byte(`{"config_id":"pc-1","metadata":{"team":"a"},"allow_config_override":false}`)
		k.RateLimits = []byte(`[{"type":"requests","unit":"rpm","value":5}]`)
		k.UsageLimits = []byte(`{"type":"cost","credit_limit":10,"current_usage":0.25}`)
		k.AlertEmails = []string{"a@example.com", "b@example.com"}
		k.ExpiresAt = &exp
		if err := s.CreateAPIKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		got, err := s.APIKey(ctx, res.OrganisationID, k.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(k, got); diff != "" {
			t.Errorf("APIKey (-want +got):\n%s", diff)
		}
		if _, err := s.APIKey(ctx, "other-org", k.ID); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("APIKey of another organisation: %v", err)
		}

		ws2, err := s.CreateWorkspace(ctx, res.OrganisationID, "ws2", "Two")
		if err != nil {
			t.Fatal(err)
		}
		org, _ := newKey(res.OrganisationID, "", "", auth.KeyTypeOrganisation, auth.KeySubtypeService)
		svc, _ := newKey(res.OrganisationID, ws2, "", auth.KeyTypeWorkspace, auth.KeySubtypeService)
		for _, x := range []*auth.APIKey{org, svc} {
			if err := s.CreateAPIKey(ctx, x); err != nil {
				t.Fatal(err)
			}
		}
		for _, tt := range []struct {
			f    auth.APIKeyFilter
			want []string
		}{
			{auth.APIKeyFilter{}, []string{svc.ID, org.ID, k.ID}},
			{auth.APIKeyFilter{WorkspaceID: ws2}, []string{svc.ID}},
			{auth.APIKeyFilter{UserID: res.UserID}, []string{k.ID}},
			{auth.APIKeyFilter{Type: auth.KeyTypeOrganisation}, []string{org.ID}},
			{auth.APIKeyFilter{Status: auth.StatusExpired}, nil},
			{auth.APIKeyFilter{PageSize: 2, Page: 1}, []string{k.ID}},
		} {
			tt.f.OrganisationID = res.OrganisationID
			list, total, err := s.ListAPIKeys(ctx, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, x := range list {
				ids = append(ids, x.ID)
			}
			if diff := cmp.Diff(tt.want, ids); diff != "" {
				t.Errorf("ListAPIKeys(%+v) (-want +got):\n%s", tt.f, diff)
			}
			if tt.f.PageSize == 0 && total != len(tt.want) {
				t.Errorf("ListAPIKeys(%+v) total = %d", tt.f, total)
			}
		}
		if n, err := s.CountUserAPIKeys(ctx, res.WorkspaceID, res.UserID); err != nil || n != 1 {
			t.Errorf("CountUserAPIKeys = %d, %v", n, err)
		}

		k.Name, k.Description, k.Scopes, k.AlertEmails = "renamed", "", []string{}, nil
		k.Defaults, k.RateLimits, k.UsageLimits, k.ExpiresAt = nil, nil, []byte(`{"credit_limit":1.5}`), nil
		if err := s.UpdateAPIKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		got, err = s.APIKey(ctx, res.OrganisationID, k.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(k, got); diff != "" {
			t.Errorf("after UpdateAPIKey (-want +got):\n%s", diff)
		}
		missing := *k
		missing.ID = "nope"
		if err := s.UpdateAPIKey(ctx, &missing); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("UpdateAPIKey of an unknown key: %v", err)
		}
		if _, err := s.DeleteAPIKey(ctx, res.OrganisationID, k.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.DeleteAPIKey(ctx, res.OrganisationID, k.ID); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("second delete: %v", err)
		}
		if _, err := s.APIKeyByHash(ctx, k.Hash); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("deleted key still found by hash: %v", err)
		}
	})
}

func TestAPIKeyRotationAndExpiry(t *testing.T) {
	forEachBootstrapped(t, func(t *testing.T, s *Store, res BootstrapResult) {
		ctx := t.Context()
		k, _ := newKey(res.OrganisationID, res.WorkspaceID, "", auth.KeyTypeWorkspace, auth.KeySubtypeService)
		far := time.Now().Add(24 * time.Hour).UTC().Truncate(time.Microsecond)
		k.ExpiresAt = &far
		if err := s.CreateAPIKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		oldHash := k.Hash

		// With a transition the old hash finds the key, expiring at the
		// transition's end; the new hash finds it with its own expiry.
		until := time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)
		rot, err := s.RotateAPIKey(ctx, res.OrganisationID, k.ID, "new-hash-1", "gw-new…1111", &until)
		if err != nil {
			t.Fatal(err)
		}
		if rot.Hash != "new-hash-1" || rot.Mask != "gw-new…1111" {
			t.Errorf("rotated key = %+v", rot)
		}
		old, err := s.APIKeyByHash(ctx, oldHash)
		if err != nil || old.ID != k.ID || old.ExpiresAt == nil || !old.ExpiresAt.Equal(until) {
			t.Fatalf("old hash during the transition = %+v, %v", old, err)
		}
		cur, err := s.APIKeyByHash(ctx, "new-hash-1")
		if err != nil || cur.ID != k.ID || !cur.ExpiresAt.Equal(far) {
			t.Fatalf("new hash = %+v, %v", cur, err)
		}

		// Without a transition the old hash stops at once.
		if _, err := s.RotateAPIKey(ctx, res.OrganisationID, k.ID, "new-hash-2", "m", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.APIKeyByHash(ctx, "new-hash-1"); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("hash rotated without transition still found: %v", err)
		}
		if _, err := s.APIKeyByHash(ctx, oldHash); err != nil {
			t.Errorf("the first rotation's transition ended early: %v", err)
		}
		if _, err := s.RotateAPIKey(ctx, res.OrganisationID, "nope", "h", "m", nil); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("rotating an unknown key: %v", err)
		}

		// The expiry worker's query: only active keys at or past their
		// expiry move, and ended transitions are forgotten.
		past := time.Now().Add(-time.Minute).UTC().Truncate(time.Microsecond)
		expiring, _ := newKey(res.OrganisationID, res.WorkspaceID, "", auth.KeyTypeWorkspace, auth.KeySubtypeService)
		expiring.ExpiresAt = &past
		never, _ := newKey(res.OrganisationID, res.WorkspaceID, "", auth.KeyTypeWorkspace, auth.KeySubtypeService)
		revoked, _ := newKey(res.OrganisationID, res.WorkspaceID, "", auth.KeyTypeWorkspace, auth.KeySubtypeService)
		revoked.ExpiresAt, revoked.Status = &past, auth.StatusRevoked
		for _, x := range []*auth.APIKey{expiring, never, revoked} {
			if err := s.CreateAPIKey(ctx, x); err != nil {
				t.Fatal(err)
			}
		}
		n, err := s.ExpireAPIKeys(ctx, time.Now())
		if err != nil || n != 1 {
			t.Fatalf("ExpireAPIKeys = %d, %v; want 1", n, err)
		}
		for id, want := range map[string]string{expiring.ID: auth.StatusExpired, never.ID: auth.StatusActive, revoked.ID: auth.StatusRevoked, k.ID: auth.StatusActive} {
			got, err := s.APIKey(ctx, res.OrganisationID, id)
			if err != nil || got.Status != want {
				t.Errorf("key %s status = %v, %v; want %s", id, got, err, want)
			}
		}
		if n, err := s.ExpireAPIKeys(ctx, time.Now()); err != nil || n != 0 {
			t.Errorf("second run = %d, %v", n, err)
		}
		if _, err := s.ExpireAPIKeys(ctx, until.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.APIKeyByHash(ctx, oldHash); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("ended transition still found: %v", err)
		}
		if _, err := s.DeleteAPIKey(ctx, res.OrganisationID, k.ID); err != nil {
			t.Fatal(err)
		}
	})
}

func TestWorkspaceAdmin(t *testing.T) {
	forEachBootstrapped(t, func(t *testing.T, s *Store, res BootstrapResult) {
		ctx := t.Context()
		def, err := s.Workspace(ctx, res.OrganisationID, "default")
		if err != nil || def.ID != res.WorkspaceID || !def.IsDefault {
			t.Fatalf("default workspace = %+v, %v", def, err)
		}
		w := &tenancy.Workspace{
			OrganisationID: res.OrganisationID, Slug: "team-a", Name: "Team A", Description: "first",
			Settings: tenancy.WorkspaceSettings{
				MembersViewAnalytics: ptr(false), MaxUserAPIKeys: ptr(3), DefaultUserAPIKeyExpiryDays: ptr(30), MaxUserAPIKeyExpiryDays: ptr(90),
			},
			UsageLimits: []byte(`{"credit_limit":100}`),
			RateLimits:  []byte(`[{"type":"requests","unit":"rpm","value":60}]`),
		}
		if err := s.InsertWorkspace(ctx, w); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{w.ID, w.Slug} {
			got, err := s.Workspace(ctx, res.OrganisationID, key)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(w, got); diff != "" {
				t.Errorf("Workspace(%s) (-want +got):\n%s", key, diff)
			}
		}
		if _, err := s.Workspace(ctx, "other-org", w.ID); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("workspace of another organisation: %v", err)
		}
		dup := &tenancy.Workspace{OrganisationID: res.OrganisationID, Slug: "team-a", Name: "dup"}
		if err := s.InsertWorkspace(ctx, dup); !errors.Is(err, httpx.ErrConflict) {
			t.Errorf("duplicate slug: %v", err)
		}
		list, total, err := s.ListWorkspaces(ctx, res.OrganisationID, "", 0, 0)
		if err != nil || total != 2 || len(list) != 2 || list[0].ID != res.WorkspaceID || list[1].ID != w.ID {
			t.Errorf("ListWorkspaces = %d %v, %v", total, list, err)
		}
		if list, total, err := s.ListWorkspaces(ctx, res.OrganisationID, w.ID, 0, 0); err != nil || total != 1 || list[0].ID != w.ID {
			t.Errorf("ListWorkspaces(only) = %d %v, %v", total, list, err)
		}

		w.Name, w.Slug, w.Settings, w.UsageLimits = "Team A2", "team-a2", tenancy.WorkspaceSettings{ManagersViewAnalytics: ptr(true)}, nil
		if err := s.UpdateWorkspace(ctx, w); err != nil {
			t.Fatal(err)
		}
		got, err := s.Workspace(ctx, res.OrganisationID, "team-a2")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(w, got); diff != "" {
			t.Errorf("after UpdateWorkspace (-want +got):\n%s", diff)
		}
		clash := *w
		clash.Slug = "default"
		if err := s.UpdateWorkspace(ctx, &clash); !errors.Is(err, httpx.ErrConflict) {
			t.Errorf("update to a taken slug: %v", err)
		}

		// Deleting takes the workspace's members, keys and virtual keys.
		u := &tenancy.User{OrganisationID: res.OrganisationID, Email: "m@example.com", Name: "M", Role: tenancy.RoleMember}
		if err := s.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AddMember(ctx, w.ID, u.ID, tenancy.WorkspaceRoleMember); err != nil {
			t.Fatal(err)
		}
		k, _ := newKey(res.OrganisationID, w.ID, u.ID, auth.KeyTypeWorkspace, auth.KeySubtypeUser)
		if err := s.CreateAPIKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		until := time.Now().Add(time.Hour)
		if _, err := s.RotateAPIKey(ctx, res.OrganisationID, k.ID, "rotated", "m", &until); err != nil {
			t.Fatal(err)
		}
		vk := &auth.VirtualKey{Slug: "vk", OrganisationID: res.OrganisationID, WorkspaceID: w.ID, Provider: "openai", SealedKey: []byte("x")}
		if err := s.CreateVirtualKey(ctx, vk); err != nil {
			t.Fatal(err)
		}
		if _, err := s.DeleteWorkspace(ctx, res.OrganisationID, res.WorkspaceID); !errors.Is(err, httpx.ErrConflict) {
			t.Errorf("deleting the default workspace: %v", err)
		}
		if _, err := s.DeleteWorkspace(ctx, res.OrganisationID, w.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Workspace(ctx, res.OrganisationID, w.ID); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("deleted workspace: %v", err)
		}
		if _, err := s.APIKeyByHash(ctx, k.Hash); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("key of a deleted workspace: %v", err)
		}
		if _, err := s.VirtualKey(ctx, res.OrganisationID, "vk"); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("virtual key of a deleted workspace: %v", err)
		}
		if _, err := s.Member(ctx, w.ID, u.ID); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("member of a deleted workspace: %v", err)
		}
		if _, err := s.DeleteWorkspace(ctx, res.OrganisationID, w.ID); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("deleting twice: %v", err)
		}
	})
}

func TestOrganisationSettings(t *testing.T) {
	forEachBootstrapped(t, func(t *testing.T, s *Store, res BootstrapResult) {
		ctx := t.Context()
		o, err := s.Organisation(ctx, res.OrganisationID)
		if err != nil || o.Settings.MembersViewAnalytics != nil || o.Name == "" {
			t.Fatalf("Organisation = %+v, %v", o, err)
		}
		o.Settings.MembersViewAnalytics = ptr(false)
		if err := s.UpdateOrganisation(ctx, o); err != nil {
			t.Fatal(err)
		}
		got, err := s.Organisation(ctx, res.OrganisationID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(o, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		if _, err := s.Organisation(ctx, "nope"); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("unknown organisation: %v", err)
		}
		if err := s.UpdateOrganisation(ctx, &tenancy.Organisation{ID: "nope"}); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("update unknown organisation: %v", err)
		}
	})
}

func TestUsersAndMembers(t *testing.T) {
	forEachBootstrapped(t, func(t *testing.T, s *Store, res BootstrapResult) {
		ctx := t.Context()
		owner, err := s.User(ctx, res.OrganisationID, res.UserID)
		if err != nil || owner.Role != tenancy.RoleOwner {
			t.Fatalf("bootstrap owner = %+v, %v", owner, err)
		}
		admin := &tenancy.User{OrganisationID: res.OrganisationID, Email: "admin@example.com", Name: "A", Role: tenancy.RoleAdmin}
		member := &tenancy.User{OrganisationID: res.OrganisationID, Email: "member@example.com", Name: "M", Role: tenancy.RoleMember}
		for _, u := range []*tenancy.User{admin, member} {
			if err := s.CreateUser(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.CreateUser(ctx, &tenancy.User{OrganisationID: res.OrganisationID, Email: "admin@example.com", Role: tenancy.RoleMember}); !errors.Is(err, httpx.ErrConflict) {
			t.Errorf("duplicate email: %v", err)
		}
		got, err := s.User(ctx, res.OrganisationID, admin.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(admin, got); diff != "" {
			t.Errorf("User (-want +got):\n%s", diff)
		}
		list, total, err := s.ListUsers(ctx, res.OrganisationID, tenancy.UserFilter{}, 0, 0)
		if err != nil || total != 3 || len(list) != 3 || list[0].ID != res.UserID {
			t.Errorf("ListUsers = %d %v, %v", total, list, err)
		}
		if list, total, err := s.ListUsers(ctx, res.OrganisationID, tenancy.UserFilter{Role: tenancy.RoleMember}, 0, 0); err != nil || total != 1 || list[0].ID != member.ID {
			t.Errorf("ListUsers(member) = %d %v, %v", total, list, err)
		}
		if list, _, err := s.ListUsers(ctx, res.OrganisationID, tenancy.UserFilter{Email: "admin@example.com"}, 0, 0); err != nil || len(list) != 1 {
			t.Errorf("ListUsers(email) = %v, %v", list, err)
		}

		// The last owner stays.
		if _, err := s.UpdateUserRole(ctx, res.OrganisationID, res.UserID, tenancy.RoleAdmin); !errors.Is(err, httpx.ErrConflict) {
			t.Errorf("demoting the last owner: %v", err)
		}
		if _, err := s.DeleteUser(ctx, res.OrganisationID, res.UserID); !errors.Is(err, httpx.ErrConflict) {
			t.Errorf("deleting the last owner: %v", err)
		}
		if u, err := s.UpdateUserRole(ctx, res.OrganisationID, admin.ID, tenancy.RoleOwner); err != nil || u.Role != tenancy.RoleOwner {
			t.Fatalf("promote = %+v, %v", u, err)
		}
		if _, err := s.UpdateUserRole(ctx, res.OrganisationID, res.UserID, tenancy.RoleAdmin); err != nil {
			t.Errorf("demoting one of two owners: %v", err)
		}
		if _, err := s.UpdateUserRole(ctx, res.OrganisationID, "nope", tenancy.RoleAdmin); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("unknown user: %v", err)
		}

		// Memberships.
		m, err := s.AddMember(ctx, res.WorkspaceID, member.ID, tenancy.WorkspaceRoleMember)
		if err != nil || m.Role != tenancy.WorkspaceRoleMember || m.Email != member.Email || m.OrgRole != tenancy.RoleMember {
			t.Fatalf("AddMember = %+v, %v", m, err)
		}
		if _, err := s.AddMember(ctx, res.WorkspaceID, member.ID, tenancy.WorkspaceRoleManager); !errors.Is(err, httpx.ErrConflict) {
			t.Errorf("adding twice: %v", err)
		}
		members, total, err := s.ListMembers(ctx, res.WorkspaceID, 0, 0)
		if err != nil || total != 2 || members[0].UserID != res.UserID || members[1].UserID != member.ID {
			t.Errorf("ListMembers = %d %+v, %v", total, members, err)
		}
		if m, err := s.UpdateMemberRole(ctx, res.WorkspaceID, member.ID, tenancy.WorkspaceRoleManager); err != nil || m.Role != tenancy.WorkspaceRoleManager {
			t.Errorf("UpdateMemberRole = %+v, %v", m, err)
		}
		if _, err := s.UpdateMemberRole(ctx, res.WorkspaceID, admin.ID, tenancy.WorkspaceRoleManager); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("role of a non-member: %v", err)
		}
		// Removing a member takes their keys of that workspace, not others.
		wsKey, _ := newKey(res.OrganisationID, res.WorkspaceID, member.ID, auth.KeyTypeWorkspace, auth.KeySubtypeUser)
		other, err := s.CreateWorkspace(ctx, res.OrganisationID, "other", "Other")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.AddMember(ctx, other, member.ID, tenancy.WorkspaceRoleMember); err != nil {
			t.Fatal(err)
		}
		otherKey, _ := newKey(res.OrganisationID, other, member.ID, auth.KeyTypeWorkspace, auth.KeySubtypeUser)
		for _, k := range []*auth.APIKey{wsKey, otherKey} {
			if err := s.CreateAPIKey(ctx, k); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.RemoveMember(ctx, res.WorkspaceID, member.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.APIKey(ctx, res.OrganisationID, wsKey.ID); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("key of a removed member: %v", err)
		}
		if _, err := s.APIKey(ctx, res.OrganisationID, otherKey.ID); err != nil {
			t.Errorf("key in another workspace: %v", err)
		}
		if _, err := s.RemoveMember(ctx, res.WorkspaceID, member.ID); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("removing twice: %v", err)
		}

		// Deleting a user takes their memberships and keys.
		if _, err := s.DeleteUser(ctx, res.OrganisationID, member.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.APIKey(ctx, res.OrganisationID, otherKey.ID); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("key of a deleted user: %v", err)
		}
		if _, err := s.Member(ctx, other, member.ID); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("membership of a deleted user: %v", err)
		}
		if _, err := s.DeleteUser(ctx, res.OrganisationID, member.ID); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("deleting twice: %v", err)
		}
	})
}

func TestInvites(t *testing.T) {
	forEachBootstrapped(t, func(t *testing.T, s *Store, res BootstrapResult) {
		ctx := t.Context()
		now := time.Now().UTC()
		ws2, err := s.CreateWorkspace(ctx, res.OrganisationID, "ws2", "Two")
		if err != nil {
			t.Fatal(err)
		}
		inv := &tenancy.Invite{
			OrganisationID: res.OrganisationID, Email: "new@example.com", Role: tenancy.RoleMember, InvitedBy: res.UserID,
			Workspaces: []tenancy.InviteWorkspace{{ID: res.WorkspaceID, Role: tenancy.WorkspaceRoleManager}, {ID: ws2, Role: tenancy.WorkspaceRoleMember}},
			ExpiresAt:  now.Add(time.Hour).Truncate(time.Microsecond),
		}
		if err := s.CreateInvite(ctx, inv); err != nil {
			t.Fatal(err)
		}
		got, err := s.Invite(ctx, res.OrganisationID, inv.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(inv, got); diff != "" {
			t.Errorf("Invite (-want +got):\n%s", diff)
		}
		if err := s.CreateInvite(ctx, &tenancy.Invite{OrganisationID: res.OrganisationID, Email: "new@example.com", Role: tenancy.RoleMember, ExpiresAt: now.Add(time.Hour)}); !errors.Is(err, httpx.ErrConflict) {
			t.Errorf("second pending invite: %v", err)
		}
		if err := s.CreateInvite(ctx, &tenancy.Invite{OrganisationID: res.OrganisationID, Email: bootstrapOwnerEmail, Role: tenancy.RoleMember, ExpiresAt: now.Add(time.Hour)}); !errors.Is(err, httpx.ErrConflict) {
			t.Errorf("invite of an existing user: %v", err)
		}
		stale := &tenancy.Invite{OrganisationID: res.OrganisationID, Email: "stale@example.com", Role: tenancy.RoleAdmin, ExpiresAt: now.Add(-time.Minute)}
		gone := &tenancy.Invite{OrganisationID: res.OrganisationID, Email: "gone@example.com", Role: tenancy.RoleMember, ExpiresAt: now.Add(time.Hour)}
		for _, i := range []*tenancy.Invite{stale, gone} {
			if err := s.CreateInvite(ctx, i); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.CancelInvite(ctx, res.OrganisationID, gone.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CancelInvite(ctx, res.OrganisationID, gone.ID); !errors.Is(err, httpx.ErrConflict) {
			t.Errorf("cancelling twice: %v", err)
		}
		for status, want := range map[string][]string{
			"": {gone.ID, stale.ID, inv.ID}, tenancy.InvitePending: {inv.ID}, tenancy.InviteExpired: {stale.ID},
			tenancy.InviteCancelled: {gone.ID}, tenancy.InviteAccepted: nil,
		} {
			list, total, err := s.ListInvites(ctx, res.OrganisationID, tenancy.InviteFilter{Status: status}, now, 0, 0)
			if err != nil || total != len(want) {
				t.Errorf("ListInvites(%q) total %d, %v", status, total, err)
			}
			var ids []string
			for _, i := range list {
				ids = append(ids, i.ID)
			}
			if diff := cmp.Diff(want, ids); diff != "" {
				t.Errorf("ListInvites(%q) (-want +got):\n%s", status, diff)
			}
		}
		if got, _ := s.Invite(ctx, res.OrganisationID, stale.ID); got.EffectiveStatus(now) != tenancy.InviteExpired {
			t.Errorf("stale invite effective status = %s", got.EffectiveStatus(now))
		}

		// The worker stores the expiry; resending revives the invite.
		if n, err := s.ExpireInvites(ctx, now); err != nil || n != 1 {
			t.Errorf("ExpireInvites = %d, %v", n, err)
		}
		again, err := s.ResendInvite(ctx, res.OrganisationID, stale.ID, now.Add(2*time.Hour))
		if err != nil || again.Status != tenancy.InvitePending || again.ResendCount != 1 || !again.ExpiresAt.After(now) {
			t.Errorf("ResendInvite = %+v, %v", again, err)
		}
		if _, err := s.ResendInvite(ctx, res.OrganisationID, gone.ID, now.Add(time.Hour)); !errors.Is(err, httpx.ErrConflict) {
			t.Errorf("resending a cancelled invite: %v", err)
		}
		if _, err := s.ResendInvite(ctx, res.OrganisationID, "nope", now); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("resending an unknown invite: %v", err)
		}

		// Accepting provisions the user and the memberships.
		u, err := s.AcceptInvite(ctx, "new@example.com", "New", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if u.Role != tenancy.RoleMember || u.Email != "new@example.com" {
			t.Errorf("accepted user = %+v", u)
		}
		for ws, role := range map[string]string{res.WorkspaceID: tenancy.WorkspaceRoleManager, ws2: tenancy.WorkspaceRoleMember} {
			if m, err := s.Member(ctx, ws, u.ID); err != nil || m.Role != role {
				t.Errorf("membership of %s = %+v, %v", ws, m, err)
			}
		}
		acc, err := s.Invite(ctx, res.OrganisationID, inv.ID)
		if err != nil || acc.Status != tenancy.InviteAccepted || acc.AcceptedAt == nil {
			t.Errorf("accepted invite = %+v, %v", acc, err)
		}
		if _, err := s.AcceptInvite(ctx, "new@example.com", "New", time.Now()); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("accepting twice: %v", err)
		}
		if _, err := s.DeleteInvite(ctx, res.OrganisationID, gone.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Invite(ctx, res.OrganisationID, gone.ID); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("deleted invite: %v", err)
		}
	})
}

func TestAuditRecords(t *testing.T) {
	forEachBootstrapped(t, func(t *testing.T, s *Store, res BootstrapResult) {
		ctx := t.Context()
		base := time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC)
		var recs []*audit.Record
		for i := range 5 {
			r := &audit.Record{
				OrganisationID: res.OrganisationID, Timestamp: base.Add(time.Duration(i) * time.Minute),
				ActorType: audit.ActorAPIKey, ActorID: fmt.Sprintf("key-%d", i%2), APIKeyID: fmt.Sprintf("key-%d", i%2),
				Method: "POST", URI: "/v1/api-keys/workspace/service", Action: "api_keys.create", ResourceType: "api_key",
				ResourceID: fmt.Sprintf("id-%d", i), WorkspaceID: res.WorkspaceID, StatusCode: 200, ClientIP: "127.0.0.1",
				RequestID: fmt.Sprintf("req-%d", i), RequestBody: `{"name":"x"}`,
			}
			if i == 4 {
				r.Method, r.Action, r.ResourceType, r.StatusCode, r.ActorType, r.ActorID = "DELETE", "workspaces.delete", "workspace", 403, audit.ActorUser, "user-1"
				r.RequestBody = "bad\x00\xff" + strings.Repeat("é", 40000)
			}
			if err := s.InsertAuditRecord(ctx, r); err != nil {
				t.Fatal(err)
			}
			recs = append(recs, r)
		}
		list, total, err := s.ListAuditRecords(ctx, audit.Filter{OrganisationID: res.OrganisationID})
		if err != nil || total != 5 || list[0].ID != recs[4].ID {
			t.Fatalf("ListAuditRecords = %d, %v", total, err)
		}
		want := *recs[0]
		if diff := cmp.Diff(&want, list[4]); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
		if !strings.HasPrefix(list[0].RequestBody, "bad\uFFFD\uFFFD") || len(list[0].RequestBody) > audit.MaxBody+64 {
			t.Errorf("long body stored as %d bytes starting %q", len(list[0].RequestBody), list[0].RequestBody[:10])
		}
		for _, tt := range []struct {
			name string
			f    audit.Filter
			want int
		}{
			{"from", audit.Filter{From: base.Add(2 * time.Minute)}, 3},
			{"to", audit.Filter{To: base.Add(time.Minute)}, 2},
			{"range", audit.Filter{From: base.Add(time.Minute), To: base.Add(3 * time.Minute)}, 3},
			{"method", audit.Filter{Method: "DELETE"}, 1},
			{"actor", audit.Filter{ActorID: "key-0"}, 2},
			{"actor type", audit.Filter{ActorType: audit.ActorUser}, 1},
			{"resource type", audit.Filter{ResourceType: "api_key"}, 4},
			{"resource id", audit.Filter{ResourceID: "id-3"}, 1},
			{"action", audit.Filter{Action: "workspaces.delete"}, 1},
			{"status", audit.Filter{StatusCode: 403}, 1},
			{"workspace", audit.Filter{WorkspaceID: "other"}, 0},
			{"other organisation", audit.Filter{OrganisationID: "other"}, 0},
		} {
			if tt.f.OrganisationID == "" {
				tt.f.OrganisationID = res.OrganisationID
			}
			_, total, err := s.ListAuditRecords(ctx, tt.f)
			if err != nil || total != tt.want {
				t.Errorf("%s: total %d, %v; want %d", tt.name, total, err, tt.want)
			}
		}
		page, total, err := s.ListAuditRecords(ctx, audit.Filter{OrganisationID: res.OrganisationID, Page: 2, PageSize: 2})
		if err != nil || total != 5 || len(page) != 1 || page[0].ID != recs[0].ID {
			t.Errorf("page 2 of 2 = %d records, total %d, %v", len(page), total, err)
		}
	})
}
