package sso

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"

	"github.com/ai-gateway/gateway/internal/httpx"
)

// discoveryTTL is how long the issuer's discovery document, and the key
// set read from its jwks_uri, are used before they are read again.
const discoveryTTL = time.Hour

// maxIssuerBody bounds what is read of any answer of the issuer.
const maxIssuerBody = 1 << 20

// clockSkew is the leeway given to exp, iat and nbf of an id_token.
const clockSkew = time.Minute

// idTokenAlgorithms are the signature algorithms accepted on an id_token:
// asymmetric ones only, so a token cannot be forged with the client secret
// or "none".
var idTokenAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// discovery is the part of the issuer's OpenID Provider Metadata that the
// flow uses.
type discovery struct {
	Issuer                string   `json:"issuer"`
	AuthorizationEndpoint string   `json:"authorization_endpoint"`
	TokenEndpoint         string   `json:"token_endpoint"`
	JWKSURI               string   `json:"jwks_uri"`
	TokenAuthMethods      []string `json:"token_endpoint_auth_methods_supported"`
}

// provider is an immutable snapshot of the issuer: its metadata and the
// key set of its jwks_uri. A refresh builds a new one.
type provider struct {
	meta    discovery
	keys    keyfunc.Keyfunc
	fetched time.Time
}

// oidcClient talks to the one configured issuer.
type oidcClient struct {
	issuer       string
	clientID     string
	clientSecret string
	hc           *http.Client

	mu  sync.Mutex
	cur *provider
}

func newOIDCClient(issuer, clientID, clientSecret string, hc *http.Client) *oidcClient {
	return &oidcClient{issuer: strings.TrimRight(issuer, "/"), clientID: clientID, clientSecret: clientSecret, hc: hc}
}

// errIssuer marks a failure to reach the issuer or to read its answer:
// the login answers 503 and may be retried.
var errIssuer = errors.New("identity provider unavailable")

func unavailable(err error) error {
	return &httpx.Error{Status: http.StatusServiceUnavailable, Type: httpx.TypeServer, Code: "sso_unavailable",
		Message: "the identity provider cannot be reached right now; try again", Err: err}
}

// provider returns the cached snapshot, reading discovery and the key set
// when there is none or it is older than discoveryTTL. A failed refresh
// keeps a previous snapshot serving.
func (c *oidcClient) provider(ctx context.Context, now time.Time) (*provider, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur != nil && now.Sub(c.cur.fetched) < discoveryTTL {
		return c.cur, nil
	}
	p, err := c.discover(ctx, now)
	if err != nil {
		if c.cur != nil {
			return c.cur, nil
		}
		return nil, err
	}
	c.cur = p
	return p, nil
}

