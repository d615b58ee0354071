package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/ai-gateway/gateway/internal/auth"
	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/registry"
)

// Integrations and providers (API.md §6 "Integrations, providers").
//
// An integration is an organisation's stored credential for one AI
// provider: name, slug (at most 255 characters; derived from the name when
// absent; it cannot change), description, ai_provider (an adapter's slug),
// key (write-only, sealed with the deployment's key and bound to the
// integration's id, never returned), provider_options (the names of
// API.md §3's config fields: azure_resource_name, aws_region,
// vertex_project_id…; the secret ones, such as aws_secret_access_key, are
// sealed with the key and never returned), custom_host, tags, rate_limits,
// usage_limits and status (active or disabled).
//
// GET and PUT /v1/integrations/{slug}/models hold its model allow-list:
//
//	{"models": [{"slug": "gpt-4o", "enabled": true}, {"slug": "gpt-4o-mini", "enabled": false}]}
//
// An empty list (or null) allows every model; otherwise only the models
// listed with enabled true are allowed, and a request for another model
// through one of its providers is refused with 403 model_not_allowed. PUT
// replaces the whole list; both answer {"object": "list", "total",
// "allow_all_models", "data": [{"slug", "enabled"}]}.
//
// GET and PUT /v1/integrations/{slug}/workspaces hold who may use it:
//
//	{"global": true}                                   every workspace (a new integration's default)
//	{"global": false, "workspaces": [{"id": "ws-a"}]}  only these (ids or slugs)
//
// An entry with "enabled": false is dropped. Both answer {"object":
// "integration_workspaces", "integration_id", "global", "workspaces": [{"id",
// "slug", "name"}]}. A workspace key reads only its own workspace there.
// Unsharing does not delete the workspace's providers; they stop routing
// (403 integration_not_shared) until it is shared again.
//
// A provider is a workspace's named use of an integration: name, slug
// (unique in its workspace, at most 255 characters; it cannot change),
// note, integration_id (the slug or id of an integration shared with the
// provider's workspace; the answer carries the id), tags, rate_limits,
// usage_limits and status. Its workspace is the one the request acts in
// (workspace_id, x-gateway-workspace, the key's own, else the default);
// /v1/providers/{slug} finds a slug in that workspace and an id in any
// the key may see.
//
// Lists take ?tags={"team":"x"}: a JSON object whose every pair must
// match. An integration that providers use cannot be deleted (409).
// usage_limits are validated, stored and returned; they are not enforced
// yet (that needs cost tracking).

// IntegrationStore persists integrations and providers.
type IntegrationStore interface {
	CreateIntegration(ctx context.Context, in *registry.Integration) error
	Integration(ctx context.Context, organisationID, slugOrID string) (*registry.Integration, error)
	ListIntegrations(ctx context.Context, f registry.Filter) ([]*registry.Integration, int, error)
	UpdateIntegration(ctx context.Context, in *registry.Integration) error
	SetIntegrationModels(ctx context.Context, organisationID, id string, models []registry.IntegrationModel) (*registry.Integration, error)
	SetIntegrationAccess(ctx context.Context, organisationID, id string, access registry.WorkspaceAccess) (*registry.Integration, error)
	DeleteIntegration(ctx context.Context, organisationID, slugOrID string) (*registry.Integration, error)

	CreateProvider(ctx context.Context, p *registry.Provider) error
	Provider(ctx context.Context, organisationID, workspaceID, slugOrID string) (*registry.Provider, error)
	ListProviders(ctx context.Context, f registry.Filter) ([]*registry.Provider, int, error)
	UpdateProvider(ctx context.Context, p *registry.Provider) error
	DeleteProvider(ctx context.Context, organisationID, id string) (*registry.Provider, error)
}

// ProviderInvalidator drops the data plane's cached copies of stored
// providers.
type ProviderInvalidator interface {
	// InvalidateProvider drops a provider slug of the organisation.
	InvalidateProvider(organisationID, slug string)
	// InvalidateIntegration drops every provider using the integration.
	InvalidateIntegration(organisationID, integrationID string)
}

