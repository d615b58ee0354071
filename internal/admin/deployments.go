package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/registry"
	"github.com/ai-gateway/gateway/internal/routing"
	"github.com/ai-gateway/gateway/internal/secret"
)

// Scopes of the deployment routes (API.md §2; SPEC.md spells them
// deployments:create etc., which auth.NormalizeScope maps to these).
const (
	ScopeDeploymentsCreate = "deployments.create"
	ScopeDeploymentsRead   = "deployments.read"
	ScopeDeploymentsUpdate = "deployments.update"
	ScopeDeploymentsDelete = "deployments.delete"
	ScopeDeploymentsList   = "deployments.list"
)

// DeploymentStore persists gateway deployments.
type DeploymentStore interface {
	CreateDeployment(ctx context.Context, d *registry.Deployment) error
	Deployment(ctx context.Context, organisationID, slugOrID string) (*registry.Deployment, error)
	ListDeployments(ctx context.Context, organisationID string, f registry.DeploymentFilter, page, pageSize int) ([]*registry.Deployment, int, error)
	UpdateDeployment(ctx context.Context, d *registry.Deployment) error
	DeleteDeployment(ctx context.Context, organisationID, slugOrID string) (*registry.Deployment, error)
}

// registerDeployments mounts /v1/deployments (API.md §6 "Deployments"):
//
//	POST   /v1/deployments          create; slug derived from the name when absent
//	GET    /v1/deployments          list (?type=production|non-production)
//	GET    /v1/deployments/{slug}   one deployment (slug or id)
//	PUT    /v1/deployments/{slug}   update the fields sent
//	DELETE /v1/deployments/{slug}   delete
//
// Deployments belong to the organisation: the control wrapper lets only
// admin keys write (rbac.go). A workspace key sees the deployments that
// serve its workspace.
//
// config is a saved config's slug or id (stored as its slug) or an inline
// config object, validated like a saved config (AB01) and sealed at rest
// like one; answers mask its credentials. limits holds rate_limits and
// usage_limits, validated like everywhere else; a process serving the
// deployment enforces its rate_limits.
func (a *API) registerDeployments(mux *http.ServeMux, h func(httpx.HandlerFunc) http.Handler) {
	mux.Handle("POST /v1/deployments", h(a.createDeployment))
	mux.Handle("GET /v1/deployments", h(a.listDeployments))
	mux.Handle("GET /v1/deployments/{slug}", h(a.getDeployment))
	mux.Handle("PUT /v1/deployments/{slug}", h(a.updateDeployment))
	mux.Handle("DELETE /v1/deployments/{slug}", h(a.deleteDeployment))
}

// maxDescriptionLen bounds a deployment's description.
const maxDescriptionLen = 2048

// maxDeploymentWorkspaces bounds workspace_ids.
const maxDeploymentWorkspaces = 1000

// deploymentInput is the body of POST and PUT /v1/deployments. Absent
// fields keep their value on PUT; a null config, workspace_ids or limits
// clears it.
type deploymentInput struct {
	Name        *string         `json:"name"`
	Slug        *string         `json:"slug"`
	Description *string         `json:"description"`
	Type        *string         `json:"type"`
	Config      json.RawMessage `json:"config"`
	// WorkspaceIDs are ids or slugs; stored as ids.
	WorkspaceIDs json.RawMessage `json:"workspace_ids"`
	Limits       json.RawMessage `json:"limits"`
}

// deploymentView is a deployment as every endpoint returns it.
type deploymentView struct {
	Object         string `json:"object"`
	ID             string `json:"id"`
	Slug           string `json:"slug"`
	Name           string `json:"name"`
	Description    string `json:"description"`
	Type           string `json:"type"`
	OrganisationID string `json:"organisation_id"`
	// Config is the saved config's slug, the inline config (credentials
	// masked), or null.
	Config       json.RawMessage           `json:"config"`
	WorkspaceIDs []string                  `json:"workspace_ids"`
	Limits       registry.DeploymentLimits `json:"limits"`
	CreatedAt    time.Time                 `json:"created_at"`
	UpdatedAt    time.Time                 `json:"last_updated_at"`
}

