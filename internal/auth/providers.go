package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/registry"
	"github.com/ai-gateway/gateway/internal/secret"
)

// ProviderStore reads what the data plane needs to route through a stored
// provider (x-gateway-provider: @slug).
type ProviderStore interface {
	// ProviderBySlug returns the provider with slug in the organisation's
	// workspace whose id or slug is workspace (httpx.ErrNotFound if none).
	ProviderBySlug(ctx context.Context, organisationID, workspace, slug string) (*registry.Provider, error)
	// Integration returns an integration with its allow-list and sharing.
	Integration(ctx context.Context, organisationID, slugOrID string) (*registry.Integration, error)
}

// ResolvedProvider is a stored provider with its integration's credential
// opened, as the data plane routes with it. It lives only in memory.
type ResolvedProvider struct {
	ID          string
	Slug        string
	WorkspaceID string
	// Integration is the integration as stored (SealedKey included); its
	// ModelAllowed applies the allow-list.
	Integration *registry.Integration
	// AIProvider is the adapter's slug.
	AIProvider string
	APIKey     string
	CustomHost string
	// Options are the integration's provider options, secret ones opened.
	Options map[string]string
	// RateLimits are the provider's own; IntegrationRateLimits the
	// integration's, shared by every provider that uses it.
	RateLimits            []registry.RateLimit
	IntegrationRateLimits []registry.RateLimit
}

// ErrUnknownProvider is wrapped by Resolve for a slug that names no
// provider in the workspace, so that the caller can word the answer with
// the header or config field that named it.
var ErrUnknownProvider = errors.New("unknown provider")

// Providers resolves stored providers for the data plane through a cache
// keyed by organisation, workspace and slug, invalidated when the control
// plane changes a provider or its integration (other processes see the
// change within the TTL).
type Providers struct {
	store ProviderStore
	box   *secret.Box
	ttl   time.Duration
	now   func() time.Time

	mu    sync.RWMutex
	cache map[string]cachedProvider
}

type cachedProvider struct {
	p     *ResolvedProvider
	err   error
	until time.Time
	// integrationID lets InvalidateIntegration find the entries it owns.
	integrationID string
}

// NewProviders returns a resolver caching opened providers for ttl.
func NewProviders(store ProviderStore, box *secret.Box, ttl time.Duration) *Providers {
	return &Providers{store: store, box: box, ttl: ttl, now: time.Now, cache: make(map[string]cachedProvider)}
}

func providerCacheKey(organisationID, workspace, slug string) string {
	return organisationID + "\x00" + workspace + "\x00" + slug
}

// Resolve returns the provider slug (without its "@") of the organisation's
// workspace (an id or a slug), with its integration opened. An unknown
// slug wraps ErrUnknownProvider; a disabled provider or integration, or an
// integration no longer shared with the workspace, is a 403.
func (v *Providers) Resolve(ctx context.Context, organisationID, workspace, slug string) (*ResolvedProvider, error) {
	ck := providerCacheKey(organisationID, workspace, slug)
	now := v.now()
	v.mu.RLock()
	c, ok := v.cache[ck]
	v.mu.RUnlock()
	if ok && now.Before(c.until) {
		return c.p, c.err
	}
	c, err := v.load(ctx, organisationID, workspace, slug, now)
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	v.cache[ck] = c
	v.mu.Unlock()
	return c.p, c.err
}

