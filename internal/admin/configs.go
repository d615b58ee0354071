package admin

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/ai-gateway/gateway/internal/auth"
	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/routing"
	"github.com/ai-gateway/gateway/internal/secret"
)

// Scopes of the saved-config routes (API.md §2). They are spelled here
// rather than in auth because only these handlers check them.
const (
	ScopeConfigsCreate = "configs.create"
	ScopeConfigsRead   = "configs.read"
	ScopeConfigsUpdate = "configs.update"
	ScopeConfigsDelete = "configs.delete"
	ScopeConfigsList   = "configs.list"
)

// ConfigStore persists saved configs and their versions.
type ConfigStore interface {
	CreateConfig(ctx context.Context, c *routing.StoredConfig) error
	Config(ctx context.Context, organisationID, slugOrID string) (*routing.StoredConfig, error)
	ListConfigs(ctx context.Context, organisationID, workspaceID string, page, pageSize int) ([]*routing.StoredConfig, int, error)
	UpdateConfig(ctx context.Context, c *routing.StoredConfig) error
	DeleteConfig(ctx context.Context, organisationID, slugOrID string) (*routing.StoredConfig, error)
	ConfigVersions(ctx context.Context, organisationID, slugOrID string, page, pageSize int) ([]*routing.StoredConfig, int, error)
}

// ConfigInvalidator drops the data plane's cached copy of a config.
type ConfigInvalidator interface {
	Invalidate(organisationID, slugOrID string)
}

// registerConfigs mounts /v1/configs (API.md §6 "Configs"):
//
//	POST   /v1/configs                  create (version 1); slug "pc-<name>-<random>"
//	GET    /v1/configs                  list, latest versions (?workspace_id= for organisation keys)
//	GET    /v1/configs/{slug}           the latest version (slug or id)
//	PUT    /v1/configs/{slug}           save a new version (name and/or config)
//	DELETE /v1/configs/{slug}           hard delete: the config and all its versions
//	GET    /v1/configs/{slug}/versions  every version, newest first
//
// A config is validated exactly like an inline x-gateway-config (AB01,
// param naming the path such as config.targets[1].weight). At rest the
// config is sealed with the deployment key (it may hold provider
// credentials); answers show credentials as "********", and a PUT that
// sends that placeholder back keeps the credential of the previous version
// at the same place.
func (a *API) registerConfigs(mux *http.ServeMux, h func(httpx.HandlerFunc) http.Handler) {
	mux.Handle("POST /v1/configs", h(a.createConfig))
	mux.Handle("GET /v1/configs", h(a.listConfigs))
	mux.Handle("GET /v1/configs/{slug}", h(a.getConfig))
	mux.Handle("PUT /v1/configs/{slug}", h(a.updateConfig))
	mux.Handle("DELETE /v1/configs/{slug}", h(a.deleteConfig))
	mux.Handle("GET /v1/configs/{slug}/versions", h(a.listConfigVersions))
}

// configInput is the body of POST and PUT /v1/configs.
type configInput struct {
	Name *string `json:"name"`
	// Config is the config object, or a string holding it as JSON (the
	// form of the x-gateway-config header).
	Config      json.RawMessage `json:"config"`
	WorkspaceID *string         `json:"workspace_id"`
}

// configView is a saved config as every endpoint returns it.
type configView struct {
	Object         string          `json:"object"`
	ID             string          `json:"id"`
	Slug           string          `json:"slug"`
	Name           string          `json:"name"`
	OrganisationID string          `json:"organisation_id"`
	WorkspaceID    string          `json:"workspace_id"`
	Config         json.RawMessage `json:"config"`
	Version        int             `json:"version"`
	VersionID      string          `json:"version_id"`
	Status         string          `json:"status"`
	CreatedAt      time.Time       `json:"created_at"`
	UpdatedAt      time.Time       `json:"last_updated_at"`
}

// configVersionView is one version of a config.
type configVersionView struct {
	Object    string          `json:"object"`
	ID        string          `json:"id"`
	ConfigID  string          `json:"config_id"`
	Slug      string          `json:"slug"`
	Version   int             `json:"version"`
	Name      string          `json:"name"`
	Config    json.RawMessage `json:"config"`
	CreatedAt time.Time       `json:"created_at"`
}

