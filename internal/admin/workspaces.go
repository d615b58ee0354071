package admin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/tenancy"
)

// TenancyStore persists the organisation, its workspaces and their
// members, users and invites.
type TenancyStore interface {
	Organisation(ctx context.Context, id string) (*tenancy.Organisation, error)
	UpdateOrganisation(ctx context.Context, o *tenancy.Organisation) error

	InsertWorkspace(ctx context.Context, w *tenancy.Workspace) error
	Workspace(ctx context.Context, organisationID, idOrSlug string) (*tenancy.Workspace, error)
	ListWorkspaces(ctx context.Context, organisationID, only string, page, pageSize int) ([]*tenancy.Workspace, int, error)
	UpdateWorkspace(ctx context.Context, w *tenancy.Workspace) error
	DeleteWorkspace(ctx context.Context, organisationID, id string) (*tenancy.Workspace, error)

	AddMember(ctx context.Context, workspaceID, userID, role string) (*tenancy.Member, error)
	Member(ctx context.Context, workspaceID, userID string) (*tenancy.Member, error)
	ListMembers(ctx context.Context, workspaceID string, page, pageSize int) ([]*tenancy.Member, int, error)
	UpdateMemberRole(ctx context.Context, workspaceID, userID, role string) (*tenancy.Member, error)
	RemoveMember(ctx context.Context, workspaceID, userID string) (*tenancy.Member, error)

	User(ctx context.Context, organisationID, id string) (*tenancy.User, error)
	ListUsers(ctx context.Context, organisationID string, f tenancy.UserFilter, page, pageSize int) ([]*tenancy.User, int, error)
	UpdateUserRole(ctx context.Context, organisationID, id, role string) (*tenancy.User, error)
	DeleteUser(ctx context.Context, organisationID, id string) (*tenancy.User, error)

	CreateInvite(ctx context.Context, i *tenancy.Invite) error
	Invite(ctx context.Context, organisationID, id string) (*tenancy.Invite, error)
	ListInvites(ctx context.Context, organisationID string, f tenancy.InviteFilter, now time.Time, page, pageSize int) ([]*tenancy.Invite, int, error)
	ResendInvite(ctx context.Context, organisationID, id string, expiresAt time.Time) (*tenancy.Invite, error)
	CancelInvite(ctx context.Context, organisationID, id string) (*tenancy.Invite, error)
	DeleteInvite(ctx context.Context, organisationID, id string) (*tenancy.Invite, error)
}

// registerTenancy mounts the organisation, workspace, member, user and
// invite routes (API.md §6).
func (a *API) registerTenancy(mux *http.ServeMux, h func(httpx.HandlerFunc) http.Handler) {
	mux.Handle("GET /v1/admin/organisation", h(a.getOrganisation))
	mux.Handle("PUT /v1/admin/organisation", h(a.updateOrganisation))

	mux.Handle("POST /v1/admin/workspaces", h(a.createWorkspace))
	mux.Handle("GET /v1/admin/workspaces", h(a.listWorkspaces))
	mux.Handle("GET /v1/admin/workspaces/{id}", h(a.getWorkspace))
	mux.Handle("PUT /v1/admin/workspaces/{id}", h(a.updateWorkspace))
	mux.Handle("DELETE /v1/admin/workspaces/{id}", h(a.deleteWorkspace))

	mux.Handle("POST /v1/admin/workspaces/{id}/users", h(a.addMembers))
	mux.Handle("GET /v1/admin/workspaces/{id}/users", h(a.listMembers))
	mux.Handle("GET /v1/admin/workspaces/{id}/users/{user_id}", h(a.getMember))
	mux.Handle("PUT /v1/admin/workspaces/{id}/users/{user_id}", h(a.updateMember))
	mux.Handle("DELETE /v1/admin/workspaces/{id}/users/{user_id}", h(a.removeMember))

	mux.Handle("GET /v1/admin/users", h(a.listUsers))
	mux.Handle("GET /v1/admin/users/{id}", h(a.getUser))
	mux.Handle("PUT /v1/admin/users/{id}", h(a.updateUser))
	mux.Handle("DELETE /v1/admin/users/{id}", h(a.deleteUser))

	mux.Handle("POST /v1/admin/users/invites", h(a.createInvite))
	mux.Handle("GET /v1/admin/users/invites", h(a.listInvites))
	mux.Handle("GET /v1/admin/users/invites/{id}", h(a.getInvite))
	mux.Handle("DELETE /v1/admin/users/invites/{id}", h(a.deleteInvite))
	mux.Handle("POST /v1/admin/users/invites/{id}/resend", h(a.resendInvite))
}