func (a *API) registerIntegrations(mux *http.ServeMux, h func(httpx.HandlerFunc) http.Handler) {
	mux.Handle("POST /v1/integrations", h(a.createIntegration))
	mux.Handle("GET /v1/integrations", h(a.listIntegrations))
	mux.Handle("GET /v1/integrations/{slug}", h(a.getIntegration))
	mux.Handle("PUT /v1/integrations/{slug}", h(a.updateIntegration))
	mux.Handle("DELETE /v1/integrations/{slug}", h(a.deleteIntegration))
	mux.Handle("GET /v1/integrations/{slug}/models", h(a.getIntegrationModels))
	mux.Handle("PUT /v1/integrations/{slug}/models", h(a.putIntegrationModels))
	mux.Handle("GET /v1/integrations/{slug}/workspaces", h(a.getIntegrationWorkspaces))
	mux.Handle("PUT /v1/integrations/{slug}/workspaces", h(a.putIntegrationWorkspaces))

	mux.Handle("POST /v1/providers", h(a.createProvider))
	mux.Handle("GET /v1/providers", h(a.listProviders))
	mux.Handle("GET /v1/providers/{slug}", h(a.getProvider))
	mux.Handle("PUT /v1/providers/{slug}", h(a.updateProvider))
	mux.Handle("DELETE /v1/providers/{slug}", h(a.deleteProvider))
}

// integrationOptionNames are the provider options an integration takes
// (API.md §3 "Provider specifics"); auth.SecretOptions says which are
// sealed.
var integrationOptionNames = []string{
	"azure_resource_name", "azure_deployment_id", "azure_api_version",
	"azure_entra_client_id", "azure_entra_client_secret", "azure_entra_tenant_id", "azure_authority_host",
	"aws_access_key_id", "aws_secret_access_key", "aws_session_token", "aws_region",
	"vertex_project_id", "vertex_region", "vertex_service_account_json",
	"anthropic_version", "anthropic_beta",
}

const (
	maxTags      = 64
	maxTagKey    = 128
	maxTagValue  = 255
	maxModels    = 1000
	maxShareList = 1000
)

// integrationInput is the body of POST and PUT /v1/integrations. Pointers
// and raw values tell "absent" from "empty" for PUT.
type integrationInput struct {
	Name            *string            `json:"name"`
	Slug            *string            `json:"slug"`
	Description     *string            `json:"description"`
	AIProvider      *string            `json:"ai_provider"`
	Key             *string            `json:"key"`
	ProviderOptions map[string]*string `json:"provider_options"`
	CustomHost      *string            `json:"custom_host"`
	Tags            json.RawMessage    `json:"tags"`
	RateLimits      json.RawMessage    `json:"rate_limits"`
	UsageLimits     json.RawMessage    `json:"usage_limits"`
	Status          *string            `json:"status"`
}

// integrationView is an integration as every endpoint returns it: never
// the credential or the secret options.
type integrationView struct {
	Object          string            `json:"object"`
	ID              string            `json:"id"`
	OrganisationID  string            `json:"organisation_id"`
	Slug            string            `json:"slug"`
	Name            string            `json:"name"`
	Description     string            `json:"description"`
	AIProvider      string            `json:"ai_provider"`
	CustomHost      string            `json:"custom_host,omitempty"`
	ProviderOptions map[string]string `json:"provider_options,omitempty"`
	Tags            map[string]string `json:"tags"`
	RateLimits      json.RawMessage   `json:"rate_limits,omitempty"`
	UsageLimits     json.RawMessage   `json:"usage_limits,omitempty"`
	Status          string            `json:"status"`
	CreatedAt       time.Time         `json:"created_at"`
	UpdatedAt       time.Time         `json:"last_updated_at"`
}

func integrationOut(in *registry.Integration) integrationView {
	tags := in.Tags
	if tags == nil {
		tags = map[string]string{}
	}
	return integrationView{
		Object: "integration", ID: in.ID, OrganisationID: in.OrganisationID, Slug: in.Slug, Name: in.Name,
		Description: in.Description, AIProvider: in.AIProvider, CustomHost: in.CustomHost, ProviderOptions: in.Options,
		Tags: tags, RateLimits: in.RateLimits, UsageLimits: in.UsageLimits, Status: in.Status,
		CreatedAt: in.CreatedAt, UpdatedAt: in.UpdatedAt,
	}
}