func (a *API) configView(c *routing.StoredConfig) (configView, error) {
	plain, err := OpenConfig(a.d.Box, c)
	if err != nil {
		return configView{}, err
	}
	return configView{
		Object: "config", ID: c.ID, Slug: c.Slug, Name: c.Name, OrganisationID: c.OrganisationID, WorkspaceID: c.WorkspaceID,
		Config: maskSecrets(plain), Version: c.Version, VersionID: c.VersionID, Status: "active",
		CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
	}, nil
}

func (a *API) configStore() (ConfigStore, error) {
	if a.d.Configs == nil {
		return nil, httpx.NotFound("saved configs are not available")
	}
	return a.d.Configs, nil
}

// parseConfigBody validates the config field of a body, returning it as
// compact JSON.
func (a *API) parseConfigBody(raw json.RawMessage) ([]byte, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, httpx.BadRequest(routing.CodeInvalidType, "config", "config: must be a config object")
		}
		raw = []byte(s)
	}
	if _, err := routing.ParseWith(raw, routing.ParseOptions{KnownProvider: a.knownProvider}); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, httpx.BadRequest(routing.CodeInvalidConfig, "config", "config: malformed JSON")
	}
	return buf.Bytes(), nil
}

func (a *API) knownProvider(slug string) bool {
	return len(a.d.Providers) == 0 || slices.Contains(a.d.Providers, slug)
}

func (a *API) createConfig(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	if err := p.Require(ScopeConfigsCreate); err != nil {
		return err
	}
	st, err := a.configStore()
	if err != nil {
		return err
	}
	var in configInput
	if err := decodeBody(w, r, &in); err != nil {
		return err
	}
	if in.Name == nil || strings.TrimSpace(*in.Name) == "" {
		return httpx.BadRequest("missing_required", "name", "name: is required")
	}
	name := strings.TrimSpace(*in.Name)
	if len(name) > maxNameLen {
		return httpx.BadRequest("invalid_value", "name", "name: must be 1 to %d characters", maxNameLen)
	}
	if len(in.Config) == 0 || string(in.Config) == "null" {
		return httpx.BadRequest(routing.CodeMissingField, "config", "config: is required")
	}
	cfg, err := a.parseConfigBody(in.Config)
	if err != nil {
		return err
	}
	// The control-plane wrapper has already resolved a workspace_id field
	// (id or slug) or x-gateway-workspace into the principal, and refused
	// a workspace key naming another workspace.
	c := &routing.StoredConfig{OrganisationID: p.OrganisationID, WorkspaceID: p.WorkspaceID, Name: name, Slug: configSlug(name)}
	// The id is chosen here so that the sealed config is bound to it.
	c.ID = uuid.NewString()
	c.Config = SealConfig(a.d.Box, c.ID, cfg)
	if err := st.CreateConfig(r.Context(), c); err != nil {
		return err
	}
	a.invalidateConfig(p.OrganisationID, c)
	v, err := a.configView(c)
	if err != nil {
		return httpx.Internal(err)
	}
	httpx.WriteJSON(w, http.StatusOK, v)
	return nil
}

func (a *API) lookupConfig(r *http.Request, scope string) (ConfigStore, *routing.StoredConfig, *auth.Principal, error) {
	p := principal(r)
	if err := p.Require(scope); err != nil {
		return nil, nil, nil, err
	}
	st, err := a.configStore()
	if err != nil {
		return nil, nil, nil, err
	}
	c, err := st.Config(r.Context(), p.OrganisationID, r.PathValue("slug"))
	if err != nil {
		return nil, nil, nil, err
	}
	if !p.IsOrganisationKey() && c.WorkspaceID != p.WorkspaceID {
		return nil, nil, nil, httpx.NotFound(fmt.Sprintf("config %q not found", r.PathValue("slug")))
	}
	return st, c, p, nil
}

func (a *API) getConfig(w http.ResponseWriter, r *http.Request) error {
	_, c, _, err := a.lookupConfig(r, ScopeConfigsRead)
	if err != nil {
		return err
	}
	v, err := a.configView(c)
	if err != nil {
		return httpx.Internal(err)
	}
	httpx.WriteJSON(w, http.StatusOK, v)
	return nil
}

