package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/ai-gateway/gateway/internal/httpx"
)

// KeyPrefix starts every generated gateway API key, so a leaked key is
// recognisable by secret scanners.
const KeyPrefix = "gw-"

const keyAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// GenerateKey returns a new random API key: KeyPrefix and 40 base62
// characters (about 238 bits).
func GenerateKey() string {
	b := make([]byte, 40)
	if _, err := rand.Read(b); err != nil {
		panic("auth: crypto/rand failed: " + err.Error())
	}
	out := make([]byte, 0, len(KeyPrefix)+len(b))
	out = append(out, KeyPrefix...)
	for _, c := range b {
		// 248 = 4*62: rejection-free enough for display; bias below 1%.
		out = append(out, keyAlphabet[int(c)%len(keyAlphabet)])
	}
	return string(out)
}

// HashKey returns the SHA-256 hex digest under which a raw key is stored.
// API keys are high-entropy random strings, so a fast hash is sufficient.
func HashKey(raw string) string {
	sum := sha256.Sum256([]byte(raw))
	return hex.EncodeToString(sum[:])
}

// MaskKey returns the display form of a raw key: its first 7 and last 4
// characters.
func MaskKey(raw string) string {
	if len(raw) <= 12 {
		return "****"
	}
	return raw[:7] + "…" + raw[len(raw)-4:]
}

// Scopes a data-plane or control-plane call may need (API.md §2).
const (
	ScopeCompletionsWrite  = "completions.write"
	ScopeVirtualKeysCreate = "virtual_keys.create"
	ScopeVirtualKeysRead   = "virtual_keys.read"
	ScopeVirtualKeysUpdate = "virtual_keys.update"
	ScopeVirtualKeysDelete = "virtual_keys.delete"
	ScopeVirtualKeysList   = "virtual_keys.list"
	ScopeLogsList          = "logs.list"
	ScopeLogsView          = "logs.view"
	ScopeLogsWrite         = "logs.write"
	ScopeLogsExport        = "logs.export"
	ScopeAll               = "*"
)

// AdminScopes are given to the bootstrap organisation admin key: every
// scope (API.md §2).
var AdminScopes = []string{ScopeAll}

// Principal is the authenticated caller of a request.
type Principal struct {
	OrganisationID string
	// WorkspaceID is the key's workspace, or for an organisation key the
	// organisation's default workspace.
	WorkspaceID string
	APIKeyID    string
	KeyType     string
	UserID      string
	Scopes      []string
	Defaults    []byte
	// Method is how the caller authenticated: MethodAPIKey (the zero
	// value), MethodJWT or MethodSession.
	Method string
	// Subject names a caller that is neither an API key nor a known user:
	// a JWT's sub for a service identity. The audit log uses it as actor.
	Subject string
}

// Authentication methods of a Principal.
const (
	MethodAPIKey  = ""
	MethodJWT     = "jwt"
	MethodSession = "session"
)

// Verifier authenticates a credential that is not a gateway API key but is
// sent in the same place (x-gateway-api-key): a JWT, an SSO session token.
type Verifier interface {
	// Claims reports, cheaply and without I/O, whether raw is this
	// verifier's kind of credential; the first verifier that claims a
	// credential decides it.
	Claims(raw string) bool
	// Verify resolves raw to a principal, or answers 401 (or 503 when
	// what it checks against is unreachable).
	Verify(ctx context.Context, raw string) (*Principal, error)
}

// Can reports whether the principal holds scope, in either spelling of
// the deployment scopes.
func (p *Principal) Can(scope string) bool {
	if slices.Contains(p.Scopes, ScopeAll) || slices.Contains(p.Scopes, scope) {
		return true
	}
	norm := NormalizeScope(scope)
	return slices.ContainsFunc(p.Scopes, func(s string) bool { return NormalizeScope(s) == norm })
}

// Require returns a 403 unless the principal holds scope.
func (p *Principal) Require(scope string) error {
	if p.Can(scope) {
		return nil
	}
	return httpx.Forbidden("missing_scope", "this API key lacks the scope "+scope)
}

// IsOrganisationKey reports whether the key acts for the whole organisation.
func (p *Principal) IsOrganisationKey() bool { return p.KeyType == KeyTypeOrganisation }

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the request's principal, nil if unauthenticated.
func PrincipalFrom(ctx context.Context) *Principal {
	p, _ := ctx.Value(principalKey{}).(*Principal)
	return p
}

