package admin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/ai-gateway/gateway/internal/auth"
	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/tenancy"
)

// APIKeyStore persists gateway API keys.
type APIKeyStore interface {
	CreateAPIKey(ctx context.Context, k *auth.APIKey) error
	APIKey(ctx context.Context, organisationID, id string) (*auth.APIKey, error)
	ListAPIKeys(ctx context.Context, f auth.APIKeyFilter) ([]*auth.APIKey, int, error)
	UpdateAPIKey(ctx context.Context, k *auth.APIKey) error
	DeleteAPIKey(ctx context.Context, organisationID, id string) (*auth.APIKey, error)
	RotateAPIKey(ctx context.Context, organisationID, id, hash, mask string, oldValidUntil *time.Time) (*auth.APIKey, error)
	CountUserAPIKeys(ctx context.Context, workspaceID, userID string) (int, error)
}

// maxTransition bounds key_transition_period_ms (API.md §2).
const maxTransition = 7 * 24 * time.Hour

func (a *API) registerAPIKeys(mux *http.ServeMux, h func(httpx.HandlerFunc) http.Handler) {
	mux.Handle("POST /v1/api-keys/{type}/{subtype}", h(a.createAPIKey))
	mux.Handle("GET /v1/api-keys", h(a.listAPIKeys))
	mux.Handle("GET /v1/api-keys/{id}", h(a.getAPIKey))
	mux.Handle("PUT /v1/api-keys/{id}", h(a.updateAPIKey))
	mux.Handle("DELETE /v1/api-keys/{id}", h(a.deleteAPIKey))
	mux.Handle("POST /v1/api-keys/{id}/rotate", h(a.rotateAPIKey))
}

// apiKeyInput is the body of POST and PUT /v1/api-keys (API.md §6).
type apiKeyInput struct {
	Name        *string         `json:"name"`
	Description *string         `json:"description"`
	Scopes      []string        `json:"scopes"`
	WorkspaceID *string         `json:"workspace_id"`
	UserID      *string         `json:"user_id"`
	RateLimits  json.RawMessage `json:"rate_limits"`
	UsageLimits json.RawMessage `json:"usage_limits"`
	Defaults    json.RawMessage `json:"defaults"`
	AlertEmails []string        `json:"alert_emails"`
	ExpiresAt   json.RawMessage `json:"expires_at"`
}

