package google

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/ai-gateway/gateway/internal/provider"
)

// Vertex AI takes an OAuth 2.0 access token (PROVIDERS.md §5 "Auth"). The
// gateway mints one from the service-account key the caller supplies
// (vertex_service_account_json) with the JWT-bearer grant (RFC 7523): an
// RS256 assertion signed by the key's private_key, iss = client_email,
// aud = token_uri, scope cloud-platform, posted to token_uri. Tokens live
// about an hour and are cached per key until shortly before they expire.

const (
	defaultTokenURI    = "https://oauth2.googleapis.com/token"
	cloudPlatformScope = "https://www.googleapis.com/auth/cloud-platform"
	jwtBearerGrant     = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	// tokenRefreshMargin is how long before its expiry a cached token is
	// replaced, so a token never expires on its way to Google.
	tokenRefreshMargin = 5 * time.Minute
	// maxCachedTokens bounds the cache: one entry per service account.
	maxCachedTokens = 1024
)

// serviceAccount is the part of a service-account key file the grant
// needs.
type serviceAccount struct {
	Type         string `json:"type"`
	ClientEmail  string `json:"client_email"`
	PrivateKeyID string `json:"private_key_id"`
	PrivateKey   string `json:"private_key"`
	TokenURI     string `json:"token_uri"`
}

// accessToken returns the bearer token for a Vertex call: minted from the
// target's service account, or, without one, Target.APIKey taken to be an
// access token the caller obtained itself.
func (c *Client) accessToken(ctx context.Context, t *provider.Target) (string, error) {
	raw := strings.TrimSpace(t.Option("vertex_service_account_json"))
	if raw == "" {
		if t.APIKey != "" {
			return t.APIKey, nil
		}
		return "", &provider.ConfigError{Provider: c.name, Param: "x-gateway-vertex-service-account-json",
			Msg: "vertex-ai needs a service-account key (x-gateway-vertex-service-account-json or vertex_service_account_json) or an OAuth access token in Authorization"}
	}
	return c.tokens.get(ctx, sha256.Sum256([]byte(raw)), func(ctx context.Context) (string, time.Time, error) {
		sa, err := c.parseServiceAccount(raw)
		if err != nil {
			return "", time.Time{}, err
		}
		return c.exchange(ctx, sa)
	})
}

// parseServiceAccount reads the key file JSON, also accepted base64
// encoded (convenient in a header).
func (c *Client) parseServiceAccount(raw string) (*serviceAccount, error) {
	data := []byte(raw)
	if raw[0] != '{' {
		dec, err := base64.StdEncoding.DecodeString(raw)
		if err != nil {
			return nil, c.saError("it is neither JSON nor base64-encoded JSON")
		}
		data = dec
	}
	var sa serviceAccount
	if err := json.Unmarshal(data, &sa); err != nil {
		return nil, c.saError("malformed JSON")
	}
	if sa.ClientEmail == "" || sa.PrivateKey == "" {
		return nil, c.saError("client_email and private_key are required")
	}
	if sa.TokenURI == "" {
		sa.TokenURI = defaultTokenURI
	}
	if u, err := url.Parse(sa.TokenURI); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, c.saError("token_uri must be an http(s) URL")
	}
	return &sa, nil
}

func (c *Client) saError(why string) error {
	return &provider.ConfigError{Provider: c.name, Param: "x-gateway-vertex-service-account-json",
		Msg: "vertex_service_account_json is not a usable service-account key: " + why}
}

