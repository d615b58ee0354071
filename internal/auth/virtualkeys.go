package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/secret"
)

// ResolvedVirtualKey is a virtual key with its credential opened, as the
// data plane uses it. It lives only in memory.
type ResolvedVirtualKey struct {
	Slug        string
	WorkspaceID string
	Provider    string
	APIKey      string
	CustomHost  string
	Options     map[string]string
}

// VirtualKeys opens virtual keys for the data plane through a cache of
// opened credentials, invalidated when the control plane changes a key.
type VirtualKeys struct {
	store KeyStore
	box   *secret.Box
	ttl   time.Duration
	now   func() time.Time

	mu    sync.RWMutex
	cache map[string]cachedVK
}

type cachedVK struct {
	vk    *ResolvedVirtualKey
	err   error
	until time.Time
}

// NewVirtualKeys returns a resolver caching opened keys for ttl.
func NewVirtualKeys(store KeyStore, box *secret.Box, ttl time.Duration) *VirtualKeys {
	return &VirtualKeys{store: store, box: box, ttl: ttl, now: time.Now, cache: make(map[string]cachedVK)}
}

// SealAAD binds a sealed credential to its virtual key's id.
func SealAAD(vk *VirtualKey) []byte { return []byte("virtual-key:" + vk.ID) }

// Resolve returns the organisation's virtual key slug, opened: 401 for an
// unknown, expired or disabled key, as an invalid credential would be.
func (v *VirtualKeys) Resolve(ctx context.Context, organisationID, slug string) (*ResolvedVirtualKey, error) {
	ck := organisationID + "\x00" + slug
	now := v.now()
	v.mu.RLock()
	c, ok := v.cache[ck]
	v.mu.RUnlock()
	if ok && now.Before(c.until) {
		return c.vk, c.err
	}
	vk, err := v.store.VirtualKeyBySlug(ctx, organisationID, slug)
	switch {
	case errors.Is(err, httpx.ErrNotFound):
		c = cachedVK{err: httpx.Unauthorized("invalid_virtual_key", fmt.Sprintf("virtual key %q not found", slug)), until: now.Add(negativeTTL)}
	case err != nil:
		return nil, &httpx.Error{Status: 503, Type: httpx.TypeServer, Code: "virtual_key_unavailable", Message: "cannot read the virtual key right now", Err: err}
	case vk.Status != StatusActive || (vk.ExpiresAt != nil && !now.Before(*vk.ExpiresAt)):
		c = cachedVK{err: httpx.Unauthorized("inactive_virtual_key", fmt.Sprintf("virtual key %q is %s", slug, inactiveWord(vk, now))), until: now.Add(negativeTTL)}
	default:
		apiKey, secrets, oerr := OpenCredentials(v.box, vk)
		if oerr != nil {
			return nil, &httpx.Error{Status: 500, Type: httpx.TypeServer, Code: "virtual_key_unreadable", Message: "the virtual key's credential cannot be decrypted with this deployment's encryption key", Err: oerr}
		}
		until := now.Add(v.ttl)
		if vk.ExpiresAt != nil && vk.ExpiresAt.Before(until) {
			until = *vk.ExpiresAt
		}
		opts := make(map[string]string, len(vk.Options)+len(secrets))
		for k, val := range vk.Options {
			opts[k] = val
		}
		for k, val := range secrets {
			opts[k] = val
		}
		c = cachedVK{vk: &ResolvedVirtualKey{Slug: vk.Slug, WorkspaceID: vk.WorkspaceID, Provider: vk.Provider, APIKey: apiKey, CustomHost: vk.CustomHost, Options: opts}, until: until}
	}
	v.mu.Lock()
	v.cache[ck] = c
	v.mu.Unlock()
	return c.vk, c.err
}

func inactiveWord(vk *VirtualKey, now time.Time) string {
	if vk.ExpiresAt != nil && !now.Before(*vk.ExpiresAt) {
		return "expired"
	}
	return vk.Status
}

// Invalidate drops the cached copies of the organisation's key slug.
func (v *VirtualKeys) Invalidate(organisationID, slug string) {
	v.mu.Lock()
	delete(v.cache, organisationID+"\x00"+slug)
	v.mu.Unlock()
}

// SecretOptions are provider settings that are credentials: they are sealed
// with the API key, never stored in clear or returned.
var SecretOptions = map[string]bool{
	"aws_access_key_id": true, "aws_secret_access_key": true, "aws_session_token": true,
	"vertex_service_account_json": true, "azure_entra_client_secret": true,
}

// IsSecretField reports whether a config or virtual-key field holds a
// credential: the API key or a secret provider option. Every place that
// masks or redacts credentials asks here, so the list lives in one place.
func IsSecretField(name string) bool { return name == "api_key" || SecretOptions[name] }

// sealedCredentials is the plaintext a virtual key seals.
type sealedCredentials struct {
	APIKey  string            `json:"api_key"`
	Secrets map[string]string `json:"secrets,omitempty"`
}

// SealCredentials seals apiKey and the secret provider options into
// vk.SealedKey, bound to vk.ID (which must be set).
func SealCredentials(box *secret.Box, vk *VirtualKey, apiKey string, secrets map[string]string) error {
	b, err := json.Marshal(sealedCredentials{APIKey: apiKey, Secrets: secrets})
	if err != nil {
		return err
	}
	vk.SealedKey = box.Seal(b, SealAAD(vk))
	return nil
}

// OpenCredentials reverses SealCredentials.
func OpenCredentials(box *secret.Box, vk *VirtualKey) (apiKey string, secrets map[string]string, err error) {
	pt, err := box.Open(vk.SealedKey, SealAAD(vk))
	if err != nil {
		return "", nil, err
	}
	var sc sealedCredentials
	if err := json.Unmarshal(pt, &sc); err != nil {
		return "", nil, fmt.Errorf("auth: sealed credentials: %w", err)
	}
	return sc.APIKey, sc.Secrets, nil
}