func (a *API) deploymentView(d *registry.Deployment) (deploymentView, error) {
	v := deploymentView{
		Object: "deployment", ID: d.ID, Slug: d.Slug, Name: d.Name, Description: d.Description, Type: d.Type,
		OrganisationID: d.OrganisationID, Config: json.RawMessage("null"), WorkspaceIDs: d.WorkspaceIDs, Limits: d.Limits,
		CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt,
	}
	if v.WorkspaceIDs == nil {
		v.WorkspaceIDs = []string{}
	}
	switch {
	case d.ConfigRef != "":
		b, err := json.Marshal(d.ConfigRef)
		if err != nil {
			return v, err
		}
		v.Config = b
	case d.Config != nil:
		plain, err := OpenDeploymentConfig(a.d.Box, d)
		if err != nil {
			return v, err
		}
		v.Config = maskSecrets(plain)
	}
	return v, nil
}

func (a *API) deploymentStore() (DeploymentStore, error) {
	if a.d.Deployments == nil {
		return nil, httpx.NotFound("deployments are not available")
	}
	return a.d.Deployments, nil
}

func (a *API) createDeployment(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	if err := p.Require(ScopeDeploymentsCreate); err != nil {
		return err
	}
	st, err := a.deploymentStore()
	if err != nil {
		return err
	}
	var in deploymentInput
	if err := decodeBody(w, r, &in); err != nil {
		return err
	}
	if in.Name == nil || strings.TrimSpace(*in.Name) == "" {
		return httpx.BadRequest("missing_required", "name", "name: is required")
	}
	if in.Type == nil {
		return httpx.BadRequest("missing_required", "type", "type: is required (production or non-production)")
	}
	// The id is chosen here so that an inline config is sealed bound to it.
	d := &registry.Deployment{ID: uuid.NewString(), OrganisationID: p.OrganisationID}
	if in.Slug == nil {
		s := deploymentSlug(*in.Name)
		in.Slug = &s
	}
	if err := a.applyDeploymentInput(r.Context(), d, &in, nil); err != nil {
		return err
	}
	if err := st.CreateDeployment(r.Context(), d); err != nil {
		return deploymentConflict(err, d.Slug)
	}
	noteResource(r, d.ID, "")
	return a.writeDeployment(w, d)
}

// applyDeploymentInput validates in and copies what it sets onto d. prev
// is the current inline config, in plain text, for updates (its
// credentials stand behind masked placeholders sent back).
func (a *API) applyDeploymentInput(ctx context.Context, d *registry.Deployment, in *deploymentInput, prev []byte) error {
	if in.Name != nil {
		n := strings.TrimSpace(*in.Name)
		if n == "" || len(n) > maxNameLen {
			return httpx.BadRequest("invalid_value", "name", "name: must be 1 to %d characters", maxNameLen)
		}
		d.Name = n
	}
	if in.Slug != nil {
		if !slugPattern.MatchString(*in.Slug) {
			return httpx.BadRequest("invalid_value", "slug", "slug: lowercase letters, digits and dashes, at most 255 characters")
		}
		d.Slug = *in.Slug
	}
	if in.Description != nil {
		if len(*in.Description) > maxDescriptionLen {
			return httpx.BadRequest("invalid_value", "description", "description: at most %d characters", maxDescriptionLen)
		}
		d.Description = *in.Description
	}
	if in.Type != nil {
		if !registry.ValidDeploymentType(*in.Type) {
			return httpx.BadRequest("invalid_value", "type", "type: must be production or non-production, got %q", *in.Type)
		}
		d.Type = *in.Type
	}
	if len(in.Config) > 0 {
		if err := a.applyDeploymentConfig(ctx, d, in.Config, prev); err != nil {
			return err
		}
	}
	if len(in.WorkspaceIDs) > 0 {
		ids, err := a.deploymentWorkspaces(ctx, d.OrganisationID, in.WorkspaceIDs)
		if err != nil {
			return err
		}
		d.WorkspaceIDs = ids
	}
	if len(in.Limits) > 0 {
		l, err := validDeploymentLimits(in.Limits)
		if err != nil {
			return err
		}
		d.Limits = l
	}
	return nil
}