// exchange trades a signed assertion for an access token.
func (c *Client) exchange(ctx context.Context, sa *serviceAccount) (string, time.Time, error) {
	key, err := jwt.ParseRSAPrivateKeyFromPEM([]byte(sa.PrivateKey))
	if err != nil {
		return "", time.Time{}, c.saError("private_key is not an RSA key in PEM form")
	}
	issued := now()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{
		"iss":   sa.ClientEmail,
		"scope": cloudPlatformScope,
		"aud":   sa.TokenURI,
		"iat":   issued.Unix(),
		"exp":   issued.Add(time.Hour).Unix(),
	})
	if sa.PrivateKeyID != "" {
		tok.Header["kid"] = sa.PrivateKeyID
	}
	assertion, err := tok.SignedString(key)
	if err != nil {
		return "", time.Time{}, c.saError("signing failed: " + err.Error())
	}
	form := url.Values{"grant_type": {jwtBearerGrant}, "assertion": {assertion}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sa.TokenURI, strings.NewReader(form.Encode()))
	if err != nil {
		return "", time.Time{}, c.saError("token_uri is not a valid URL")
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return "", time.Time{}, provider.ClassifyTransportError(ctx, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return "", time.Time{}, provider.ClassifyTransportError(ctx, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", time.Time{}, c.tokenError(resp.StatusCode, body)
	}
	var tr struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int64  `json:"expires_in"`
	}
	if err := json.Unmarshal(body, &tr); err != nil || tr.AccessToken == "" {
		return "", time.Time{}, fmt.Errorf("%w: the Google token endpoint answered without an access_token", provider.ErrBadResponse)
	}
	if tr.ExpiresIn <= 0 {
		tr.ExpiresIn = 3600
	}
	return tr.AccessToken, issued.Add(time.Duration(tr.ExpiresIn) * time.Second), nil
}

// tokenError turns a refused token exchange ({"error":"invalid_grant",
// "error_description":...}) into a Google-shaped UpstreamError: a client
// error there means the credentials are bad, so 401; a server error keeps
// its status.
func (c *Client) tokenError(status int, body []byte) error {
	var oe struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	_ = json.Unmarshal(body, &oe)
	msg := "the service-account token exchange failed"
	if oe.Error != "" {
		msg += ": " + oe.Error
	}
	if oe.Description != "" {
		msg += ": " + oe.Description
	}
	code, rpc := http.StatusUnauthorized, "UNAUTHENTICATED"
	if status >= 500 {
		code, rpc = status, "UNAVAILABLE"
	}
	out, _ := json.Marshal(map[string]any{"error": map[string]any{"code": code, "message": msg, "status": rpc}})
	return &provider.UpstreamError{Provider: c.name, Status: code, Header: http.Header{"Content-Type": {"application/json"}}, Body: out}
}

// tokenCache holds one access token per service account. A miss is
// fetched by one caller while the others for the same account wait for
// it (or for their own context to end).
type tokenCache struct {
	mu      sync.Mutex
	entries map[[32]byte]*tokenEntry
}

type tokenEntry struct {
	token  string
	expiry time.Time
	// wait is non-nil while a fetch is in flight and closed when it ends.
	wait chan struct{}
}

func newTokenCache() *tokenCache {
	return &tokenCache{entries: map[[32]byte]*tokenEntry{}}
}

// get returns the cached token for key, or fetches one.
func (tc *tokenCache) get(ctx context.Context, key [32]byte, fetch func(context.Context) (string, time.Time, error)) (string, error) {
	for {
		tc.mu.Lock()
		e := tc.entries[key]
		if e != nil && e.token != "" && now().Before(e.expiry.Add(-tokenRefreshMargin)) {
			tok := e.token
			tc.mu.Unlock()
			return tok, nil
		}
		if e != nil && e.wait != nil {
			w := e.wait
			tc.mu.Unlock()
			select {
			case <-w:
				continue
			case <-ctx.Done():
				return "", provider.ClassifyTransportError(ctx, ctx.Err())
			}
		}
		if e == nil {
			tc.evictLocked()
			e = &tokenEntry{}
			tc.entries[key] = e
		}
		w := make(chan struct{})
		e.wait = w
		tc.mu.Unlock()

		tok, exp, err := fetch(ctx)

		tc.mu.Lock()
		e.wait = nil
		if err == nil {
			e.token, e.expiry = tok, exp
		}
		tc.mu.Unlock()
		close(w)
		return tok, err
	}
}

// evictLocked makes room for a new entry: expired tokens go first, then
// any idle entry.
func (tc *tokenCache) evictLocked() {
	if len(tc.entries) < maxCachedTokens {
		return
	}
	t := now()
	for k, e := range tc.entries {
		if e.wait == nil && !t.Before(e.expiry) {
			delete(tc.entries, k)
		}
	}
	for k, e := range tc.entries {
		if len(tc.entries) < maxCachedTokens {
			return
		}
		if e.wait == nil {
			delete(tc.entries, k)
		}
	}
}
