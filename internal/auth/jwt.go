package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"

	"github.com/ai-gateway/gateway/internal/httpx"
)

// The claims a gateway JWT carries beside the registered ones (API.md §2
// "JWT"; README "JWT authentication").
const (
	ClaimEmail        = "email"
	ClaimOrganisation = "gateway_oid"
	ClaimWorkspace    = "gateway_workspace"
	ClaimScope        = "scope"
	ClaimScopes       = "scopes"
)

// JWTLeeway is the clock skew allowed on nbf and iat (API.md §2). exp has
// none: like an API key, a token past its expiry is rejected at once.
const JWTLeeway = 60 * time.Second

// jwtMethods are the only signing algorithms accepted: asymmetric, so the
// gateway holds no secret that could mint tokens.
var jwtMethods = []string{jwt.SigningMethodRS256.Alg(), jwt.SigningMethodES256.Alg()}

// ErrJWT marks every JWT authentication failure, so that callers (the
// data plane's audit of failures) can tell them from API-key failures with
// errors.Is.
var ErrJWT = errors.New("JWT authentication failed")

// JWTDirectory is what JWT verification looks up in the organisation.
// Lookups that find nothing return an error wrapping httpx.ErrNotFound.
type JWTDirectory interface {
	// UserID returns the id of the organisation's user whose id or email
	// is idOrEmail.
	UserID(ctx context.Context, organisationID, idOrEmail string) (string, error)
	// WorkspaceID returns the id of the organisation's workspace whose id
	// or slug is idOrSlug.
	WorkspaceID(ctx context.Context, organisationID, idOrSlug string) (string, error)
	// DefaultWorkspaceID returns the organisation's default workspace.
	DefaultWorkspaceID(ctx context.Context, organisationID string) (string, error)
}