func (a *API) createIntegration(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	var in integrationInput
	if err := decodeBody(w, r, &in); err != nil {
		return err
	}
	if in.Name == nil || strings.TrimSpace(*in.Name) == "" {
		return httpx.BadRequest("missing_required", "name", "name: is required")
	}
	if in.AIProvider == nil || *in.AIProvider == "" {
		return httpx.BadRequest("missing_required", "ai_provider", "ai_provider: is required")
	}
	now := a.now().UTC().Truncate(time.Microsecond)
	rec := &registry.Integration{
		ID: uuid.NewString(), OrganisationID: p.OrganisationID, Status: registry.StatusActive,
		Access: registry.WorkspaceAccess{Global: true}, CreatedAt: now, UpdatedAt: now,
	}
	rec.Slug = newSlug(*in.Name)
	if in.Slug != nil {
		rec.Slug = *in.Slug
	}
	key := ""
	if err := a.applyIntegrationInput(rec, &in, &key, nil); err != nil {
		return err
	}
	if err := a.d.Integrations.CreateIntegration(r.Context(), rec); err != nil {
		return err
	}
	noteResource(r, rec.ID, "")
	httpx.WriteJSON(w, http.StatusOK, integrationOut(rec))
	return nil
}

// applyIntegrationInput validates in and copies it onto rec, sealing the
// credential and the secret options. key and secrets carry the current
// credential for updates (nil secrets: a new integration).
func (a *API) applyIntegrationInput(rec *registry.Integration, in *integrationInput, key *string, secrets map[string]string) error {
	if in.Name != nil {
		n, err := validCatalogName(*in.Name)
		if err != nil {
			return err
		}
		rec.Name = n
	}
	if !slugPattern.MatchString(rec.Slug) {
		return httpx.BadRequest("invalid_value", "slug", "slug: lowercase letters, digits and dashes, at most %d characters", maxNameLen)
	}
	if in.Description != nil {
		rec.Description = *in.Description
	}
	if in.AIProvider != nil {
		if !slices.Contains(a.d.Providers, *in.AIProvider) {
			return httpx.BadRequest("unknown_provider", "ai_provider", "ai_provider: unknown provider %q: supported providers are %s", *in.AIProvider, strings.Join(a.d.Providers, ", "))
		}
		rec.AIProvider = *in.AIProvider
	}
	if in.Key != nil {
		*key = *in.Key
	}
	if in.CustomHost != nil {
		if *in.CustomHost != "" {
			if err := validURL(*in.CustomHost); err != nil {
				return httpx.BadRequest("invalid_value", "custom_host", "custom_host: %v", err)
			}
		}
		rec.CustomHost = *in.CustomHost
	}
	if err := applyCatalogCommon(&rec.Tags, &rec.RateLimits, &rec.UsageLimits, &rec.Status, in.Tags, in.RateLimits, in.UsageLimits, in.Status); err != nil {
		return err
	}
	if secrets == nil {
		secrets = map[string]string{}
	}
	for name, v := range in.ProviderOptions {
		if !slices.Contains(integrationOptionNames, name) {
			return httpx.BadRequest("unknown_field", "provider_options."+name, "provider_options.%s: unknown provider option; known are %s", name, strings.Join(integrationOptionNames, ", "))
		}
		target := rec.Options
		if auth.SecretOptions[name] {
			target = secrets
		}
		if v == nil || *v == "" {
			delete(target, name)
			continue
		}
		if target == nil {
			rec.Options = map[string]string{}
			target = rec.Options
		}
		target[name] = *v
	}
	if len(rec.Options) == 0 {
		rec.Options = nil
	}
	if err := auth.SealIntegration(a.d.Box, rec, *key, secrets); err != nil {
		return httpx.Internal(fmt.Errorf("seal integration %s: %w", rec.ID, err))
	}
	return nil
}