func (a *API) listConfigs(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	if err := p.Require(ScopeConfigsList); err != nil {
		return err
	}
	st, err := a.configStore()
	if err != nil {
		return err
	}
	pg, size, err := page(r)
	if err != nil {
		return err
	}
	ws := actorFrom(r).listWorkspace()
	cs, total, err := st.ListConfigs(r.Context(), p.OrganisationID, ws, pg, size)
	if err != nil {
		return err
	}
	return writeViews(w, total, cs, a.configView)
}

func (a *API) updateConfig(w http.ResponseWriter, r *http.Request) error {
	st, c, p, err := a.lookupConfig(r, ScopeConfigsUpdate)
	if err != nil {
		return err
	}
	var in configInput
	if err := decodeBody(w, r, &in); err != nil {
		return err
	}
	if in.WorkspaceID != nil && *in.WorkspaceID != c.WorkspaceID {
		return httpx.BadRequest("invalid_value", "workspace_id", "workspace_id: cannot be changed")
	}
	prev, err := OpenConfig(a.d.Box, c)
	if err != nil {
		return httpx.Internal(err)
	}
	if in.Name != nil {
		name := strings.TrimSpace(*in.Name)
		if name == "" || len(name) > maxNameLen {
			return httpx.BadRequest("invalid_value", "name", "name: must be 1 to %d characters", maxNameLen)
		}
		c.Name = name
	}
	next := prev
	if len(in.Config) > 0 && string(in.Config) != "null" {
		raw := in.Config
		if bytes.HasPrefix(bytes.TrimSpace(raw), []byte(`"`)) {
			var s string
			if json.Unmarshal(raw, &s) == nil {
				raw = []byte(s)
			}
		}
		if raw, err = restoreSecrets(raw, prev); err != nil {
			return err
		}
		if next, err = a.parseConfigBody(raw); err != nil {
			return err
		}
	}
	c.Config = SealConfig(a.d.Box, c.ID, next)
	if err := st.UpdateConfig(r.Context(), c); err != nil {
		return err
	}
	a.invalidateConfig(p.OrganisationID, c)
	v, err := a.configView(c)
	if err != nil {
		return httpx.Internal(err)
	}
	httpx.WriteJSON(w, http.StatusOK, v)
	return nil
}

func (a *API) deleteConfig(w http.ResponseWriter, r *http.Request) error {
	st, c, p, err := a.lookupConfig(r, ScopeConfigsDelete)
	if err != nil {
		return err
	}
	if _, err := st.DeleteConfig(r.Context(), p.OrganisationID, c.ID); err != nil {
		return err
	}
	a.invalidateConfig(p.OrganisationID, c)
	httpx.WriteJSON(w, http.StatusOK, deleted{ID: c.ID, Object: "config", Deleted: true})
	return nil
}

