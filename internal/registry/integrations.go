package registry

import (
	"encoding/json"
	"slices"
	"time"
)

// Statuses of integrations and providers. A disabled one stays stored and
// listed but routes nothing.
const (
	StatusActive   = "active"
	StatusDisabled = "disabled"
)

// ValidStatus reports whether s is an integration or provider status.
func ValidStatus(s string) bool { return s == StatusActive || s == StatusDisabled }

// Integration is an organisation's stored credential for one AI provider
// (API.md §6 "Integrations, providers"). Workspace providers use it; the
// data plane routes with its credential, settings and model allow-list.
type Integration struct {
	ID             string
	OrganisationID string
	// Slug is unique in the organisation, at most 255 characters.
	Slug        string
	Name        string
	Description string
	// AIProvider is the adapter's slug (openai, anthropic, bedrock…).
	AIProvider string
	// SealedKey is the AES-256-GCM ciphertext of the credential and the
	// secret provider options, bound to ID; never returned.
	SealedKey  []byte
	CustomHost string
	// Options are the provider settings that are not secrets
	// (azure_resource_name, aws_region, vertex_project_id…).
	Options map[string]string
	// Tags are custom key-value pairs that list calls filter on.
	Tags        map[string]string
	RateLimits  json.RawMessage
	UsageLimits json.RawMessage
	Status      string
	// Models is the model allow-list (see ModelAllowed).
	Models []IntegrationModel
	// Access says which workspaces may use the integration.
	Access    WorkspaceAccess
	CreatedAt time.Time
	UpdatedAt time.Time
}

// IntegrationModel is one entry of an integration's model allow-list.
type IntegrationModel struct {
	// Slug is the model id as requests name it (gpt-4o, claude-sonnet-4…).
	Slug    string
	Enabled bool
}

// WorkspaceAccess is who may use an integration: every workspace of the
// organisation (Global), or only those listed.
type WorkspaceAccess struct {
	Global       bool
	WorkspaceIDs []string
}

// ModelAllowed applies the allow-list: an empty list allows every model;
// otherwise only the models listed with Enabled set are allowed (a listed
// but disabled model is refused like an unlisted one).
func (in *Integration) ModelAllowed(model string) bool {
	if len(in.Models) == 0 {
		return true
	}
	return slices.ContainsFunc(in.Models, func(m IntegrationModel) bool { return m.Enabled && m.Slug == model })
}

// SharedWith reports whether workspaceID may use the integration.
func (in *Integration) SharedWith(workspaceID string) bool {
	return in.Access.Global || slices.Contains(in.Access.WorkspaceIDs, workspaceID)
}

// Provider is a workspace's named use of an integration: what
// x-gateway-provider: @<slug> routes through.
type Provider struct {
	ID             string
	OrganisationID string
	WorkspaceID    string
	// IntegrationID is the integration's id (requests may name it by
	// slug; the store keeps the id).
	IntegrationID string
	// Slug is unique in the workspace, at most 255 characters.
	Slug        string
	Name        string
	Note        string
	Tags        map[string]string
	RateLimits  json.RawMessage
	UsageLimits json.RawMessage
	Status      string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// RateLimit is one entry of a rate_limits array, as the control plane
// validated it: at most Value requests or tokens per unit (rpm, rph, rpd).
type RateLimit struct {
	Type  string `json:"type"`
	Unit  string `json:"unit"`
	Value int64  `json:"value"`
}

// ParseRateLimits decodes a stored rate_limits array; empty gives none.
func ParseRateLimits(raw json.RawMessage) ([]RateLimit, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var out []RateLimit
	err := json.Unmarshal(raw, &out)
	return out, err
}

// Filter narrows a list of integrations or providers; empty fields do not
// filter.
type Filter struct {
	OrganisationID string
	// WorkspaceID: for providers, the workspace they belong to; for
	// integrations, a workspace they are shared with.
	WorkspaceID string
	// Tags must all match (key and value).
	Tags           map[string]string
	Page, PageSize int
}