// applyCatalogCommon validates and applies the fields integrations and
// providers share: tags, rate_limits, usage_limits (validated strictly,
// SPEC.md) and status. Absent fields keep their value; null clears.
func applyCatalogCommon(tags *map[string]string, rl, ul *json.RawMessage, status *string,
	inTags, inRL, inUL json.RawMessage, inStatus *string) error {
	if inTags != nil {
		t, err := validTags(inTags, "tags")
		if err != nil {
			return err
		}
		*tags = t
	}
	if inRL != nil {
		v, err := validRateLimits(inRL, "rate_limits")
		if err != nil {
			return err
		}
		*rl = v
	}
	if inUL != nil {
		v, err := validUsageLimits(inUL, "usage_limits")
		if err != nil {
			return err
		}
		*ul = v
	}
	if inStatus != nil {
		if !registry.ValidStatus(*inStatus) {
			return httpx.BadRequest("invalid_value", "status", "status: must be %s or %s, got %q", registry.StatusActive, registry.StatusDisabled, *inStatus)
		}
		*status = *inStatus
	}
	return nil
}

// validCatalogName trims a name and checks its length: 1 to 255 characters.
func validCatalogName(name string) (string, error) {
	n := strings.TrimSpace(name)
	if n == "" || utf8.RuneCountInString(n) > maxNameLen {
		return "", httpx.BadRequest("invalid_value", "name", "name: must be 1 to %d characters", maxNameLen)
	}
	return n, nil
}

// validTags checks a tags object: string values, at most maxTags pairs,
// keys of 1 to 128 characters, values of at most 255. null gives nil.
func validTags(raw json.RawMessage, param string) (map[string]string, error) {
	if isNull(raw) {
		return nil, nil
	}
	var tags map[string]string
	if err := json.Unmarshal(raw, &tags); err != nil {
		return nil, httpx.BadRequest("invalid_type", param, `%s: must be a JSON object of string values, e.g. {"team":"search"}`, param)
	}
	if len(tags) > maxTags {
		return nil, httpx.BadRequest("invalid_value", param, "%s: at most %d tags", param, maxTags)
	}
	for k, v := range tags {
		if k == "" || utf8.RuneCountInString(k) > maxTagKey || utf8.RuneCountInString(v) > maxTagValue {
			return nil, httpx.BadRequest("invalid_value", param, "%s: keys of 1 to %d characters and values of at most %d (%q)", param, maxTagKey, maxTagValue, truncateRunes(k, 40))
		}
	}
	return tags, nil
}

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// listFilter reads current_page, page_size and tags.
func listFilter(r *http.Request) (registry.Filter, error) {
	pg, size, err := page(r)
	if err != nil {
		return registry.Filter{}, err
	}
	f := registry.Filter{OrganisationID: principal(r).OrganisationID, Page: pg, PageSize: size}
	if v := r.URL.Query().Get("tags"); v != "" {
		if f.Tags, err = validTags(json.RawMessage(v), "tags"); err != nil {
			return registry.Filter{}, err
		}
	}
	return f, nil
}

// lookupIntegration finds the path's integration. A workspace key sees
// only integrations shared with its workspace (404 otherwise).
func (a *API) lookupIntegration(r *http.Request) (*registry.Integration, error) {
	p := principal(r)
	in, err := a.d.Integrations.Integration(r.Context(), p.OrganisationID, r.PathValue("slug"))
	if err != nil {
		return nil, err
	}
	if !p.IsOrganisationKey() && !in.SharedWith(p.WorkspaceID) {
		return nil, httpx.NotFound(fmt.Sprintf("integration %q not found", r.PathValue("slug")))
	}
	return in, nil
}

func (a *API) getIntegration(w http.ResponseWriter, r *http.Request) error {
	in, err := a.lookupIntegration(r)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, integrationOut(in))
	return nil
}