// JWTOptions configure a JWTVerifier. JWKSURL, OrganisationID and
// Directory are required; zero durations take the defaults below.
type JWTOptions struct {
	// JWKSURL is where the signing keys are published (GATEWAY_JWT_JWKS_URL).
	JWKSURL string
	// Audience and Issuer, when set, must match the token's aud and iss.
	Audience, Issuer string
	// OrganisationID is the gateway's organisation: the one a token without
	// gateway_oid acts in, and the only one a token may name.
	OrganisationID string
	Directory      JWTDirectory
	// CacheTTL bounds how long a verified token is remembered (default
	// 1 minute); never past the token's exp.
	CacheTTL time.Duration
	// RefreshInterval is how often the JWKS is fetched again (default
	// 10 minutes).
	RefreshInterval time.Duration
	// UnknownKIDInterval is the least time between the refreshes that a
	// token with an unknown kid triggers (default 30 s), so a rotated key
	// works at once while a flood of made-up kids cannot hammer the JWKS.
	UnknownKIDInterval time.Duration
	// HTTPClient fetches the JWKS (default: a client with a 10 s timeout).
	HTTPClient *http.Client
	Logger     *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// JWTVerifier authenticates JWTs sent in x-gateway-api-key against a JWKS
// (API.md §2 "JWT"). Keys are cached and refreshed by keyfunc; verified
// tokens are cached by their raw string so the hot path does not verify a
// signature on every request. Failures are not cached: an unknown kid is
// throttled by the refresh rate limit, every other failure costs at most
// one signature check.
type JWTVerifier struct {
	o    JWTOptions
	keys keyfunc.Keyfunc
	now  func() time.Time

	mu    sync.RWMutex
	cache map[string]cachedJWT
}

var _ Verifier = (*JWTVerifier)(nil)

type cachedJWT struct {
	p     *Principal
	until time.Time // min(exp, verification time + CacheTTL)
}

// maxJWTCache bounds the verified-token cache; it is cleared when full.
const maxJWTCache = 10_000

// jwksHTTPTimeout bounds one JWKS fetch, also the one an unknown kid
// triggers inside a request.
const jwksHTTPTimeout = 10 * time.Second

// NewJWTVerifier fetches the JWKS once (a failure is logged, not returned:
// the keys are fetched again on the next unknown kid) and starts keyfunc's
// refresh goroutine, which ends when ctx is done.
func NewJWTVerifier(ctx context.Context, o JWTOptions) (*JWTVerifier, error) {
	if o.JWKSURL == "" || o.OrganisationID == "" || o.Directory == nil {
		return nil, errors.New("auth: JWT verifier needs a JWKS URL, an organisation and a directory")
	}
	if o.CacheTTL <= 0 {
		o.CacheTTL = time.Minute
	}
	if o.RefreshInterval <= 0 {
		o.RefreshInterval = 10 * time.Minute
	}
	if o.UnknownKIDInterval <= 0 {
		o.UnknownKIDInterval = 30 * time.Second
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: jwksHTTPTimeout}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	noErrorFirst := true
	log := o.Logger
	keys, err := keyfunc.NewDefaultOverrideCtx(ctx, []string{o.JWKSURL}, keyfunc.Override{
		Client:                    o.HTTPClient,
		HTTPTimeout:               jwksHTTPTimeout,
		NoErrorReturnFirstHTTPReq: &noErrorFirst,
		RefreshInterval:           o.RefreshInterval,
		// One refresh per interval; a request that would have to wait for
		// the next one longer than a fetch may take fails at once with
		// unknown_key_id. The wait bound also bounds the fetch itself.
		RefreshUnknownKID: rate.NewLimiter(rate.Every(o.UnknownKIDInterval), 1),
		RateLimitWaitMax:  jwksHTTPTimeout,
		RefreshErrorHandlerFunc: func(u string) func(context.Context, error) {
			return func(ctx context.Context, err error) {
				log.WarnContext(ctx, "cannot fetch the JWT signing keys", "url", u, "err", err)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("auth: JWKS %s: %w", o.JWKSURL, err)
	}
	return &JWTVerifier{o: o, keys: keys, now: o.Now, cache: make(map[string]cachedJWT)}, nil
}

// Claims reports whether raw looks like a compact JWS: a base64url JSON
// header ("eyJ" is `{"`) and exactly three parts. Gateway API keys start
// with KeyPrefix, so the two never collide.
func (v *JWTVerifier) Claims(raw string) bool {
	return LooksLikeJWT(raw)
}

// LooksLikeJWT is the cheap shape test of Claims.
func LooksLikeJWT(raw string) bool {
	return strings.HasPrefix(raw, "eyJ") && strings.Count(raw, ".") == 2
}

// Verify checks raw's signature, expiry and claims and resolves it to a
// principal. Every error is an *httpx.Error wrapping ErrJWT: 401 for a
// token that is not acceptable, 503 when the directory is unreachable.
func (v *JWTVerifier) Verify(ctx context.Context, raw string) (*Principal, error) {
	now := v.now()
	v.mu.RLock()
	c, ok := v.cache[raw]
	v.mu.RUnlock()
	if ok && now.Before(c.until) {
		return c.p, nil
	}
	claims, exp, err := v.parse(ctx, raw, now)
	if err != nil {
		return nil, err
	}
	p, err := v.principal(ctx, claims)
	if err != nil {
		return nil, err
	}
	until := now.Add(v.o.CacheTTL)
	if exp.Before(until) {
		until = exp
	}
	v.mu.Lock()
	if len(v.cache) >= maxJWTCache {
		clear(v.cache)
	}
	v.cache[raw] = cachedJWT{p: p, until: until}
	v.mu.Unlock()
	return p, nil
}

// gatewayClaims are the claims of a gateway JWT.
type gatewayClaims struct {
	jwt.RegisteredClaims
	Email          string    `json:"email"`
	OrganisationID string    `json:"gateway_oid"`
	Workspace      string    `json:"gateway_workspace"`
	Scope          scopeList `json:"scope"`
	Scopes         scopeList `json:"scopes"`
}

// scopeList reads a scope claim written either as one space-separated
// string (RFC 8693 "scope") or as an array of strings.
type scopeList []string

// UnmarshalJSON accepts a string, an array of strings or null.
func (s *scopeList) UnmarshalJSON(b []byte) error {
	var str string
	if err := json.Unmarshal(b, &str); err == nil {
		*s = strings.Fields(str)
		return nil
	}
	var arr []string
	if err := json.Unmarshal(b, &arr); err != nil {
		return errors.New("scope claims must be a string or an array of strings")
	}
	*s = arr
	return nil
}

// grantedScopes returns the known scopes of both scope claims, in their
// canonical spelling, without duplicates. Unknown names (an identity
// provider's "openid profile", or "*") grant nothing and are ignored.
func (c *gatewayClaims) grantedScopes() []string {
	out := []string{}
	seen := map[string]bool{}
	for _, s := range append(append([]string{}, c.Scope...), c.Scopes...) {
		n := NormalizeScope(s)
		if KnownScope(n) && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// parse verifies raw and returns its claims and expiry.
func (v *JWTVerifier) parse(ctx context.Context, raw string, now time.Time) (*gatewayClaims, time.Time, error) {
	opts := []jwt.ParserOption{
		jwt.WithValidMethods(jwtMethods), jwt.WithExpirationRequired(), jwt.WithIssuedAt(),
		jwt.WithLeeway(JWTLeeway), jwt.WithTimeFunc(func() time.Time { return now }),
	}
	if v.o.Audience != "" {
		opts = append(opts, jwt.WithAudience(v.o.Audience))
	}
	if v.o.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(v.o.Issuer))
	}
	var claims gatewayClaims
	tok, err := jwt.NewParser(opts...).ParseWithClaims(raw, &claims, v.keyfunc(ctx))
	if err != nil {
		return nil, time.Time{}, jwtError(tok, err)
	}
	exp := claims.ExpiresAt.Time
	// The parser's leeway covers exp too; the contract gives it to nbf and
	// iat only.
	if !now.Before(exp) {
		return nil, time.Time{}, jwtFailure("expired_token", "the JWT has expired", jwt.ErrTokenExpired)
	}
	return &claims, exp, nil
}

// errNoKID rejects a token whose header names no key: the JWKS is looked
// up by kid (API.md §2), never by trying every key.
var errNoKID = errors.New("the JWT header has no kid")

// errUnknownKID rejects a token whose kid is not in the JWKS, even after
// the refresh it may trigger.
var errUnknownKID = errors.New("the JWT's kid is not in the JWKS")

// keyfunc looks the token's kid up in the JWKS; keyfunc refreshes the set
// (rate-limited) when the kid is unknown, which picks up a rotated key.
func (v *JWTVerifier) keyfunc(ctx context.Context) jwt.Keyfunc {
	lookup := v.keys.KeyfuncCtx(ctx)
	return func(t *jwt.Token) (any, error) {
		kid, _ := t.Header[jwkset.HeaderKID].(string)
		if kid == "" {
			return nil, errNoKID
		}
		key, err := lookup(t)
		// A refresh refused by the rate limit fails with the limiter's
		// error rather than jwkset.ErrKeyNotFound: judge by the key set.
		if err != nil && !v.hasKID(ctx, kid) {
			return nil, fmt.Errorf("%w: %q: %w", errUnknownKID, kid, err)
		}
		return key, err
	}
}

// hasKID reports whether the cached key set holds kid.
func (v *JWTVerifier) hasKID(ctx context.Context, kid string) bool {
	keys, err := v.keys.Storage().KeyReadAll(ctx)
	if err != nil {
		return false
	}
	for _, k := range keys {
		if k.Marshal().KID == kid {
			return true
		}
	}
	return false
}

// jwtError maps a parser error to the 401 the caller sees.
func jwtError(tok *jwt.Token, err error) error {
	switch {
	case errors.Is(err, errNoKID):
		return jwtFailure("invalid_token", "the JWT header has no kid", err)
	case errors.Is(err, errUnknownKID), errors.Is(err, jwkset.ErrKeyNotFound):
		return jwtFailure("unknown_key_id", "the JWT's kid is not in the JWKS", err)
	case errors.Is(err, keyfunc.ErrKeyfunc):
		return jwtFailure("invalid_token", "the JWT's key cannot be used: "+keyfuncReason(err), err)
	case errors.Is(err, jwt.ErrTokenMalformed):
		return jwtFailure("invalid_token", "the JWT is malformed", err)
	case errors.Is(err, jwt.ErrTokenSignatureInvalid) && tok != nil && !allowedAlg(tok):
		return jwtFailure("invalid_token", "the JWT's alg must be RS256 or ES256", err)
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return jwtFailure("invalid_token_signature", "the JWT's signature does not verify", err)
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing) && (tok == nil || missingExp(tok)):
		return jwtFailure("invalid_token", "the JWT has no exp claim", err)
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		// The other required claim is aud, when an audience is configured.
		return jwtFailure("invalid_audience", "the JWT has no aud claim", err)
	case errors.Is(err, jwt.ErrTokenExpired):
		return jwtFailure("expired_token", "the JWT has expired", err)
	case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return jwtFailure("token_not_yet_valid", "the JWT is not valid yet (nbf or iat in the future)", err)
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return jwtFailure("invalid_audience", "the JWT's aud does not name this gateway", err)
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return jwtFailure("invalid_issuer", "the JWT's iss is not the configured issuer", err)
	}
	return jwtFailure("invalid_token", "the JWT is not valid", err)
}

func missingExp(tok *jwt.Token) bool {
	c, ok := tok.Claims.(*gatewayClaims)
	return !ok || c.ExpiresAt == nil
}

func allowedAlg(tok *jwt.Token) bool {
	alg, _ := tok.Header["alg"].(string)
	for _, m := range jwtMethods {
		if alg == m {
			return true
		}
	}
	return false
}

// keyfuncReason is a client-safe reason for a keyfunc failure (an alg or
// key-use mismatch between the token and its JWK).
func keyfuncReason(err error) string {
	if strings.Contains(err.Error(), `"alg"`) {
		return "its alg does not match the JWK's"
	}
	return "the JWK does not fit the token"
}

// jwtFailure is a 401 authentication_error marked with ErrJWT.
func jwtFailure(code, msg string, cause error) *httpx.Error {
	e := httpx.Unauthorized(code, msg)
	e.Err = fmt.Errorf("%w: %w", ErrJWT, cause)
	return e
}

// principal resolves verified claims against the organisation: the
// organisation they name, the workspace (a workspace-level principal) and
// whether the subject is one of its users.
func (v *JWTVerifier) principal(ctx context.Context, c *gatewayClaims) (*Principal, error) {
	org := v.o.OrganisationID
	if c.OrganisationID != "" && c.OrganisationID != org {
		return nil, jwtFailure("unknown_organisation", "the JWT's gateway_oid is not this gateway's organisation", errors.New("organisation "+c.OrganisationID))
	}
	subject := c.Subject
	if subject == "" {
		subject = c.Email
	}
	if subject == "" {
		return nil, jwtFailure("invalid_token", "the JWT has neither sub nor email", errors.New("no subject"))
	}
	p := &Principal{OrganisationID: org, KeyType: KeyTypeOrganisation, Scopes: c.grantedScopes(), Method: MethodJWT, Subject: subject}
	d := v.o.Directory
	var err error
	if c.Workspace != "" {
		p.KeyType = KeyTypeWorkspace
		p.WorkspaceID, err = d.WorkspaceID(ctx, org, c.Workspace)
		if errors.Is(err, httpx.ErrNotFound) {
			return nil, jwtFailure("unknown_workspace", "the JWT's gateway_workspace names no workspace of this organisation", err)
		}
	} else {
		p.WorkspaceID, err = d.DefaultWorkspaceID(ctx, org)
	}
	if err != nil {
		return nil, unavailable(err)
	}
	p.UserID, err = v.userID(ctx, org, c)
	if err != nil {
		return nil, unavailable(err)
	}
	return p, nil
}

// userID is the id of the organisation's user that sub (an id or an
// email) or else the email claim names; "" for a service identity.
func (v *JWTVerifier) userID(ctx context.Context, org string, c *gatewayClaims) (string, error) {
	for _, s := range []string{c.Subject, c.Email} {
		if s == "" {
			continue
		}
		id, err := v.o.Directory.UserID(ctx, org, s)
		if err == nil {
			return id, nil
		}
		if !errors.Is(err, httpx.ErrNotFound) {
			return "", err
		}
	}
	return "", nil
}

// unavailable is the 503 of a directory lookup that failed.
func unavailable(err error) *httpx.Error {
	return &httpx.Error{Status: http.StatusServiceUnavailable, Type: httpx.TypeServer, Code: "auth_unavailable",
		Message: "cannot verify the JWT right now", Err: fmt.Errorf("%w: %w", ErrJWT, err)}
}