// applyDeploymentConfig sets d's config from the body's config field:
// null clears it; a string is a saved config's slug or id (or, starting
// with "{", a config as JSON text); an object is an inline config.
func (a *API) applyDeploymentConfig(ctx context.Context, d *registry.Deployment, raw json.RawMessage, prev []byte) error {
	d.ConfigRef, d.Config = "", nil
	if isNull(raw) {
		return nil
	}
	raw = bytes.TrimSpace(raw)
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return httpx.BadRequest(routing.CodeInvalidType, "config", "config: must be a saved config's slug or id, or a config object")
		}
		s = strings.TrimSpace(s)
		if !strings.HasPrefix(s, "{") {
			return a.useSavedConfig(ctx, d, s)
		}
		raw = []byte(s)
	}
	if raw[0] != '{' {
		return httpx.BadRequest(routing.CodeInvalidType, "config", "config: must be a saved config's slug or id, or a config object")
	}
	raw, err := restoreSecrets(raw, prev)
	if err != nil {
		return err
	}
	cfg, err := a.parseConfigBody(raw)
	if err != nil {
		return err
	}
	d.Config = SealDeploymentConfig(a.d.Box, d.ID, cfg)
	return nil
}

// useSavedConfig points d at the saved config named by ref, which must
// exist.
func (a *API) useSavedConfig(ctx context.Context, d *registry.Deployment, ref string) error {
	if ref == "" {
		return httpx.BadRequest(routing.CodeInvalidValue, "config", "config: must not be empty (null removes the config)")
	}
	if a.d.Configs == nil {
		return routing.NotFound(ref, "config")
	}
	c, err := a.d.Configs.Config(ctx, d.OrganisationID, ref)
	if errors.Is(err, httpx.ErrNotFound) {
		return routing.NotFound(ref, "config")
	}
	if err != nil {
		return err
	}
	d.ConfigRef = c.Slug
	return nil
}

// deploymentWorkspaces resolves workspace_ids (ids or slugs, each in the
// organisation) to ids without repeats; null or [] means every workspace.
func (a *API) deploymentWorkspaces(ctx context.Context, orgID string, raw json.RawMessage) ([]string, error) {
	if isNull(raw) {
		return nil, nil
	}
	var names []string
	if err := decodeField(raw, &names, "workspace_ids"); err != nil {
		return nil, err
	}
	if len(names) > maxDeploymentWorkspaces {
		return nil, httpx.BadRequest("invalid_value", "workspace_ids", "workspace_ids: at most %d workspaces", maxDeploymentWorkspaces)
	}
	ids := make([]string, 0, len(names))
	seen := map[string]bool{}
	for i, n := range names {
		param := fmt.Sprintf("workspace_ids[%d]", i)
		if n == "" {
			return nil, httpx.BadRequest("invalid_value", param, "%s: must not be empty", param)
		}
		ws, err := a.d.Tenancy.Workspace(ctx, orgID, n)
		if errors.Is(err, httpx.ErrNotFound) {
			return nil, httpx.BadRequest("unknown_workspace", param, "%s: workspace %q not found in this organisation", param, n)
		}
		if err != nil {
			return nil, err
		}
		if !seen[ws.ID] {
			seen[ws.ID] = true
			ids = append(ids, ws.ID)
		}
	}
	return ids, nil
}

// validDeploymentLimits checks limits strictly: an object with
// rate_limits and usage_limits, each validated as everywhere else; null
// clears both.
func validDeploymentLimits(raw json.RawMessage) (registry.DeploymentLimits, error) {
	var out registry.DeploymentLimits
	if isNull(raw) {
		return out, nil
	}
	var in struct {
		RateLimits  json.RawMessage `json:"rate_limits"`
		UsageLimits json.RawMessage `json:"usage_limits"`
	}
	if err := decodeField(raw, &in, "limits"); err != nil {
		return out, err
	}
	var err error
	if out.RateLimits, err = validRateLimits(in.RateLimits, "limits.rate_limits"); err != nil {
		return out, err
	}
	if out.UsageLimits, err = validUsageLimits(in.UsageLimits, "limits.usage_limits"); err != nil {
		return out, err
	}
	return out, nil
}

// deploymentConflict words a slug conflict for the client.
func deploymentConflict(err error, slug string) error {
	if errors.Is(err, httpx.ErrConflict) {
		return httpx.Conflict(fmt.Sprintf("a deployment with slug %q already exists in this organisation; send another slug", slug))
	}
	return err
}

// lookupDeployment reads the path's deployment after checking scope. A
// workspace key sees only the deployments serving its workspace.
func (a *API) lookupDeployment(r *http.Request, scope string) (DeploymentStore, *registry.Deployment, error) {
	p := principal(r)
	if err := p.Require(scope); err != nil {
		return nil, nil, err
	}
	st, err := a.deploymentStore()
	if err != nil {
		return nil, nil, err
	}
	d, err := st.Deployment(r.Context(), p.OrganisationID, r.PathValue("slug"))
	if err != nil {
		return nil, nil, err
	}
	if !p.IsOrganisationKey() && !d.Serves(p.WorkspaceID) {
		return nil, nil, httpx.NotFound(fmt.Sprintf("deployment %q not found", r.PathValue("slug")))
	}
	return st, d, nil
}