func (a *API) listIntegrations(w http.ResponseWriter, r *http.Request) error {
	f, err := listFilter(r)
	if err != nil {
		return err
	}
	// A workspace key, or an organisation key naming a workspace, lists
	// the integrations shared with that workspace.
	f.WorkspaceID = actorFrom(r).listWorkspace()
	ins, total, err := a.d.Integrations.ListIntegrations(r.Context(), f)
	if err != nil {
		return err
	}
	return writeList(w, total, ins, integrationOut)
}

func (a *API) updateIntegration(w http.ResponseWriter, r *http.Request) error {
	rec, err := a.lookupIntegration(r)
	if err != nil {
		return err
	}
	var in integrationInput
	if err := decodeBody(w, r, &in); err != nil {
		return err
	}
	if in.Slug != nil && *in.Slug != rec.Slug {
		return httpx.BadRequest("invalid_value", "slug", "slug: cannot be changed")
	}
	key, secrets, err := auth.OpenIntegration(a.d.Box, rec)
	if err != nil {
		return httpx.Internal(fmt.Errorf("open integration %s: %w", rec.ID, err))
	}
	if err := a.applyIntegrationInput(rec, &in, &key, secrets); err != nil {
		return err
	}
	if err := a.d.Integrations.UpdateIntegration(r.Context(), rec); err != nil {
		return err
	}
	a.invalidateIntegration(rec)
	noteResource(r, rec.ID, "")
	httpx.WriteJSON(w, http.StatusOK, integrationOut(rec))
	return nil
}

func (a *API) deleteIntegration(w http.ResponseWriter, r *http.Request) error {
	rec, err := a.lookupIntegration(r)
	if err != nil {
		return err
	}
	if _, err := a.d.Integrations.DeleteIntegration(r.Context(), rec.OrganisationID, rec.ID); err != nil {
		return err
	}
	a.invalidateIntegration(rec)
	noteResource(r, rec.ID, "")
	httpx.WriteJSON(w, http.StatusOK, deleted{ID: rec.ID, Object: "integration", Deleted: true})
	return nil
}

func (a *API) invalidateIntegration(in *registry.Integration) {
	if a.d.ProviderCache != nil {
		a.d.ProviderCache.InvalidateIntegration(in.OrganisationID, in.ID)
	}
}

// integrationModel is one entry of the allow-list, in and out.
type integrationModel struct {
	Slug    string `json:"slug"`
	Enabled *bool  `json:"enabled"`
}

type integrationModels struct {
	Object         string             `json:"object"`
	Total          int                `json:"total"`
	AllowAllModels bool               `json:"allow_all_models"`
	Data           []integrationModel `json:"data"`
}

func modelsOut(in *registry.Integration) integrationModels {
	out := integrationModels{Object: "list", Total: len(in.Models), AllowAllModels: len(in.Models) == 0, Data: make([]integrationModel, 0, len(in.Models))}
	for _, m := range in.Models {
		out.Data = append(out.Data, integrationModel{Slug: m.Slug, Enabled: &m.Enabled})
	}
	return out
}

func (a *API) getIntegrationModels(w http.ResponseWriter, r *http.Request) error {
	in, err := a.lookupIntegration(r)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, modelsOut(in))
	return nil
}

func (a *API) putIntegrationModels(w http.ResponseWriter, r *http.Request) error {
	rec, err := a.lookupIntegration(r)
	if err != nil {
		return err
	}
	var body struct {
		Models []integrationModel `json:"models"`
	}
	if err := decodeBody(w, r, &body); err != nil {
		return err
	}
	if len(body.Models) > maxModels {
		return httpx.BadRequest("invalid_value", "models", "models: at most %d entries", maxModels)
	}
	models := make([]registry.IntegrationModel, 0, len(body.Models))
	seen := make(map[string]bool, len(body.Models))
	for i, m := range body.Models {
		at := fmt.Sprintf("models[%d]", i)
		if m.Slug == "" || utf8.RuneCountInString(m.Slug) > maxNameLen {
			return httpx.BadRequest("invalid_value", at+".slug", "%s.slug: must be a model id of 1 to %d characters", at, maxNameLen)
		}
		if seen[m.Slug] {
			return httpx.BadRequest("invalid_value", at+".slug", "%s.slug: %q is listed twice", at, m.Slug)
		}
		seen[m.Slug] = true
		models = append(models, registry.IntegrationModel{Slug: m.Slug, Enabled: m.Enabled == nil || *m.Enabled})
	}
	in, err := a.d.Integrations.SetIntegrationModels(r.Context(), rec.OrganisationID, rec.ID, models)
	if err != nil {
		return err
	}
	a.invalidateIntegration(in)
	noteResource(r, in.ID, "")
	httpx.WriteJSON(w, http.StatusOK, modelsOut(in))
	return nil
}