// load reads and opens a provider. Its error result is for failures not
// to be cached (storage, decryption); the answer's own err is cached.
func (v *Providers) load(ctx context.Context, organisationID, workspace, slug string, now time.Time) (cachedProvider, error) {
	p, err := v.store.ProviderBySlug(ctx, organisationID, workspace, slug)
	if errors.Is(err, httpx.ErrNotFound) {
		return cachedProvider{err: fmt.Errorf("provider %q: %w", "@"+slug, ErrUnknownProvider), until: now.Add(negativeTTL)}, nil
	}
	if err != nil {
		return cachedProvider{}, providerUnavailable(err)
	}
	in, err := v.store.Integration(ctx, organisationID, p.IntegrationID)
	if errors.Is(err, httpx.ErrNotFound) {
		return cachedProvider{err: fmt.Errorf("provider %q: its integration is gone: %w", "@"+slug, ErrUnknownProvider), until: now.Add(negativeTTL)}, nil
	}
	if err != nil {
		return cachedProvider{}, providerUnavailable(err)
	}
	c := cachedProvider{until: now.Add(v.ttl), integrationID: in.ID}
	switch {
	case p.Status != registry.StatusActive:
		c.err = httpx.Forbidden("provider_disabled", fmt.Sprintf("provider %q is %s", "@"+slug, p.Status))
	case in.Status != registry.StatusActive:
		c.err = httpx.Forbidden("integration_disabled", fmt.Sprintf("the integration of provider %q is %s", "@"+slug, in.Status))
	case !in.SharedWith(p.WorkspaceID):
		c.err = httpx.Forbidden("integration_not_shared", fmt.Sprintf("the integration of provider %q is no longer shared with this workspace", "@"+slug))
	}
	if c.err != nil {
		return c, nil
	}
	apiKey, secrets, err := OpenIntegration(v.box, in)
	if err != nil {
		return cachedProvider{}, &httpx.Error{Status: 500, Type: httpx.TypeServer, Code: "integration_unreadable",
			Message: "the integration's credential cannot be decrypted with this deployment's encryption key", Err: err}
	}
	rp := &ResolvedProvider{ID: p.ID, Slug: p.Slug, WorkspaceID: p.WorkspaceID, Integration: in, AIProvider: in.AIProvider,
		APIKey: apiKey, CustomHost: in.CustomHost, Options: make(map[string]string, len(in.Options)+len(secrets))}
	for k, val := range in.Options {
		rp.Options[k] = val
	}
	for k, val := range secrets {
		rp.Options[k] = val
	}
	// The control plane validated both before storing them; a stored value
	// that no longer parses enforces nothing rather than failing requests.
	rp.RateLimits, _ = registry.ParseRateLimits(p.RateLimits)
	rp.IntegrationRateLimits, _ = registry.ParseRateLimits(in.RateLimits)
	c.p = rp
	return c, nil
}

func providerUnavailable(err error) error {
	return &httpx.Error{Status: 503, Type: httpx.TypeServer, Code: "provider_unavailable", Message: "cannot read the provider right now", Err: err}
}

// InvalidateProvider drops the cached copies of the organisation's
// provider slug, whichever workspace id or slug they were cached under
// (an organisation key may name its workspace by slug), and the negative
// entries that remembered the slug as unknown.
func (v *Providers) InvalidateProvider(organisationID, slug string) {
	prefix, suffix := organisationID+"\x00", "\x00"+slug
	v.mu.Lock()
	defer v.mu.Unlock()
	for k := range v.cache {
		if strings.HasPrefix(k, prefix) && strings.HasSuffix(k, suffix) {
			delete(v.cache, k)
		}
	}
}

// InvalidateIntegration drops every cached provider that uses the
// integration.
func (v *Providers) InvalidateIntegration(organisationID, integrationID string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	prefix := organisationID + "\x00"
	for k, c := range v.cache {
		if c.integrationID == integrationID && strings.HasPrefix(k, prefix) {
			delete(v.cache, k)
		}
	}
}

// Invalidate drops whatever key names: a provider slug or an integration
// id. It lets one slug-or-id invalidation message (another process's
// change, relayed) cover both kinds of change.
func (v *Providers) Invalidate(organisationID, key string) {
	v.InvalidateProvider(organisationID, key)
	v.InvalidateIntegration(organisationID, key)
}

// IntegrationAAD binds an integration's sealed credential to its id.
func IntegrationAAD(in *registry.Integration) []byte { return []byte("integration:" + in.ID) }

// SealIntegration seals apiKey and the secret provider options into
// in.SealedKey, bound to in.ID (which must be set).
func SealIntegration(box *secret.Box, in *registry.Integration, apiKey string, secrets map[string]string) error {
	if in.ID == "" {
		return errors.New("auth: seal integration: id is required")
	}
	b, err := json.Marshal(sealedCredentials{APIKey: apiKey, Secrets: secrets})
	if err != nil {
		return err
	}
	in.SealedKey = box.Seal(b, IntegrationAAD(in))
	return nil
}

// OpenIntegration reverses SealIntegration. An integration without a
// sealed credential has none.
func OpenIntegration(box *secret.Box, in *registry.Integration) (apiKey string, secrets map[string]string, err error) {
	if len(in.SealedKey) == 0 {
		return "", nil, nil
	}
	pt, err := box.Open(in.SealedKey, IntegrationAAD(in))
	if err != nil {
		return "", nil, fmt.Errorf("auth: open integration %s: %w", in.ID, err)
	}
	var sc sealedCredentials
	if err := json.Unmarshal(pt, &sc); err != nil {
		return "", nil, fmt.Errorf("auth: integration %s: sealed credentials: %w", in.ID, err)
	}
	return sc.APIKey, sc.Secrets, nil
}