func (c *oidcClient) discover(ctx context.Context, now time.Time) (*provider, error) {
	u := c.issuer + "/.well-known/openid-configuration"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: discovery: %w", errIssuer, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxIssuerBody))
	if err != nil {
		return nil, fmt.Errorf("%w: discovery: %w", errIssuer, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: discovery: %s answered %d", errIssuer, u, resp.StatusCode)
	}
	var d discovery
	if err := json.Unmarshal(body, &d); err != nil {
		return nil, fmt.Errorf("%w: discovery: %w", errIssuer, err)
	}
	// OpenID Connect Discovery §4.3: the issuer in the document must be
	// the one the configuration was read for.
	if strings.TrimRight(d.Issuer, "/") != c.issuer {
		return nil, fmt.Errorf("%w: discovery: issuer %q does not match the configured %q", errIssuer, d.Issuer, c.issuer)
	}
	for name, v := range map[string]string{"authorization_endpoint": d.AuthorizationEndpoint, "token_endpoint": d.TokenEndpoint, "jwks_uri": d.JWKSURI} {
		if pu, err := url.Parse(v); v == "" || err != nil || (pu.Scheme != "https" && pu.Scheme != "http") {
			return nil, fmt.Errorf("%w: discovery: %s %q is not an http(s) URL", errIssuer, name, v)
		}
	}
	keys, err := c.keySet(ctx, d.JWKSURI)
	if err != nil {
		return nil, err
	}
	return &provider{meta: d, keys: keys, fetched: now}, nil
}

// keySet reads the issuer's JWKS once, and again (at most once a minute)
// when an id_token names a key id it does not hold, which is how a key
// rotation is seen. No background goroutine is started: the set is
// replaced with the discovery snapshot after discoveryTTL.
func (c *oidcClient) keySet(ctx context.Context, jwksURI string) (keyfunc.Keyfunc, error) {
	remote, err := jwkset.NewStorageFromHTTP(jwksURI, jwkset.HTTPClientStorageOptions{
		Client: c.hc, Ctx: context.WithoutCancel(ctx), HTTPTimeout: 10 * time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: jwks: %w", errIssuer, err)
	}
	store, err := jwkset.NewHTTPClient(jwkset.HTTPClientOptions{
		HTTPURLs:          map[string]jwkset.Storage{jwksURI: remote},
		RateLimitWaitMax:  5 * time.Second,
		RefreshUnknownKID: rate.NewLimiter(rate.Every(time.Minute), 1),
	})
	if err != nil {
		return nil, fmt.Errorf("jwks: %w", err)
	}
	return keyfunc.New(keyfunc.Options{Storage: store})
}

// authorizeURL is the issuer's authorization endpoint with the request of
// an authorization code flow with PKCE (RFC 7636, S256).
func (p *provider) authorizeURL(clientID, redirectURL, state, nonce, challenge string) string {
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {clientID},
		"redirect_uri":          {redirectURL},
		"scope":                 {"openid email profile"},
		"state":                 {state},
		"nonce":                 {nonce},
		"code_challenge":        {challenge},
		"code_challenge_method": {"S256"},
	}
	sep := "?"
	if strings.Contains(p.meta.AuthorizationEndpoint, "?") {
		sep = "&"
	}
	return p.meta.AuthorizationEndpoint + sep + q.Encode()
}

// tokenError is an OAuth 2.0 error answer of the token endpoint.
type tokenError struct {
	Error       string `json:"error"`
	Description string `json:"error_description"`
}

// exchange trades the authorization code for tokens at the token endpoint
// and returns the raw id_token. With a client secret the client
// authenticates with client_secret_basic, or client_secret_post when the
// issuer lists only that; without one it is a public client and PKCE's
// verifier is its proof.
func (c *oidcClient) exchange(ctx context.Context, p *provider, code, verifier, redirectURL string) (string, error) {
	form := url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {code},
		"redirect_uri":  {redirectURL},
		"code_verifier": {verifier},
	}
	basic := c.clientSecret != "" && useBasic(p.meta.TokenAuthMethods)
	if !basic {
		form.Set("client_id", c.clientID)
		if c.clientSecret != "" {
			form.Set("client_secret", c.clientSecret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.meta.TokenEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return "", fmt.Errorf("token request: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if basic {
		// RFC 6749 §2.3.1: the id and secret are form-encoded first.
		req.SetBasicAuth(url.QueryEscape(c.clientID), url.QueryEscape(c.clientSecret))
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return "", unavailable(fmt.Errorf("token request: %w", err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxIssuerBody))
	if err != nil {
		return "", unavailable(fmt.Errorf("token response: %w", err))
	}
	if resp.StatusCode != http.StatusOK {
		var te tokenError
		_ = json.Unmarshal(body, &te)
		if resp.StatusCode >= 500 || te.Error == "" {
			return "", unavailable(fmt.Errorf("token endpoint answered %d", resp.StatusCode))
		}
		msg := "the identity provider refused the authorization code (" + te.Error + ")"
		if te.Description != "" {
			msg += ": " + te.Description
		}
		return "", httpx.Unauthorized("sso_failed", msg)
	}
	var tok struct {
		IDToken string `json:"id_token"`
	}
	if err := json.Unmarshal(body, &tok); err != nil || tok.IDToken == "" {
		return "", httpx.Unauthorized("sso_failed", "the identity provider answered without an id_token")
	}
	return tok.IDToken, nil
}

// useBasic reports whether the client authenticates with HTTP Basic: the
// default of OpenID Connect Discovery unless the issuer lists only
// client_secret_post.
func useBasic(methods []string) bool {
	return len(methods) == 0 || slices.Contains(methods, "client_secret_basic") || !slices.Contains(methods, "client_secret_post")
}

// idClaims are the id_token claims a login uses.
type idClaims struct {
	jwt.RegisteredClaims
	Nonce         string `json:"nonce"`
	Email         string `json:"email"`
	EmailVerified any    `json:"email_verified"` // bool, or "true"/"false" from some issuers
	Name          string `json:"name"`
	GivenName     string `json:"given_name"`
	FamilyName    string `json:"family_name"`
	AZP           string `json:"azp"`
}

// verify checks the id_token (OpenID Connect Core §3.1.3.7): its signature
// with a key of the issuer's JWKS, iss, aud (the client id), azp when there
// are several audiences, exp and iat, and the nonce of the login.
func (c *oidcClient) verify(ctx context.Context, p *provider, raw, nonce string, now time.Time) (*idClaims, error) {
	var cl idClaims
	_, err := jwt.ParseWithClaims(raw, &cl, p.keys.KeyfuncCtx(ctx),
		jwt.WithValidMethods(idTokenAlgorithms), jwt.WithIssuer(p.meta.Issuer), jwt.WithAudience(c.clientID),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithLeeway(clockSkew), jwt.WithTimeFunc(func() time.Time { return now }))
	if err != nil {
		return nil, httpx.Unauthorized("invalid_id_token", "the identity provider's id_token is not valid: "+jwtReason(err))
	}
	if len(cl.Audience) > 1 && cl.AZP != c.clientID {
		return nil, httpx.Unauthorized("invalid_id_token", "the id_token's azp is not this gateway's client id")
	}
	if nonce == "" || subtle.ConstantTimeCompare([]byte(cl.Nonce), []byte(nonce)) != 1 {
		return nil, httpx.Unauthorized("invalid_id_token", "the id_token's nonce does not match this login")
	}
	return &cl, nil
}

// jwtReason names why an id_token failed, without echoing it.
func jwtReason(err error) string {
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return "expired"
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return "wrong issuer"
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return "wrong audience"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid), errors.Is(err, jwt.ErrTokenUnverifiable):
		return "bad signature"
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "malformed"
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued), errors.Is(err, jwt.ErrTokenNotValidYet):
		return "not valid yet"
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return "a required claim is missing"
	}
	return "rejected"
}

// emailVerified reads email_verified: absent counts as verified (many
// issuers only send verified emails and omit the claim), an explicit false
// does not.
func (cl *idClaims) emailVerified() bool {
	switch v := cl.EmailVerified.(type) {
	case bool:
		return v
	case string:
		return !strings.EqualFold(v, "false")
	}
	return true
}

// displayName is the user's name from the claims, else their email.
func (cl *idClaims) displayName(email string) string {
	if n := strings.TrimSpace(cl.Name); n != "" {
		return n
	}
	if n := strings.TrimSpace(cl.GivenName + " " + cl.FamilyName); n != "" {
		return n
	}
	return email
}