// sharedWorkspace is one entry of an integration's workspace list.
type sharedWorkspace struct {
	ID      string `json:"id"`
	Slug    string `json:"slug,omitempty"`
	Name    string `json:"name,omitempty"`
	Enabled *bool  `json:"enabled,omitempty"`
}

type integrationWorkspaces struct {
	Object        string            `json:"object"`
	IntegrationID string            `json:"integration_id"`
	Global        bool              `json:"global"`
	Workspaces    []sharedWorkspace `json:"workspaces"`
}

// workspacesOut describes who may use in; a workspace key sees only its
// own workspace in the list.
func (a *API) workspacesOut(ctx context.Context, p *auth.Principal, in *registry.Integration) (integrationWorkspaces, error) {
	out := integrationWorkspaces{Object: "integration_workspaces", IntegrationID: in.ID, Global: in.Access.Global, Workspaces: []sharedWorkspace{}}
	for _, id := range in.Access.WorkspaceIDs {
		if !p.IsOrganisationKey() && id != p.WorkspaceID {
			continue
		}
		ws, err := a.d.Tenancy.Workspace(ctx, in.OrganisationID, id)
		if errors.Is(err, httpx.ErrNotFound) {
			continue // deleted since; it can no longer use anything
		}
		if err != nil {
			return out, err
		}
		out.Workspaces = append(out.Workspaces, sharedWorkspace{ID: ws.ID, Slug: ws.Slug, Name: ws.Name})
	}
	return out, nil
}

