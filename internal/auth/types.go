// Package auth owns who a request is: API keys (hashing, the in-memory
// lookup cache), virtual keys (provider credentials sealed at rest), and the
// Principal carried in the request context.
//
// auth imports only httpx and secret; the store satisfies its interfaces.
package auth

import (
	"encoding/json"
	"time"
)

// Key statuses.
const (
	StatusActive  = "active"
	StatusExpired = "expired"
	StatusRevoked = "revoked"
)

// Key types and subtypes (API.md §6: /api-keys/{organisation|workspace}/{service|user}).
const (
	KeyTypeOrganisation = "organisation"
	KeyTypeWorkspace    = "workspace"
	KeySubtypeService   = "service"
	KeySubtypeUser      = "user"
)

// APIKey is a gateway API key as stored. Only the SHA-256 hash of the raw
// key is kept; Mask is a display form such as "gw-AbC…wxyz".
type APIKey struct {
	ID             string          `json:"id" db:"id"`
	OrganisationID string          `json:"organisation_id" db:"organisation_id"`
	WorkspaceID    string          `json:"workspace_id,omitempty" db:"workspace_id"`
	UserID         string          `json:"user_id,omitempty" db:"user_id"`
	Name           string          `json:"name" db:"name"`
	Description    string          `json:"description,omitempty" db:"description"`
	Type           string          `json:"type" db:"type"`
	Subtype        string          `json:"sub_type" db:"subtype"`
	Hash           string          `json:"-" db:"key_hash"`
	Mask           string          `json:"key" db:"key_mask"`
	Scopes         []string        `json:"scopes" db:"-"`
	Status         string          `json:"status" db:"status"`
	Defaults       json.RawMessage `json:"defaults,omitempty" db:"-"`
	RateLimits     json.RawMessage `json:"rate_limits,omitempty" db:"-"`
	UsageLimits    json.RawMessage `json:"usage_limits,omitempty" db:"-"`
	AlertEmails    []string        `json:"alert_emails,omitempty" db:"-"`
	// ExpiresAt is the key's expiry. A key found by the hash it had before
	// a rotation carries the end of the rotation's transition here when
	// that comes first.
	ExpiresAt *time.Time `json:"expires_at,omitempty" db:"expires_at"`
	CreatedAt time.Time  `json:"created_at" db:"created_at"`
	UpdatedAt time.Time  `json:"last_updated_at" db:"updated_at"`
}

// APIKeyFilter narrows an API-key list; empty fields do not filter.
type APIKeyFilter struct {
	OrganisationID string
	WorkspaceID    string
	UserID         string
	Type           string
	Status         string
	Page, PageSize int
}

// VirtualKey is a stored provider credential. SealedKey is the AES-256-GCM
// ciphertext of the provider API key; it is never returned by any endpoint.
type VirtualKey struct {
	ID             string            `json:"id"`
	Slug           string            `json:"slug"`
	OrganisationID string            `json:"organisation_id"`
	WorkspaceID    string            `json:"workspace_id"`
	Name           string            `json:"name"`
	Note           string            `json:"note,omitempty"`
	Provider       string            `json:"provider"`
	SealedKey      []byte            `json:"-"`
	CustomHost     string            `json:"custom_host,omitempty"`
	Options        map[string]string `json:"provider_options,omitempty"`
	UsageLimits    json.RawMessage   `json:"usage_limits,omitempty"`
	RateLimits     json.RawMessage   `json:"rate_limits,omitempty"`
	Status         string            `json:"status"`
	ExpiresAt      *time.Time        `json:"expires_at,omitempty"`
	CreatedAt      time.Time         `json:"created_at"`
	UpdatedAt      time.Time         `json:"last_updated_at"`
}