func (a *API) getDeployment(w http.ResponseWriter, r *http.Request) error {
	_, d, err := a.lookupDeployment(r, ScopeDeploymentsRead)
	if err != nil {
		return err
	}
	return a.writeDeployment(w, d)
}

func (a *API) listDeployments(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	if err := p.Require(ScopeDeploymentsList); err != nil {
		return err
	}
	st, err := a.deploymentStore()
	if err != nil {
		return err
	}
	pg, size, err := page(r)
	if err != nil {
		return err
	}
	f := registry.DeploymentFilter{Type: r.URL.Query().Get("type"), WorkspaceID: actorFrom(r).listWorkspace()}
	if f.Type != "" && !registry.ValidDeploymentType(f.Type) {
		return httpx.BadRequest("invalid_value", "type", "type: must be production or non-production, got %q", f.Type)
	}
	ds, total, err := st.ListDeployments(r.Context(), p.OrganisationID, f, pg, size)
	if err != nil {
		return err
	}
	return writeViews(w, total, ds, a.deploymentView)
}

func (a *API) updateDeployment(w http.ResponseWriter, r *http.Request) error {
	st, d, err := a.lookupDeployment(r, ScopeDeploymentsUpdate)
	if err != nil {
		return err
	}
	var in deploymentInput
	if err := decodeBody(w, r, &in); err != nil {
		return err
	}
	var prev []byte
	if d.Config != nil {
		if prev, err = OpenDeploymentConfig(a.d.Box, d); err != nil {
			return httpx.Internal(err)
		}
	}
	if err := a.applyDeploymentInput(r.Context(), d, &in, prev); err != nil {
		return err
	}
	if err := st.UpdateDeployment(r.Context(), d); err != nil {
		return deploymentConflict(err, d.Slug)
	}
	noteResource(r, d.ID, "")
	return a.writeDeployment(w, d)
}

func (a *API) deleteDeployment(w http.ResponseWriter, r *http.Request) error {
	st, d, err := a.lookupDeployment(r, ScopeDeploymentsDelete)
	if err != nil {
		return err
	}
	if _, err := st.DeleteDeployment(r.Context(), d.OrganisationID, d.ID); err != nil {
		return err
	}
	noteResource(r, d.ID, "")
	httpx.WriteJSON(w, http.StatusOK, deleted{ID: d.ID, Object: "deployment", Deleted: true})
	return nil
}

func (a *API) writeDeployment(w http.ResponseWriter, d *registry.Deployment) error {
	v, err := a.deploymentView(d)
	if err != nil {
		return httpx.Internal(err)
	}
	httpx.WriteJSON(w, http.StatusOK, v)
	return nil
}

// deploymentSlug derives a human-readable slug from a name: lowercase
// letters and digits, other runs of characters as one dash, at most 255
// characters; "deployment" when nothing is left. Unlike other slugs it
// has no random suffix, so a second deployment of the same name conflicts
// (409) until it is given a slug of its own.
func deploymentSlug(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if b.Len() >= maxNameLen {
			break
		}
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.Trim(b.String(), "-")
	if s == "" {
		return "deployment"
	}
	return s
}

// deploymentConfigID is what an inline deployment config's seal is bound
// to, distinct from any saved config's id.
func deploymentConfigID(id string) string { return "deployment:" + id }

// SealDeploymentConfig encrypts a deployment's inline config with the
// deployment key, bound to the deployment's id (a nil box keeps it plain).
func SealDeploymentConfig(box *secret.Box, deploymentID string, plain []byte) []byte {
	return SealConfig(box, deploymentConfigID(deploymentID), plain)
}

// OpenDeploymentConfig returns a deployment's inline config JSON,
// decrypting it when sealed; nil when the deployment has none.
func OpenDeploymentConfig(box *secret.Box, d *registry.Deployment) ([]byte, error) {
	if d.Config == nil {
		return nil, nil
	}
	return OpenConfig(box, &routing.StoredConfig{ID: deploymentConfigID(d.ID), Config: d.Config})
}