func (a *API) getIntegrationWorkspaces(w http.ResponseWriter, r *http.Request) error {
	in, err := a.lookupIntegration(r)
	if err != nil {
		return err
	}
	out, err := a.workspacesOut(r.Context(), principal(r), in)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) putIntegrationWorkspaces(w http.ResponseWriter, r *http.Request) error {
	rec, err := a.lookupIntegration(r)
	if err != nil {
		return err
	}
	var body struct {
		Global     *bool             `json:"global"`
		Workspaces []sharedWorkspace `json:"workspaces"`
	}
	if err := decodeBody(w, r, &body); err != nil {
		return err
	}
	if len(body.Workspaces) > maxShareList {
		return httpx.BadRequest("invalid_value", "workspaces", "workspaces: at most %d entries", maxShareList)
	}
	access := registry.WorkspaceAccess{Global: body.Global != nil && *body.Global}
	for i, e := range body.Workspaces {
		at := fmt.Sprintf("workspaces[%d]", i)
		if e.Enabled != nil && !*e.Enabled {
			continue
		}
		if e.ID == "" {
			return httpx.BadRequest("missing_required", at+".id", "%s.id: is required (a workspace id or slug)", at)
		}
		ws, err := a.d.Tenancy.Workspace(r.Context(), rec.OrganisationID, e.ID)
		if errors.Is(err, httpx.ErrNotFound) {
			return httpx.BadRequest("invalid_value", at+".id", "%s.id: workspace %q not found", at, e.ID)
		}
		if err != nil {
			return err
		}
		if !slices.Contains(access.WorkspaceIDs, ws.ID) {
			access.WorkspaceIDs = append(access.WorkspaceIDs, ws.ID)
		}
	}
	in, err := a.d.Integrations.SetIntegrationAccess(r.Context(), rec.OrganisationID, rec.ID, access)
	if err != nil {
		return err
	}
	a.invalidateIntegration(in)
	noteResource(r, in.ID, "")
	out, err := a.workspacesOut(r.Context(), principal(r), in)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// providerInput is the body of POST and PUT /v1/providers. workspace_id is
// read by the control wrapper (it decides the workspace acted in); here it
// may only repeat the provider's own.
type providerInput struct {
	Name          *string         `json:"name"`
	Slug          *string         `json:"slug"`
	Note          *string         `json:"note"`
	IntegrationID *string         `json:"integration_id"`
	WorkspaceID   *string         `json:"workspace_id"`
	Tags          json.RawMessage `json:"tags"`
	RateLimits    json.RawMessage `json:"rate_limits"`
	UsageLimits   json.RawMessage `json:"usage_limits"`
	Status        *string         `json:"status"`
}

type providerView struct {
	Object         string            `json:"object"`
	ID             string            `json:"id"`
	OrganisationID string            `json:"organisation_id"`
	WorkspaceID    string            `json:"workspace_id"`
	IntegrationID  string            `json:"integration_id"`
	Slug           string            `json:"slug"`
	Name           string            `json:"name"`
	Note           string            `json:"note"`
	Tags           map[string]string `json:"tags"`
	RateLimits     json.RawMessage   `json:"rate_limits,omitempty"`
	UsageLimits    json.RawMessage   `json:"usage_limits,omitempty"`
	Status         string            `json:"status"`
	CreatedAt      time.Time         `json:"created_at"`
	UpdatedAt      time.Time         `json:"last_updated_at"`
}

func providerOut(p *registry.Provider) providerView {
	tags := p.Tags
	if tags == nil {
		tags = map[string]string{}
	}
	return providerView{
		Object: "provider", ID: p.ID, OrganisationID: p.OrganisationID, WorkspaceID: p.WorkspaceID, IntegrationID: p.IntegrationID,
		Slug: p.Slug, Name: p.Name, Note: p.Note, Tags: tags, RateLimits: p.RateLimits, UsageLimits: p.UsageLimits,
		Status: p.Status, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt,
	}
}

func (a *API) createProvider(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	var in providerInput
	if err := decodeBody(w, r, &in); err != nil {
		return err
	}
	if in.Name == nil || strings.TrimSpace(*in.Name) == "" {
		return httpx.BadRequest("missing_required", "name", "name: is required")
	}
	if in.IntegrationID == nil || *in.IntegrationID == "" {
		return httpx.BadRequest("missing_required", "integration_id", "integration_id: is required (an integration's slug or id)")
	}
	now := a.now().UTC().Truncate(time.Microsecond)
	// p.WorkspaceID is the workspace the request acts in, resolved and
	// checked by the control wrapper.
	rec := &registry.Provider{ID: uuid.NewString(), OrganisationID: p.OrganisationID, WorkspaceID: p.WorkspaceID,
		Status: registry.StatusActive, CreatedAt: now, UpdatedAt: now}
	rec.Slug = newSlug(*in.Name)
	if in.Slug != nil {
		rec.Slug = *in.Slug
	}
	if err := a.applyProviderInput(r, rec, &in); err != nil {
		return err
	}
	if err := a.d.Integrations.CreateProvider(r.Context(), rec); err != nil {
		return err
	}
	a.invalidateProvider(rec)
	noteResource(r, rec.ID, rec.WorkspaceID)
	httpx.WriteJSON(w, http.StatusOK, providerOut(rec))
	return nil
}

// applyProviderInput validates in and copies it onto rec.
func (a *API) applyProviderInput(r *http.Request, rec *registry.Provider, in *providerInput) error {
	if in.Name != nil {
		n, err := validCatalogName(*in.Name)
		if err != nil {
			return err
		}
		rec.Name = n
	}
	if !slugPattern.MatchString(rec.Slug) {
		return httpx.BadRequest("invalid_value", "slug", "slug: lowercase letters, digits and dashes, at most %d characters", maxNameLen)
	}
	if in.Note != nil {
		rec.Note = *in.Note
	}
	if in.IntegrationID != nil {
		id, err := a.sharedIntegration(r, *in.IntegrationID, rec.WorkspaceID)
		if err != nil {
			return err
		}
		rec.IntegrationID = id
	}
	return applyCatalogCommon(&rec.Tags, &rec.RateLimits, &rec.UsageLimits, &rec.Status, in.Tags, in.RateLimits, in.UsageLimits, in.Status)
}

// sharedIntegration resolves an integration_id (slug or id) that must be
// shared with workspaceID. A workspace key is told an integration not
// shared with it does not exist; an organisation key why it cannot be
// used.
func (a *API) sharedIntegration(r *http.Request, ref, workspaceID string) (string, error) {
	p := principal(r)
	notFound := httpx.NotFound(fmt.Sprintf("integration %q not found", ref))
	in, err := a.d.Integrations.Integration(r.Context(), p.OrganisationID, ref)
	if errors.Is(err, httpx.ErrNotFound) {
		return "", notFound
	}
	if err != nil {
		return "", err
	}
	if !in.SharedWith(workspaceID) {
		if !p.IsOrganisationKey() {
			return "", notFound
		}
		return "", httpx.BadRequest("integration_not_shared", "integration_id", "integration_id: integration %q is not shared with workspace %s (PUT /v1/integrations/%s/workspaces)", in.Slug, workspaceID, in.Slug)
	}
	return in.ID, nil
}

// lookupProvider finds the path's provider: by slug in the workspace the
// request acts in, or by id; another workspace's is 404 to a workspace key.
func (a *API) lookupProvider(r *http.Request) (*registry.Provider, error) {
	p := principal(r)
	rec, err := a.d.Integrations.Provider(r.Context(), p.OrganisationID, p.WorkspaceID, r.PathValue("slug"))
	if err != nil {
		return nil, err
	}
	if !actorFrom(r).sees(rec.WorkspaceID) {
		return nil, httpx.NotFound(fmt.Sprintf("provider %q not found", r.PathValue("slug")))
	}
	return rec, nil
}

func (a *API) getProvider(w http.ResponseWriter, r *http.Request) error {
	rec, err := a.lookupProvider(r)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, providerOut(rec))
	return nil
}