func (a *API) listConfigVersions(w http.ResponseWriter, r *http.Request) error {
	st, c, p, err := a.lookupConfig(r, ScopeConfigsList)
	if err != nil {
		return err
	}
	pg, size, err := page(r)
	if err != nil {
		return err
	}
	vs, total, err := st.ConfigVersions(r.Context(), p.OrganisationID, c.ID, pg, size)
	if err != nil {
		return err
	}
	out := list[configVersionView]{Object: "list", Total: total, Data: make([]configVersionView, 0, len(vs))}
	for _, v := range vs {
		plain, err := OpenConfig(a.d.Box, v)
		if err != nil {
			return httpx.Internal(err)
		}
		out.Data = append(out.Data, configVersionView{
			Object: "config-version", ID: v.VersionID, ConfigID: v.ID, Slug: v.Slug, Version: v.Version, Name: v.Name,
			Config: maskSecrets(plain), CreatedAt: v.UpdatedAt,
		})
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) invalidateConfig(orgID string, c *routing.StoredConfig) {
	if a.d.ConfigCache != nil {
		a.d.ConfigCache.Invalidate(orgID, c.Slug)
		a.d.ConfigCache.Invalidate(orgID, c.ID)
	}
}

// configSlug derives a config slug from its name: "pc-", a readable part
// and a random suffix (API.md §4: slugs like pc-…).
func configSlug(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if b.Len() >= 40 {
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
	base := strings.Trim(b.String(), "-")
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	for i := range suffix {
		suffix[i] = alphabet[int(suffix[i])%len(alphabet)]
	}
	if base == "" {
		return "pc-" + string(suffix)
	}
	return "pc-" + base + "-" + string(suffix)
}

// sealedPrefix marks a config sealed at rest.
const sealedPrefix = "sealed:v1:"

func configAAD(id string) []byte { return []byte("config:" + id) }

// SealConfig encrypts a config's JSON with the deployment key, bound to the
// config's id, in the text form the store keeps. A nil box keeps it plain.
func SealConfig(box *secret.Box, id string, plain []byte) []byte {
	if box == nil {
		return plain
	}
	ct := box.Seal(plain, configAAD(id))
	return []byte(sealedPrefix + base64.StdEncoding.EncodeToString(ct))
}

// OpenConfig returns a stored config's JSON, decrypting it when sealed.
func OpenConfig(box *secret.Box, c *routing.StoredConfig) ([]byte, error) {
	s, ok := bytes.CutPrefix(c.Config, []byte(sealedPrefix))
	if !ok {
		return c.Config, nil
	}
	if box == nil {
		return nil, fmt.Errorf("config %s is sealed and no encryption key is loaded", c.ID)
	}
	ct, err := base64.StdEncoding.DecodeString(string(s))
	if err != nil {
		return nil, fmt.Errorf("config %s: sealed form: %w", c.ID, err)
	}
	pt, err := box.Open(ct, configAAD(c.ID))
	if err != nil {
		return nil, fmt.Errorf("config %s cannot be decrypted with this deployment's encryption key: %w", c.ID, err)
	}
	return pt, nil
}

// maskedSecret replaces a credential in answers.
const maskedSecret = "********"

// maskSecrets returns the config with every credential replaced by
// maskedSecret.
func maskSecrets(cfg []byte) json.RawMessage {
	var v any
	if json.Unmarshal(cfg, &v) != nil {
		return cfg
	}
	if !walkSecrets(v, func(m map[string]any, k string) { m[k] = maskedSecret }) {
		return cfg
	}
	b, err := json.Marshal(v)
	if err != nil {
		return cfg
	}
	return b
}

// walkSecrets calls f for each secret field of string value in v, and
// reports whether there was any.
func walkSecrets(v any, f func(m map[string]any, k string)) bool {
	found := false
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if _, isStr := val.(string); isStr && auth.IsSecretField(k) {
				f(x, k)
				found = true
				continue
			}
			found = walkSecrets(val, f) || found
		}
	case []any:
		for _, e := range x {
			found = walkSecrets(e, f) || found
		}
	}
	return found
}

// restoreSecrets replaces each credential sent back as maskedSecret with the
// previous version's credential at the same place.
func restoreSecrets(raw, prev []byte) ([]byte, error) {
	if !bytes.Contains(raw, []byte(maskedSecret)) {
		return raw, nil
	}
	var next, old any
	if json.Unmarshal(raw, &next) != nil {
		return raw, nil // parseConfigBody reports the JSON error
	}
	_ = json.Unmarshal(prev, &old)
	var missing []string
	restore(next, old, "config", &missing)
	if len(missing) > 0 {
		return nil, httpx.BadRequest(routing.CodeInvalidValue, missing[0], "%s: %q stands for the previous version's credential, which has none here; send the credential", missing[0], maskedSecret)
	}
	return json.Marshal(next)
}

func restore(next, old any, path string, missing *[]string) {
	switch x := next.(type) {
	case map[string]any:
		om, _ := old.(map[string]any)
		for k, val := range x {
			p := path + "." + k
			if s, ok := val.(string); ok && s == maskedSecret && auth.IsSecretField(k) {
				if prev, ok := om[k].(string); ok {
					x[k] = prev
				} else {
					*missing = append(*missing, p)
				}
				continue
			}
			restore(val, om[k], p, missing)
		}
	case []any:
		oa, _ := old.([]any)
		for i, e := range x {
			var o any
			if i < len(oa) {
				o = oa[i]
			}
			restore(e, o, fmt.Sprintf("%s[%d]", path, i), missing)
		}
	}
}
