package admin

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/ai-gateway/gateway/internal/auth"
	"github.com/ai-gateway/gateway/internal/httpx"
)

// virtualKeyInput is the body of POST and PUT /v1/virtual-keys (API.md §6).
// Pointers tell "absent" from "empty" for PUT.
type virtualKeyInput struct {
	Name        *string         `json:"name"`
	Slug        *string         `json:"slug"`
	Provider    *string         `json:"provider"`
	Key         *string         `json:"key"`
	Note        *string         `json:"note"`
	CustomHost  *string         `json:"custom_host"`
	UsageLimits json.RawMessage `json:"usage_limits"`
	RateLimits  json.RawMessage `json:"rate_limits"`
	ExpiresAt   *time.Time      `json:"expires_at"`
	WorkspaceID *string         `json:"workspace_id"`

	AzureResourceName        *string `json:"azure_resource_name"`
	AzureDeploymentID        *string `json:"azure_deployment_id"`
	AzureAPIVersion          *string `json:"azure_api_version"`
	AWSAccessKeyID           *string `json:"aws_access_key_id"`
	AWSSecretAccessKey       *string `json:"aws_secret_access_key"`
	AWSSessionToken          *string `json:"aws_session_token"`
	AWSRegion                *string `json:"aws_region"`
	VertexProjectID          *string `json:"vertex_project_id"`
	VertexRegion             *string `json:"vertex_region"`
	VertexServiceAccountJSON *string `json:"vertex_service_account_json"`
	AnthropicVersion         *string `json:"anthropic_version"`
	AnthropicBeta            *string `json:"anthropic_beta"`
}

func (in *virtualKeyInput) providerOptions() map[string]*string {
	return map[string]*string{
		"azure_resource_name": in.AzureResourceName, "azure_deployment_id": in.AzureDeploymentID, "azure_api_version": in.AzureAPIVersion,
		"aws_access_key_id": in.AWSAccessKeyID, "aws_secret_access_key": in.AWSSecretAccessKey, "aws_session_token": in.AWSSessionToken,
		"aws_region": in.AWSRegion, "vertex_project_id": in.VertexProjectID, "vertex_region": in.VertexRegion,
		"vertex_service_account_json": in.VertexServiceAccountJSON, "anthropic_version": in.AnthropicVersion, "anthropic_beta": in.AnthropicBeta,
	}
}

// virtualKeyView is a virtual key as every endpoint returns it: never the
// credential, never the secret provider options.
type virtualKeyView struct {
	Object string `json:"object"`
	*auth.VirtualKey
}

func view(vk *auth.VirtualKey) virtualKeyView {
	return virtualKeyView{Object: "virtual-key", VirtualKey: vk}
}

const maxNameLen = 255

var slugPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,254}$`)

func (a *API) createVirtualKey(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	var in virtualKeyInput
	body, err := httpx.ReadBody(w, r, 1<<20)
	if err != nil {
		return err
	}
	if err := httpx.DecodeStrict(body, &in); err != nil {
		return err
	}
	if in.Name == nil || strings.TrimSpace(*in.Name) == "" {
		return httpx.BadRequest("missing_required", "name", "name: is required")
	}
	if in.Provider == nil || *in.Provider == "" {
		return httpx.BadRequest("missing_required", "provider", "provider: is required")
	}
	now := time.Now().UTC()
	vk := &auth.VirtualKey{
		ID: uuid.NewString(), OrganisationID: p.OrganisationID, WorkspaceID: p.WorkspaceID,
		Status: auth.StatusActive, CreatedAt: now, UpdatedAt: now,
	}
	// p.WorkspaceID is the workspace the request named (workspace_id or
	// x-gateway-workspace, resolved and checked by the control wrapper),
	// else the key's own or the default one.
	if in.Slug != nil {
		vk.Slug = *in.Slug
	} else {
		vk.Slug = newSlug(*in.Name)
	}
	key := ""
	if err := a.applyVirtualKeyInput(vk, &in, &key, nil, now); err != nil {
		return err
	}
	if err := a.d.VirtualKeys.CreateVirtualKey(r.Context(), vk); err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, view(vk))
	return nil
}

// applyVirtualKeyInput validates in and copies it onto vk, sealing the
// credential and secret options. key and secrets carry the current
// credential for updates (nil secrets: a new key).
func (a *API) applyVirtualKeyInput(vk *auth.VirtualKey, in *virtualKeyInput, key *string, secrets map[string]string, now time.Time) error {
	if in.Name != nil {
		n := strings.TrimSpace(*in.Name)
		if n == "" || len(n) > maxNameLen {
			return httpx.BadRequest("invalid_value", "name", "name: must be 1 to %d characters", maxNameLen)
		}
		vk.Name = n
	}
	if !slugPattern.MatchString(vk.Slug) {
		return httpx.BadRequest("invalid_value", "slug", "slug: lowercase letters, digits and dashes, at most 255 characters")
	}
	if in.Provider != nil {
		if !slices.Contains(a.d.Providers, *in.Provider) {
			return httpx.BadRequest("unknown_provider", "provider", "provider: unknown provider %q: supported providers are %s", *in.Provider, strings.Join(a.d.Providers, ", "))
		}
		vk.Provider = *in.Provider
	}
	if in.Key != nil {
		*key = *in.Key
	}
	if in.Note != nil {
		vk.Note = *in.Note
	}
	if in.CustomHost != nil {
		if *in.CustomHost != "" {
			if err := validURL(*in.CustomHost); err != nil {
				return httpx.BadRequest("invalid_value", "custom_host", "custom_host: %v", err)
			}
		}
		vk.CustomHost = *in.CustomHost
	}
	for name, raw := range map[string]json.RawMessage{"usage_limits": in.UsageLimits, "rate_limits": in.RateLimits} {
		if raw == nil {
			continue
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return httpx.BadRequest("invalid_type", name, "%s: must be a JSON object", name)
		}
		if _, ok := v.(map[string]any); !ok && v != nil {
			return httpx.BadRequest("invalid_type", name, "%s: must be a JSON object", name)
		}
	}
	if in.UsageLimits != nil {
		vk.UsageLimits = nullToEmpty(in.UsageLimits)
	}
	if in.RateLimits != nil {
		vk.RateLimits = nullToEmpty(in.RateLimits)
	}
	if in.ExpiresAt != nil {
		if !in.ExpiresAt.After(now) {
			return httpx.BadRequest("invalid_value", "expires_at", "expires_at: must be in the future")
		}
		t := in.ExpiresAt.UTC()
		vk.ExpiresAt = &t
	}
	if secrets == nil {
		secrets = map[string]string{}
	}
	for name, v := range in.providerOptions() {
		if v == nil {
			continue
		}
		if auth.SecretOptions[name] {
			if *v == "" {
				delete(secrets, name)
			} else {
				secrets[name] = *v
			}
			continue
		}
		if vk.Options == nil {
			vk.Options = map[string]string{}
		}
		if *v == "" {
			delete(vk.Options, name)
		} else {
			vk.Options[name] = *v
		}
	}
	return auth.SealCredentials(a.d.Box, vk, *key, secrets)
}

func nullToEmpty(raw json.RawMessage) json.RawMessage {
	if string(raw) == "null" {
		return nil
	}
	return raw
}

func validURL(s string) error {
	if !strings.HasPrefix(s, "http://") && !strings.HasPrefix(s, "https://") {
		return fmt.Errorf("must be an absolute http or https URL, got %q", s)
	}
	return nil
}

// newSlug derives a readable slug from a name plus a random suffix.
func newSlug(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 40 {
			break
		}
	}
	base := strings.Trim(b.String(), "-")
	if base == "" {
		base = "vk"
	}
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	for i := range suffix {
		suffix[i] = alphabet[int(suffix[i])%len(alphabet)]
	}
	return base + "-" + string(suffix)
}

// visible reports whether the principal may see vk: a workspace key sees
// only its workspace's keys (404 otherwise, so ids do not leak).
func visible(p *auth.Principal, vk *auth.VirtualKey) bool {
	return p.IsOrganisationKey() || vk.WorkspaceID == p.WorkspaceID
}

func (a *API) lookupVirtualKey(r *http.Request) (*auth.VirtualKey, *auth.Principal, error) {
	p := principal(r)
	vk, err := a.d.VirtualKeys.VirtualKey(r.Context(), p.OrganisationID, r.PathValue("slug"))
	if err != nil {
		return nil, nil, err
	}
	if !visible(p, vk) {
		return nil, nil, httpx.NotFound(fmt.Sprintf("virtual key %q not found", r.PathValue("slug")))
	}
	return vk, p, nil
}

func (a *API) getVirtualKey(w http.ResponseWriter, r *http.Request) error {
	vk, _, err := a.lookupVirtualKey(r)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, view(vk))
	return nil
}

func (a *API) listVirtualKeys(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	pg, size, err := page(r)
	if err != nil {
		return err
	}
	ws := actorFrom(r).listWorkspace()
	vks, total, err := a.d.VirtualKeys.ListVirtualKeys(r.Context(), p.OrganisationID, ws, pg, size)
	if err != nil {
		return err
	}
	return writeList(w, total, vks, view)
}

func (a *API) updateVirtualKey(w http.ResponseWriter, r *http.Request) error {
	vk, p, err := a.lookupVirtualKey(r)
	if err != nil {
		return err
	}
	var in virtualKeyInput
	if err := decodeBody(w, r, &in); err != nil {
		return err
	}
	if in.Slug != nil && *in.Slug != vk.Slug {
		return httpx.BadRequest("invalid_value", "slug", "slug: cannot be changed")
	}
	if in.WorkspaceID != nil && *in.WorkspaceID != vk.WorkspaceID && p.WorkspaceID != vk.WorkspaceID {
		return httpx.BadRequest("invalid_value", "workspace_id", "workspace_id: cannot be changed")
	}
	key, secrets, err := auth.OpenCredentials(a.d.Box, vk)
	if err != nil {
		return httpx.Internal(fmt.Errorf("open virtual key %s: %w", vk.ID, err))
	}
	now := time.Now().UTC()
	if err := a.applyVirtualKeyInput(vk, &in, &key, secrets, now); err != nil {
		return err
	}
	vk.UpdatedAt = now
	if err := a.d.VirtualKeys.UpdateVirtualKey(r.Context(), vk); err != nil {
		return err
	}
	a.invalidate(p.OrganisationID, vk)
	httpx.WriteJSON(w, http.StatusOK, view(vk))
	return nil
}

func (a *API) deleteVirtualKey(w http.ResponseWriter, r *http.Request) error {
	vk, p, err := a.lookupVirtualKey(r)
	if err != nil {
		return err
	}
	if _, err := a.d.VirtualKeys.DeleteVirtualKey(r.Context(), p.OrganisationID, vk.ID); err != nil {
		return err
	}
	a.invalidate(p.OrganisationID, vk)
	httpx.WriteJSON(w, http.StatusOK, deleted{ID: vk.ID, Object: "virtual-key", Deleted: true})
	return nil
}

func (a *API) invalidate(orgID string, vk *auth.VirtualKey) {
	if a.d.Invalidate != nil {
		a.d.Invalidate.Invalidate(orgID, vk.Slug)
		a.d.Invalidate.Invalidate(orgID, vk.ID)
	}
}