func (a *API) listProviders(w http.ResponseWriter, r *http.Request) error {
	f, err := listFilter(r)
	if err != nil {
		return err
	}
	f.WorkspaceID = actorFrom(r).listWorkspace()
	ps, total, err := a.d.Integrations.ListProviders(r.Context(), f)
	if err != nil {
		return err
	}
	return writeList(w, total, ps, providerOut)
}

func (a *API) updateProvider(w http.ResponseWriter, r *http.Request) error {
	rec, err := a.lookupProvider(r)
	if err != nil {
		return err
	}
	var in providerInput
	if err := decodeBody(w, r, &in); err != nil {
		return err
	}
	if in.Slug != nil && *in.Slug != rec.Slug {
		return httpx.BadRequest("invalid_value", "slug", "slug: cannot be changed")
	}
	if in.WorkspaceID != nil && principal(r).WorkspaceID != rec.WorkspaceID {
		return httpx.BadRequest("invalid_value", "workspace_id", "workspace_id: cannot be changed")
	}
	if err := a.applyProviderInput(r, rec, &in); err != nil {
		return err
	}
	if err := a.d.Integrations.UpdateProvider(r.Context(), rec); err != nil {
		return err
	}
	a.invalidateProvider(rec)
	noteResource(r, rec.ID, rec.WorkspaceID)
	httpx.WriteJSON(w, http.StatusOK, providerOut(rec))
	return nil
}

func (a *API) deleteProvider(w http.ResponseWriter, r *http.Request) error {
	rec, err := a.lookupProvider(r)
	if err != nil {
		return err
	}
	if _, err := a.d.Integrations.DeleteProvider(r.Context(), rec.OrganisationID, rec.ID); err != nil {
		return err
	}
	a.invalidateProvider(rec)
	noteResource(r, rec.ID, rec.WorkspaceID)
	httpx.WriteJSON(w, http.StatusOK, deleted{ID: rec.ID, Object: "provider", Deleted: true})
	return nil
}

func (a *API) invalidateProvider(p *registry.Provider) {
	if a.d.ProviderCache != nil {
		a.d.ProviderCache.InvalidateProvider(p.OrganisationID, p.Slug)
	}
}