// optional is a field of a partial update: absent (Set false), null (Set,
// Null) or a value.
type optional[T any] struct {
	Set, Null bool
	V         T
}

func (o *optional[T]) UnmarshalJSON(b []byte) error {
	o.Set = true
	if string(b) == "null" {
		o.Null = true
		return nil
	}
	return json.Unmarshal(b, &o.V)
}

// apply sets *dst from o: nil for null, the value otherwise, unchanged when
// absent.
func apply[T any](o optional[T], dst **T) {
	switch {
	case !o.Set:
	case o.Null:
		*dst = nil
	default:
		v := o.V
		*dst = &v
	}
}

// orgSettingsInput is the settings object of PUT /v1/admin/organisation.
type orgSettingsInput struct {
	MembersViewAnalytics  optional[bool] `json:"membersViewAnalytics"`
	ManagersViewAnalytics optional[bool] `json:"managersViewAnalytics"`
}

// organisationView shows the analytics defaults as they apply.
type organisationView struct {
	Object    string          `json:"object"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Settings  map[string]bool `json:"settings"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"last_updated_at"`
}

func viewOrganisation(o *tenancy.Organisation) organisationView {
	members, managers := tenancy.WorkspaceSettings{}.Analytics(o.Settings)
	return organisationView{
		Object: "organisation", ID: o.ID, Name: o.Name, CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt,
		Settings: map[string]bool{"membersViewAnalytics": members, "managersViewAnalytics": managers},
	}
}

func (a *API) getOrganisation(w http.ResponseWriter, r *http.Request) error {
	o, err := a.d.Tenancy.Organisation(r.Context(), actorFrom(r).p.OrganisationID)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, viewOrganisation(o))
	return nil
}

// updateOrganisation changes the organisation's name and its analytics
// defaults, which every workspace without its own setting follows.
func (a *API) updateOrganisation(w http.ResponseWriter, r *http.Request) error {
	act := actorFrom(r)
	var in struct {
		Name     *string           `json:"name"`
		Settings *orgSettingsInput `json:"settings"`
	}
	if err := decodeBody(w, r, &in); err != nil {
		return err
	}
	o, err := a.d.Tenancy.Organisation(r.Context(), act.p.OrganisationID)
	if err != nil {
		return err
	}
	if in.Name != nil {
		n, err := validName(*in.Name)
		if err != nil {
			return err
		}
		o.Name = n
	}
	if in.Settings != nil {
		apply(in.Settings.MembersViewAnalytics, &o.Settings.MembersViewAnalytics)
		apply(in.Settings.ManagersViewAnalytics, &o.Settings.ManagersViewAnalytics)
	}
	if err := a.d.Tenancy.UpdateOrganisation(r.Context(), o); err != nil {
		return err
	}
	noteResource(r, o.ID, "")
	httpx.WriteJSON(w, http.StatusOK, viewOrganisation(o))
	return nil
}

// decodeBody reads a control-plane JSON body strictly into v.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := httpx.ReadBody(w, r, 1<<20)
	if err != nil {
		return err
	}
	return httpx.DecodeStrict(body, v)
}

func validName(s string) (string, error) {
	n := strings.TrimSpace(s)
	if n == "" || len(n) > maxNameLen {
		return "", httpx.BadRequest("invalid_value", "name", "name: must be 1 to %d characters", maxNameLen)
	}
	return n, nil
}

// workspaceSettingsInput is the settings object of the workspace routes.
type workspaceSettingsInput struct {
	MembersViewAnalytics        optional[bool] `json:"membersViewAnalytics"`
	ManagersViewAnalytics       optional[bool] `json:"managersViewAnalytics"`
	MaxUserAPIKeys              optional[int]  `json:"maxUserApiKeys"`
	DefaultUserAPIKeyExpiryDays optional[int]  `json:"defaultUserApiKeyExpiryDays"`
	MaxUserAPIKeyExpiryDays     optional[int]  `json:"maxUserApiKeyExpiryDays"`
}

// Bounds of the workspace key settings.
const (
	maxUserKeysLimit = 10_000
	maxExpiryDays    = 3650
)

func (in *workspaceSettingsInput) applyTo(s *tenancy.WorkspaceSettings) error {
	apply(in.MembersViewAnalytics, &s.MembersViewAnalytics)
	apply(in.ManagersViewAnalytics, &s.ManagersViewAnalytics)
	apply(in.MaxUserAPIKeys, &s.MaxUserAPIKeys)
	apply(in.DefaultUserAPIKeyExpiryDays, &s.DefaultUserAPIKeyExpiryDays)
	apply(in.MaxUserAPIKeyExpiryDays, &s.MaxUserAPIKeyExpiryDays)
	if v := s.MaxUserAPIKeys; v != nil && (*v < 1 || *v > maxUserKeysLimit) {
		return httpx.BadRequest("invalid_value", "settings.maxUserApiKeys", "settings.maxUserApiKeys: must be between 1 and %d", maxUserKeysLimit)
	}
	for name, v := range map[string]*int{"defaultUserApiKeyExpiryDays": s.DefaultUserAPIKeyExpiryDays, "maxUserApiKeyExpiryDays": s.MaxUserAPIKeyExpiryDays} {
		if v != nil && (*v < 1 || *v > maxExpiryDays) {
			return httpx.BadRequest("invalid_value", "settings."+name, "settings.%s: must be between 1 and %d days", name, maxExpiryDays)
		}
	}
	if d, m := s.DefaultUserAPIKeyExpiryDays, s.MaxUserAPIKeyExpiryDays; d != nil && m != nil && *d > *m {
		return httpx.BadRequest("invalid_value", "settings.defaultUserApiKeyExpiryDays", "settings.defaultUserApiKeyExpiryDays: must not exceed maxUserApiKeyExpiryDays")
	}
	return nil
}

// workspaceInput is the body of POST and PUT /v1/admin/workspaces.
type workspaceInput struct {
	Name        *string                 `json:"name"`
	Slug        *string                 `json:"slug"`
	Description *string                 `json:"description"`
	Settings    *workspaceSettingsInput `json:"settings"`
	UsageLimits json.RawMessage         `json:"usage_limits"`
	RateLimits  json.RawMessage         `json:"rate_limits"`
}

// workspaceSettingsView shows a workspace's settings as they apply: the
// analytics flags resolved against the organisation's defaults.
type workspaceSettingsView struct {
	MembersViewAnalytics        bool `json:"membersViewAnalytics"`
	ManagersViewAnalytics       bool `json:"managersViewAnalytics"`
	MaxUserAPIKeys              *int `json:"maxUserApiKeys"`
	DefaultUserAPIKeyExpiryDays *int `json:"defaultUserApiKeyExpiryDays"`
	MaxUserAPIKeyExpiryDays     *int `json:"maxUserApiKeyExpiryDays"`
}

type workspaceView struct {
	Object         string                `json:"object"`
	ID             string                `json:"id"`
	Slug           string                `json:"slug"`
	Name           string                `json:"name"`
	Description    string                `json:"description"`
	OrganisationID string                `json:"organisation_id"`
	IsDefault      bool                  `json:"is_default"`
	Settings       workspaceSettingsView `json:"settings"`
	UsageLimits    json.RawMessage       `json:"usage_limits"`
	RateLimits     json.RawMessage       `json:"rate_limits"`
	CreatedAt      time.Time             `json:"created_at"`
	UpdatedAt      time.Time             `json:"last_updated_at"`
}

func viewWorkspace(ws *tenancy.Workspace, org tenancy.OrgSettings) workspaceView {
	members, managers := ws.Settings.Analytics(org)
	return workspaceView{
		Object: "workspace", ID: ws.ID, Slug: ws.Slug, Name: ws.Name, Description: ws.Description,
		OrganisationID: ws.OrganisationID, IsDefault: ws.IsDefault,
		Settings: workspaceSettingsView{
			MembersViewAnalytics: members, ManagersViewAnalytics: managers, MaxUserAPIKeys: ws.Settings.MaxUserAPIKeys,
			DefaultUserAPIKeyExpiryDays: ws.Settings.DefaultUserAPIKeyExpiryDays, MaxUserAPIKeyExpiryDays: ws.Settings.MaxUserAPIKeyExpiryDays,
		},
		UsageLimits: jsonOrNull(ws.UsageLimits), RateLimits: jsonOrNull(ws.RateLimits), CreatedAt: ws.CreatedAt, UpdatedAt: ws.UpdatedAt,
	}
}

func jsonOrNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

func (a *API) orgSettings(ctx context.Context, orgID string) (tenancy.OrgSettings, error) {
	o, err := a.d.Tenancy.Organisation(ctx, orgID)
	if err != nil {
		return tenancy.OrgSettings{}, err
	}
	return o.Settings, nil
}

// applyWorkspaceInput validates in and copies it onto ws.
func applyWorkspaceInput(ws *tenancy.Workspace, in *workspaceInput) error {
	if in.Name != nil {
		n, err := validName(*in.Name)
		if err != nil {
			return err
		}
		ws.Name = n
	}
	if in.Slug != nil {
		if !slugPattern.MatchString(*in.Slug) {
			return httpx.BadRequest("invalid_value", "slug", "slug: lowercase letters, digits and dashes, at most 255 characters")
		}
		ws.Slug = *in.Slug
	}
	if in.Description != nil {
		if len(*in.Description) > 1000 {
			return httpx.BadRequest("invalid_value", "description", "description: at most 1000 characters")
		}
		ws.Description = *in.Description
	}
	if in.Settings != nil {
		if err := in.Settings.applyTo(&ws.Settings); err != nil {
			return err
		}
	}
	var err error
	if in.UsageLimits != nil {
		if ws.UsageLimits, err = validUsageLimits(in.UsageLimits, "usage_limits"); err != nil {
			return err
		}
	}
	if in.RateLimits != nil {
		if ws.RateLimits, err = validRateLimits(in.RateLimits, "rate_limits"); err != nil {
			return err
		}
	}
	return nil
}

func (a *API) createWorkspace(w http.ResponseWriter, r *http.Request) error {
	act := actorFrom(r)
	var in workspaceInput
	if err := decodeBody(w, r, &in); err != nil {
		return err
	}
	if in.Name == nil {
		return httpx.BadRequest("missing_required", "name", "name: is required")
	}
	ws := &tenancy.Workspace{OrganisationID: act.p.OrganisationID}
	if in.Slug == nil {
		ws.Slug = newSlug(*in.Name)
	}
	if err := applyWorkspaceInput(ws, &in); err != nil {
		return err
	}
	org, err := a.orgSettings(r.Context(), act.p.OrganisationID)
	if err != nil {
		return err
	}
	if err := a.d.Tenancy.InsertWorkspace(r.Context(), ws); err != nil {
		return err
	}
	noteResource(r, ws.ID, ws.ID)
	httpx.WriteJSON(w, http.StatusOK, viewWorkspace(ws, org))
	return nil
}

// lookupWorkspace returns the workspace of the path's {id} (id or slug):
// 404 for a workspace key other than the workspace's own.
func (a *API) lookupWorkspace(r *http.Request) (*tenancy.Workspace, *actor, error) {
	act := actorFrom(r)
	ws, err := a.d.Tenancy.Workspace(r.Context(), act.p.OrganisationID, r.PathValue("id"))
	if err != nil {
		return nil, nil, err
	}
	if !act.sees(ws.ID) {
		return nil, nil, httpx.NotFound("workspace " + quote(r.PathValue("id")) + " not found")
	}
	return ws, act, nil
}

func (a *API) getWorkspace(w http.ResponseWriter, r *http.Request) error {
	ws, act, err := a.lookupWorkspace(r)
	if err != nil {
		return err
	}
	org, err := a.orgSettings(r.Context(), act.p.OrganisationID)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, viewWorkspace(ws, org))
	return nil
}

func (a *API) listWorkspaces(w http.ResponseWriter, r *http.Request) error {
	act := actorFrom(r)
	pg, size, err := page(r)
	if err != nil {
		return err
	}
	only := ""
	if !act.p.IsOrganisationKey() {
		only = act.p.WorkspaceID
	}
	wss, total, err := a.d.Tenancy.ListWorkspaces(r.Context(), act.p.OrganisationID, only, pg, size)
	if err != nil {
		return err
	}
	org, err := a.orgSettings(r.Context(), act.p.OrganisationID)
	if err != nil {
		return err
	}
	out := list[workspaceView]{Object: "list", Total: total, Data: make([]workspaceView, 0, len(wss))}
	for _, ws := range wss {
		out.Data = append(out.Data, viewWorkspace(ws, org))
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) updateWorkspace(w http.ResponseWriter, r *http.Request) error {
	ws, act, err := a.lookupWorkspace(r)
	if err != nil {
		return err
	}
	var in workspaceInput
	if err := decodeBody(w, r, &in); err != nil {
		return err
	}
	if err := applyWorkspaceInput(ws, &in); err != nil {
		return err
	}
	org, err := a.orgSettings(r.Context(), act.p.OrganisationID)
	if err != nil {
		return err
	}
	if err := a.d.Tenancy.UpdateWorkspace(r.Context(), ws); err != nil {
		return err
	}
	noteResource(r, ws.ID, ws.ID)
	httpx.WriteJSON(w, http.StatusOK, viewWorkspace(ws, org))
	return nil
}

// deleteWorkspace deletes a workspace with its members, API keys and
// virtual keys, and drops them from the data plane's caches.
func (a *API) deleteWorkspace(w http.ResponseWriter, r *http.Request) error {
	ws, act, err := a.lookupWorkspace(r)
	if err != nil {
		return err
	}
	if ws.IsDefault {
		return httpx.Conflict("the default workspace cannot be deleted")
	}
	var vks []string
	if a.d.VirtualKeys != nil && a.d.Invalidate != nil {
		for pg := 0; ; pg++ {
			keys, _, err := a.d.VirtualKeys.ListVirtualKeys(r.Context(), act.p.OrganisationID, ws.ID, pg, 1000)
			if err != nil {
				return err
			}
			for _, vk := range keys {
				vks = append(vks, vk.Slug, vk.ID)
			}
			if len(keys) < 1000 {
				break
			}
		}
	}
	if _, err := a.d.Tenancy.DeleteWorkspace(r.Context(), act.p.OrganisationID, ws.ID); err != nil {
		return err
	}
	for _, k := range vks {
		a.d.Invalidate.Invalidate(act.p.OrganisationID, k)
	}
	a.d.Authenticator.Invalidate()
	noteResource(r, ws.ID, ws.ID)
	httpx.WriteJSON(w, http.StatusOK, deleted{ID: ws.ID, Object: "workspace", Deleted: true})
	return nil
}

// memberView is a workspace member (API.md §6 /admin/workspaces/{id}/users).
type memberView struct {
	Object string `json:"object"`
	ID     string `json:"id"`
	*tenancy.Member
}

func viewMember(m *tenancy.Member) memberView {
	return memberView{Object: "workspace-member", ID: m.UserID, Member: m}
}

// addMembers adds users to a workspace: {"users": [{"id": …, "role": …}]}
// (user_id is accepted for id). Every entry is checked before any is added.
func (a *API) addMembers(w http.ResponseWriter, r *http.Request) error {
	ws, act, err := a.lookupWorkspace(r)
	if err != nil {
		return err
	}
	var in struct {
		Users []struct {
			ID     string `json:"id"`
			UserID string `json:"user_id"`
			Role   string `json:"role"`
		} `json:"users"`
	}
	if err := decodeBody(w, r, &in); err != nil {
		return err
	}
	if len(in.Users) == 0 || len(in.Users) > 1000 {
		return httpx.BadRequest("invalid_value", "users", "users: between 1 and 1000 entries")
	}
	seen := map[string]bool{}
	for i, u := range in.Users {
		id := u.ID
		if id == "" {
			id = u.UserID
		}
		param := "users[" + itoa(i) + "]"
		if id == "" {
			return httpx.BadRequest("missing_required", param+".id", "%s.id: is required", param)
		}
		if !tenancy.ValidWorkspaceRole(u.Role) {
			return httpx.BadRequest("invalid_value", param+".role", "%s.role: must be manager or member, got %q", param, u.Role)
		}
		if seen[id] {
			return httpx.BadRequest("invalid_value", param+".id", "%s.id: user %q is listed twice", param, id)
		}
		seen[id] = true
		if _, err := a.d.Tenancy.User(r.Context(), act.p.OrganisationID, id); errors.Is(err, httpx.ErrNotFound) {
			return httpx.BadRequest("invalid_value", param+".id", "%s.id: no user %q in the organisation", param, id)
		} else if err != nil {
			return err
		}
		if _, err := a.d.Tenancy.Member(r.Context(), ws.ID, id); err == nil {
			return httpx.Conflict("user " + quote(id) + " is already a member of the workspace")
		} else if !errors.Is(err, httpx.ErrNotFound) {
			return err
		}
		in.Users[i].ID = id
	}
	out := list[memberView]{Object: "list", Data: make([]memberView, 0, len(in.Users))}
	for _, u := range in.Users {
		m, err := a.d.Tenancy.AddMember(r.Context(), ws.ID, u.ID, u.Role)
		if err != nil {
			return err
		}
		out.Data = append(out.Data, viewMember(m))
	}
	out.Total = len(out.Data)
	noteResource(r, ws.ID, ws.ID)
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) listMembers(w http.ResponseWriter, r *http.Request) error {
	ws, _, err := a.lookupWorkspace(r)
	if err != nil {
		return err
	}
	pg, size, err := page(r)
	if err != nil {
		return err
	}
	ms, total, err := a.d.Tenancy.ListMembers(r.Context(), ws.ID, pg, size)
	if err != nil {
		return err
	}
	return writeList(w, total, ms, viewMember)
}

func (a *API) getMember(w http.ResponseWriter, r *http.Request) error {
	ws, _, err := a.lookupWorkspace(r)
	if err != nil {
		return err
	}
	m, err := a.d.Tenancy.Member(r.Context(), ws.ID, r.PathValue("user_id"))
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, viewMember(m))
	return nil
}

func (a *API) updateMember(w http.ResponseWriter, r *http.Request) error {
	ws, _, err := a.lookupWorkspace(r)
	if err != nil {
		return err
	}
	var in struct {
		Role string `json:"role"`
	}
	if err := decodeBody(w, r, &in); err != nil {
		return err
	}
	if !tenancy.ValidWorkspaceRole(in.Role) {
		return httpx.BadRequest("invalid_value", "role", "role: must be manager or member, got %q", in.Role)
	}
	m, err := a.d.Tenancy.UpdateMemberRole(r.Context(), ws.ID, r.PathValue("user_id"), in.Role)
	if err != nil {
		return err
	}
	noteResource(r, m.UserID, ws.ID)
	httpx.WriteJSON(w, http.StatusOK, viewMember(m))
	return nil
}

// removeMember ends a membership; the user's API keys of the workspace go
// with it (store.RemoveMember), so the key cache is dropped.
func (a *API) removeMember(w http.ResponseWriter, r *http.Request) error {
	ws, _, err := a.lookupWorkspace(r)
	if err != nil {
		return err
	}
	m, err := a.d.Tenancy.RemoveMember(r.Context(), ws.ID, r.PathValue("user_id"))
	if err != nil {
		return err
	}
	a.d.Authenticator.Invalidate()
	noteResource(r, m.UserID, ws.ID)
	httpx.WriteJSON(w, http.StatusOK, deleted{ID: m.UserID, Object: "workspace-member", Deleted: true})
	return nil
}