// Authenticator checks x-gateway-api-key against hashed keys through an
// in-memory cache, so the hot path does not touch the database.
type Authenticator struct {
	store KeyStore
	ttl   time.Duration
	now   func() time.Time

	mu    sync.RWMutex
	cache map[string]cachedKey

	verifiers []Verifier
}

// AddVerifier makes a accept another kind of credential. Call it before
// serving: the list is not guarded.
func (a *Authenticator) AddVerifier(v Verifier) { a.verifiers = append(a.verifiers, v) }

type cachedKey struct {
	p       *Principal // nil: key unknown (negative entry)
	expires *time.Time // the key's own expiry
	until   time.Time  // cache entry expiry
}

// negativeTTL bounds how long an unknown key is remembered, so a flood of
// bad keys does not reach the database while a new key works quickly.
const negativeTTL = 5 * time.Second

// NewAuthenticator returns an Authenticator caching lookups for ttl.
func NewAuthenticator(store KeyStore, ttl time.Duration) *Authenticator {
	return &Authenticator{store: store, ttl: ttl, now: time.Now, cache: make(map[string]cachedKey)}
}

// Authenticate resolves a raw API key to a principal: 401 when it is
// missing, unknown, expired or not active.
func (a *Authenticator) Authenticate(ctx context.Context, raw string) (*Principal, error) {
	if raw == "" {
		return nil, httpx.Unauthorized("missing_api_key", "missing x-gateway-api-key header")
	}
	for _, v := range a.verifiers {
		if v.Claims(raw) {
			return v.Verify(ctx, raw)
		}
	}
	// The cache is keyed by the raw key, so a cached request costs a map
	// lookup rather than a SHA-256; the raw key is in this process's memory
	// for the request anyway. Storage only ever sees the hash.
	now := a.now()
	a.mu.RLock()
	c, ok := a.cache[raw]
	a.mu.RUnlock()
	if !ok || now.After(c.until) {
		var err error
		c, err = a.load(ctx, HashKey(raw), now)
		if err != nil {
			return nil, err
		}
		a.mu.Lock()
		if len(a.cache) > 100_000 {
			clear(a.cache) // bound memory under a key-guessing flood
		}
		a.cache[raw] = c
		a.mu.Unlock()
	}
	if c.p == nil {
		return nil, httpx.Unauthorized("invalid_api_key", "invalid x-gateway-api-key")
	}
	if c.expires != nil && !now.Before(*c.expires) {
		return nil, httpx.Unauthorized("expired_api_key", "this API key has expired")
	}
	return c.p, nil
}

func (a *Authenticator) load(ctx context.Context, hash string, now time.Time) (cachedKey, error) {
	k, err := a.store.APIKeyByHash(ctx, hash)
	if errors.Is(err, httpx.ErrNotFound) {
		return cachedKey{until: now.Add(negativeTTL)}, nil
	}
	if err != nil {
		return cachedKey{}, &httpx.Error{Status: 503, Type: httpx.TypeServer, Code: "auth_unavailable", Message: "cannot verify the API key right now", Err: err}
	}
	if k.Status != StatusActive {
		return cachedKey{until: now.Add(negativeTTL)}, nil
	}
	ws := k.WorkspaceID
	if ws == "" {
		ws, err = a.store.DefaultWorkspaceID(ctx, k.OrganisationID)
		if err != nil {
			return cachedKey{}, &httpx.Error{Status: 503, Type: httpx.TypeServer, Code: "auth_unavailable", Message: "cannot verify the API key right now", Err: err}
		}
	}
	p := &Principal{
		OrganisationID: k.OrganisationID, WorkspaceID: ws, APIKeyID: k.ID, KeyType: k.Type,
		UserID: k.UserID, Scopes: k.Scopes, Defaults: k.Defaults,
	}
	return cachedKey{p: p, expires: k.ExpiresAt, until: now.Add(a.ttl)}, nil
}

// Invalidate drops every cached key, after a key changed.
func (a *Authenticator) Invalidate() {
	a.mu.Lock()
	clear(a.cache)
	a.mu.Unlock()
}