// apiKeyView is an API key as the endpoints answer. Key holds the raw key
// only in the answers to create and rotate; otherwise the masked key, and
// nothing at all for another user's key (SPEC.md: "The API key list does
// not return the raw keys of other users' keys").
type apiKeyView struct {
	Object                 string          `json:"object"`
	ID                     string          `json:"id"`
	OrganisationID         string          `json:"organisation_id"`
	WorkspaceID            *string         `json:"workspace_id"`
	UserID                 *string         `json:"user_id"`
	Name                   string          `json:"name"`
	Description            string          `json:"description"`
	Type                   string          `json:"type"`
	SubType                string          `json:"sub_type"`
	Key                    string          `json:"key,omitempty"`
	Scopes                 []string        `json:"scopes"`
	Status                 string          `json:"status"`
	RateLimits             json.RawMessage `json:"rate_limits"`
	UsageLimits            json.RawMessage `json:"usage_limits"`
	Defaults               json.RawMessage `json:"defaults"`
	AlertEmails            []string        `json:"alert_emails"`
	ExpiresAt              *time.Time      `json:"expires_at"`
	KeyTransitionExpiresAt *time.Time      `json:"key_transition_expires_at,omitempty"`
	CreatedAt              time.Time       `json:"created_at"`
	UpdatedAt              time.Time       `json:"last_updated_at"`
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// viewKey shows k to act; key is what the key field says (raw, masked or
// "").
func viewKey(k *auth.APIKey, key string) apiKeyView {
	v := apiKeyView{
		Object: "api-key", ID: k.ID, OrganisationID: k.OrganisationID, WorkspaceID: nullable(k.WorkspaceID),
		UserID: nullable(k.UserID), Name: k.Name, Description: k.Description, Type: k.Type, SubType: k.Subtype,
		Key: key, Scopes: k.Scopes, Status: k.Status, RateLimits: jsonOrNull(k.RateLimits),
		UsageLimits: jsonOrNull(k.UsageLimits), Defaults: jsonOrNull(k.Defaults), AlertEmails: k.AlertEmails,
		ExpiresAt: k.ExpiresAt, CreatedAt: k.CreatedAt, UpdatedAt: k.UpdatedAt,
	}
	if v.Scopes == nil {
		v.Scopes = []string{}
	}
	if v.AlertEmails == nil {
		v.AlertEmails = []string{}
	}
	return v
}

// shownKey is what a listing shows act of k's key: the mask of its own key
// and, to managers and admins, of service keys; nothing of another user's.
func shownKey(act *actor, k *auth.APIKey) string {
	switch {
	case k.ID == act.p.APIKeyID, k.UserID != "" && k.UserID == act.p.UserID:
		return k.Mask
	case k.UserID == "" && act.role >= roleManager:
		return k.Mask
	}
	return ""
}

// keyRole is the role a key of type typ would act with for user u (nil: a
// service key) in workspace ws; roleNone when u may not hold such a key.
func (a *API) keyRole(ctx context.Context, typ string, u *tenancy.User, ws string) (role, error) {
	switch {
	case u == nil && typ == auth.KeyTypeOrganisation:
		return roleAdmin, nil
	case u == nil:
		return roleManager, nil
	case typ == auth.KeyTypeOrganisation:
		if tenancy.IsOrgAdmin(u.Role) {
			return roleAdmin, nil
		}
		return roleNone, nil
	case tenancy.IsOrgAdmin(u.Role):
		return roleManager, nil
	}
	m, err := a.d.Tenancy.Member(ctx, ws, u.ID)
	if errors.Is(err, httpx.ErrNotFound) {
		return roleNone, nil
	}
	if err != nil {
		return roleNone, err
	}
	if m.Role == tenancy.WorkspaceRoleManager {
		return roleManager, nil
	}
	return roleMember, nil
}

// validScopes checks requested scopes against what a key of kind and role
// may hold and what the caller holds (a key cannot grant more than it
// has), in either spelling of the deployment scopes. No scopes means every
// scope allowed (API.md §2), narrowed to the caller's.
func validScopes(act *actor, requested []string, kind keyKinds, r role) ([]string, error) {
	if len(requested) == 0 {
		var out []string
		for _, s := range scopesFor(kind, r) {
			if act.p.Can(s) {
				out = append(out, s)
			}
		}
		return out, nil
	}
	out := make([]string, 0, len(requested))
	for i, s := range requested {
		param := "scopes[" + itoa(i) + "]"
		if !auth.KnownScope(s) {
			return nil, httpx.BadRequest("invalid_value", param, "%s: unknown scope %q", param, s)
		}
		s = auth.NormalizeScope(s)
		if !allows(s, kind, r) {
			return nil, httpx.BadRequest("scope_not_allowed", param, "%s: a key of this kind and role cannot hold %q", param, s)
		}
		if !act.p.Can(s) {
			return nil, httpx.Forbidden("scope_not_held", "cannot grant the scope "+s+", which the calling key does not hold")
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out, nil
}

// createAPIKey creates a key: POST /v1/api-keys/{organisation|workspace}/
// {service|user}. SPEC.md's first table: owners and admins create admin
// (organisation) keys and workspace keys for any workspace; a workspace
// manager creates workspace keys for the managed workspace only, also for
// another member (user_id); a member creates none (the RBAC table already
// stops members: api_keys.create needs a manager).
func (a *API) createAPIKey(w http.ResponseWriter, r *http.Request) error {
	act := actorFrom(r)
	ctx := r.Context()
	typ, sub := r.PathValue("type"), r.PathValue("subtype")
	if typ != auth.KeyTypeOrganisation && typ != auth.KeyTypeWorkspace {
		return httpx.NotFound("no route for " + r.Method + " " + r.URL.Path + ": the key type is organisation or workspace")
	}
	if sub != auth.KeySubtypeService && sub != auth.KeySubtypeUser {
		return httpx.NotFound("no route for " + r.Method + " " + r.URL.Path + ": the key sub-type is service or user")
	}
	var in apiKeyInput
	if err := decodeBody(w, r, &in); err != nil {
		return err
	}
	if in.Name == nil {
		return httpx.BadRequest("missing_required", "name", "name: is required")
	}
	now := a.now().UTC()
	k := &auth.APIKey{OrganisationID: act.p.OrganisationID, Type: typ, Subtype: sub, Status: auth.StatusActive}
	switch typ {
	case auth.KeyTypeOrganisation:
		if !act.p.IsOrganisationKey() || act.role < roleAdmin {
			return httpx.Forbidden("role_not_allowed", "only organisation owners and admins (with an admin key) create admin API keys")
		}
		if in.WorkspaceID != nil && *in.WorkspaceID != "" {
			return httpx.BadRequest("invalid_value", "workspace_id", "workspace_id: an organisation key belongs to no workspace")
		}
	case auth.KeyTypeWorkspace:
		// The control wrapper resolved workspace_id (or the header) and
		// kept a workspace key to its own workspace.
		k.WorkspaceID = act.p.WorkspaceID
	}
	var owner *tenancy.User
	switch sub {
	case auth.KeySubtypeService:
		if in.UserID != nil && *in.UserID != "" {
			return httpx.BadRequest("invalid_value", "user_id", "user_id: a service key belongs to no user")
		}
	case auth.KeySubtypeUser:
		uid := act.p.UserID
		if in.UserID != nil && *in.UserID != "" {
			uid = *in.UserID
		}
		if uid == "" {
			return httpx.BadRequest("missing_required", "user_id", "user_id: is required when a service key creates a user key")
		}
		u, err := a.d.Tenancy.User(ctx, act.p.OrganisationID, uid)
		if errors.Is(err, httpx.ErrNotFound) {
			return httpx.BadRequest("invalid_value", "user_id", "user_id: no user %q in the organisation", uid)
		}
		if err != nil {
			return err
		}
		owner, k.UserID = u, u.ID
	}
	keyRole, err := a.keyRole(ctx, typ, owner, k.WorkspaceID)
	if err != nil {
		return err
	}
	if keyRole == roleNone {
		if typ == auth.KeyTypeOrganisation {
			return httpx.BadRequest("invalid_value", "user_id", "user_id: an organisation user key belongs to an owner or admin")
		}
		return httpx.BadRequest("invalid_value", "user_id", "user_id: the user is not a member of the workspace")
	}
	kind := wsKeys
	if typ == auth.KeyTypeOrganisation {
		kind = orgKeys
	}
	if k.Scopes, err = validScopes(act, in.Scopes, kind, keyRole); err != nil {
		return err
	}
	if err := a.applyKeyInput(k, &in, now); err != nil {
		return err
	}
	if err := a.workspaceKeyRules(ctx, k, in.ExpiresAt == nil, now, true); err != nil {
		return err
	}
	raw := auth.GenerateKey()
	k.Hash, k.Mask = auth.HashKey(raw), auth.MaskKey(raw)
	k.CreatedAt, k.UpdatedAt = now.Truncate(time.Microsecond), now.Truncate(time.Microsecond)
	if err := a.d.APIKeys.CreateAPIKey(ctx, k); err != nil {
		return err
	}
	noteResource(r, k.ID, k.WorkspaceID)
	httpx.WriteJSON(w, http.StatusOK, viewKey(k, raw))
	return nil
}

// applyKeyInput validates the mutable fields of in and copies them onto k.
func (a *API) applyKeyInput(k *auth.APIKey, in *apiKeyInput, now time.Time) error {
	if in.Name != nil {
		n, err := validName(*in.Name)
		if err != nil {
			return err
		}
		k.Name = n
	}
	if in.Description != nil {
		if len(*in.Description) > 1000 {
			return httpx.BadRequest("invalid_value", "description", "description: at most 1000 characters")
		}
		k.Description = *in.Description
	}
	var err error
	if in.RateLimits != nil {
		if k.RateLimits, err = validRateLimits(in.RateLimits, "rate_limits"); err != nil {
			return err
		}
	}
	if in.UsageLimits != nil {
		if k.UsageLimits, err = validUsageLimits(in.UsageLimits, "usage_limits"); err != nil {
			return err
		}
	}
	if in.Defaults != nil {
		if k.Defaults, err = validDefaults(in.Defaults); err != nil {
			return err
		}
	}
	if in.AlertEmails != nil {
		if k.AlertEmails, err = validEmails(in.AlertEmails); err != nil {
			return err
		}
	}
	exp, set, err := parseExpiry(in.ExpiresAt, now)
	if err != nil {
		return err
	}
	if set {
		k.ExpiresAt = exp
	}
	return nil
}

// workspaceKeyRules applies the workspace's settings to a user key of a
// workspace (SPEC.md "Limits"): the default expiry when none was given
// (noExpiry, on create), the maximum expiry, and, on create, the maximum
// number of user keys per user.
func (a *API) workspaceKeyRules(ctx context.Context, k *auth.APIKey, noExpiry bool, now time.Time, creating bool) error {
	if k.Type != auth.KeyTypeWorkspace || k.Subtype != auth.KeySubtypeUser {
		return nil
	}
	ws, err := a.d.Tenancy.Workspace(ctx, k.OrganisationID, k.WorkspaceID)
	if err != nil {
		return err
	}
	s := ws.Settings
	day := 24 * time.Hour
	if creating && noExpiry && s.DefaultUserAPIKeyExpiryDays != nil {
		t := now.Add(time.Duration(*s.DefaultUserAPIKeyExpiryDays) * day).Truncate(time.Microsecond)
		k.ExpiresAt = &t
	}
	if m := s.MaxUserAPIKeyExpiryDays; m != nil {
		limit := now.Add(time.Duration(*m) * day)
		switch {
		case k.ExpiresAt == nil && creating:
			k.ExpiresAt = &limit
		case k.ExpiresAt == nil:
			return httpx.BadRequest("invalid_value", "expires_at", "expires_at: user keys of this workspace must expire within %d days", *m)
		case k.ExpiresAt.After(limit):
			return httpx.BadRequest("invalid_value", "expires_at", "expires_at: user keys of this workspace must expire within %d days", *m)
		}
	}
	if creating && s.MaxUserAPIKeys != nil {
		n, err := a.d.APIKeys.CountUserAPIKeys(ctx, k.WorkspaceID, k.UserID)
		if err != nil {
			return err
		}
		if n >= *s.MaxUserAPIKeys {
			return httpx.BadRequest("user_api_key_limit", "", "the user already holds %d API keys in this workspace, its maximum", n)
		}
	}
	return nil
}

// lookupAPIKey returns the key of the path's {id}: 404 for a workspace key
// asking about another workspace's (or an organisation) key.
func (a *API) lookupAPIKey(r *http.Request) (*auth.APIKey, *actor, error) {
	act := actorFrom(r)
	k, err := a.d.APIKeys.APIKey(r.Context(), act.p.OrganisationID, r.PathValue("id"))
	if err != nil {
		return nil, nil, err
	}
	if !act.p.IsOrganisationKey() && k.WorkspaceID != act.p.WorkspaceID {
		return nil, nil, httpx.NotFound("api key " + quote(r.PathValue("id")) + " not found")
	}
	return k, act, nil
}

func (a *API) getAPIKey(w http.ResponseWriter, r *http.Request) error {
	k, act, err := a.lookupAPIKey(r)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, viewKey(k, shownKey(act, k)))
	return nil
}

// listAPIKeys lists keys: a workspace key sees its workspace's; an
// organisation key all, or the named workspace's. Filters: ?type=,
// ?user_id=, ?status=.
func (a *API) listAPIKeys(w http.ResponseWriter, r *http.Request) error {
	act := actorFrom(r)
	pg, size, err := page(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := auth.APIKeyFilter{
		OrganisationID: act.p.OrganisationID, WorkspaceID: act.listWorkspace(), UserID: q.Get("user_id"),
		Type: q.Get("type"), Status: q.Get("status"), Page: pg, PageSize: size,
	}
	if !act.p.IsOrganisationKey() {
		f.Type = auth.KeyTypeWorkspace
		if t := q.Get("type"); t != "" && t != auth.KeyTypeWorkspace {
			f.Type = "none" // a workspace key sees no organisation keys
		}
	}
	keys, total, err := a.d.APIKeys.ListAPIKeys(r.Context(), f)
	if err != nil {
		return err
	}
	out := list[apiKeyView]{Object: "list", Total: total, Data: make([]apiKeyView, 0, len(keys))}
	for _, k := range keys {
		out.Data = append(out.Data, viewKey(k, shownKey(act, k)))
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// canManage applies SPEC.md's first table to changes of an existing key: an
// organisation key is managed only with an admin key; a workspace key by
// its workspace's managers (the RBAC table made sure of manager).
func canManage(act *actor, k *auth.APIKey) error {
	if k.Type == auth.KeyTypeOrganisation && (!act.p.IsOrganisationKey() || act.role < roleAdmin) {
		return httpx.Forbidden("role_not_allowed", "only organisation owners and admins manage admin API keys")
	}
	return nil
}

func (a *API) updateAPIKey(w http.ResponseWriter, r *http.Request) error {
	k, act, err := a.lookupAPIKey(r)
	if err != nil {
		return err
	}
	if err := canManage(act, k); err != nil {
		return err
	}
	var in apiKeyInput
	if err := decodeBody(w, r, &in); err != nil {
		return err
	}
	if in.WorkspaceID != nil && *in.WorkspaceID != k.WorkspaceID && act.p.WorkspaceID != k.WorkspaceID {
		return httpx.BadRequest("invalid_value", "workspace_id", "workspace_id: cannot be changed")
	}
	if in.UserID != nil && *in.UserID != k.UserID {
		return httpx.BadRequest("invalid_value", "user_id", "user_id: cannot be changed")
	}
	ctx := r.Context()
	now := a.now().UTC()
	if in.Scopes != nil {
		var owner *tenancy.User
		if k.UserID != "" {
			if owner, err = a.d.Tenancy.User(ctx, k.OrganisationID, k.UserID); err != nil {
				return err
			}
		}
		keyRole, err := a.keyRole(ctx, k.Type, owner, k.WorkspaceID)
		if err != nil {
			return err
		}
		kind := wsKeys
		if k.Type == auth.KeyTypeOrganisation {
			kind = orgKeys
		}
		if k.Scopes, err = validScopes(act, in.Scopes, kind, keyRole); err != nil {
			return err
		}
	}
	if err := a.applyKeyInput(k, &in, now); err != nil {
		return err
	}
	if err := a.workspaceKeyRules(ctx, k, false, now, false); err != nil {
		return err
	}
	// A new expiry in the future revives an expired key.
	if k.Status == auth.StatusExpired && in.ExpiresAt != nil && (k.ExpiresAt == nil || k.ExpiresAt.After(now)) {
		k.Status = auth.StatusActive
	}
	if err := a.d.APIKeys.UpdateAPIKey(ctx, k); err != nil {
		return err
	}
	a.d.Authenticator.Invalidate()
	noteResource(r, k.ID, k.WorkspaceID)
	httpx.WriteJSON(w, http.StatusOK, viewKey(k, shownKey(act, k)))
	return nil
}

func (a *API) deleteAPIKey(w http.ResponseWriter, r *http.Request) error {
	k, act, err := a.lookupAPIKey(r)
	if err != nil {
		return err
	}
	if err := canManage(act, k); err != nil {
		return err
	}
	if _, err := a.d.APIKeys.DeleteAPIKey(r.Context(), k.OrganisationID, k.ID); err != nil {
		return err
	}
	a.d.Authenticator.Invalidate()
	noteResource(r, k.ID, k.WorkspaceID)
	httpx.WriteJSON(w, http.StatusOK, deleted{ID: k.ID, Object: "api-key", Deleted: true})
	return nil
}

// rotateAPIKey gives a key a new secret (API.md §2 "Expiry and rotation"):
// {"key_transition_period_ms": N}, default 0, at most 7 days, during which
// the old secret still works. The answer holds the new raw key and
// key_transition_expires_at.
func (a *API) rotateAPIKey(w http.ResponseWriter, r *http.Request) error {
	k, act, err := a.lookupAPIKey(r)
	if err != nil {
		return err
	}
	if err := canManage(act, k); err != nil {
		return err
	}
	var in struct {
		TransitionMS *int64 `json:"key_transition_period_ms"`
	}
	body, err := httpx.ReadBody(w, r, 1<<20)
	if err != nil {
		return err
	}
	if strings.TrimSpace(string(body)) != "" {
		if err := httpx.DecodeStrict(body, &in); err != nil {
			return err
		}
	}
	var period time.Duration
	if in.TransitionMS != nil {
		if *in.TransitionMS < 0 || *in.TransitionMS > maxTransition.Milliseconds() {
			return httpx.BadRequest("invalid_value", "key_transition_period_ms", "key_transition_period_ms: must be between 0 and %d (7 days)", maxTransition.Milliseconds())
		}
		period = time.Duration(*in.TransitionMS) * time.Millisecond
	}
	if k.Status != auth.StatusActive {
		return httpx.BadRequest("invalid_state", "", "only an active key can be rotated; this one is %s", k.Status)
	}
	now := a.now().UTC().Truncate(time.Microsecond)
	until := now.Add(period)
	var old *time.Time
	if period > 0 {
		old = &until
	}
	raw := auth.GenerateKey()
	rotated, err := a.d.APIKeys.RotateAPIKey(r.Context(), k.OrganisationID, k.ID, auth.HashKey(raw), auth.MaskKey(raw), old)
	if err != nil {
		return err
	}
	a.d.Authenticator.Invalidate()
	noteResource(r, k.ID, k.WorkspaceID)
	v := viewKey(rotated, raw)
	v.KeyTransitionExpiresAt = &until
	httpx.WriteJSON(w, http.StatusOK, v)
	return nil
}
