package openai

// Authentication for Azure OpenAI and Azure AI Foundry (issue #3,
// PROVIDERS.md §2): an api-key, an access token the caller already holds,
// or one this file obtains from Microsoft Entra ID with the OAuth 2.0
// client-credentials grant and caches until shortly before it expires.

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ai-gateway/gateway/internal/provider"
)

// Target options (snake_case, API.md §3) that select Entra ID
// authentication; the gateway fills them from x-gateway-azure-entra-*
// headers or config and virtual-key fields.
const (
	OptAzureEntraClientID     = "azure_entra_client_id"
	OptAzureEntraClientSecret = "azure_entra_client_secret"
	OptAzureEntraTenantID     = "azure_entra_tenant_id"
	// OptAzureAuthorityHost overrides the Entra authority, for sovereign
	// clouds (https://login.microsoftonline.us,
	// https://login.chinacloudapi.cn) and tests.
	OptAzureAuthorityHost = "azure_authority_host"
)

// DefaultAzureAuthorityHost is Entra ID's public-cloud authority.
const DefaultAzureAuthorityHost = "https://login.microsoftonline.com"

// azureScope is the token audience for Azure OpenAI and Azure AI Foundry
// (Cognitive Services) data planes.
const azureScope = "https://cognitiveservices.azure.com/.default"

// Token cache timing: a token is refreshed refreshMargin before it expires
// (at most a tenth of its lifetime for short-lived test tokens), and one
// fetch may take fetchTimeout whatever the callers' deadlines.
const (
	refreshMargin = 5 * time.Minute
	fetchTimeout  = 30 * time.Second
	// maxCachedTokens bounds the cache; past it, expired entries are
	// swept on insert.
	maxCachedTokens = 1024
)

// azureAuth sets Azure credentials on h: a Bearer token from Entra ID when
// the target carries client credentials; the key itself as Bearer when it
// is already an access token (a JWT); otherwise the api-key header. For
// azure-ai it also asks the service to pass fields outside its schema to
// the model (see azureAIHeaders).
func (c *Client) azureAuth(ctx context.Context, h http.Header, t *provider.Target) error {
	if c.spec.AzureAI {
		azureAIHeaders(h)
	}
	creds, ok, err := entraCredentialsOf(c.spec.Name, t)
	if err != nil {
		return err
	}
	if ok {
		tok, err := entraTokens.token(ctx, c.http, c.spec.Name, creds)
		if err != nil {
			return err
		}
		h.Del("api-key")
		h.Set("Authorization", "Bearer "+tok)
		return nil
	}
	if t.APIKey == "" {
		return nil
	}
	if isJWT(t.APIKey) {
		h.Del("api-key")
		h.Set("Authorization", "Bearer "+t.APIKey)
		return nil
	}
	h.Set("api-key", t.APIKey)
	return nil
}

// azureAIHeaders: Azure AI Foundry model inference rejects request fields
// outside its own schema unless told otherwise (header extra-parameters,
// default "error"). OpenAI clients send such fields (user, n, logprobs,
// and stream_options, which the gateway itself adds to streams for usage),
// so the gateway asks for pass-through, which hands them to the model as an
// OpenAI-compatible endpoint would. A value the client forwarded wins.
func azureAIHeaders(h http.Header) {
	if h.Get("extra-parameters") == "" {
		h.Set("extra-parameters", "pass-through")
	}
}

// isJWT reports whether key is a JWT access token (three base64url
// segments, the header starting {" = "eyJ") rather than an api-key, which
// is a hex or base62 string.
func isJWT(key string) bool {
	return strings.HasPrefix(key, "eyJ") && strings.Count(key, ".") == 2
}

// entraCredentials are a target's client credentials.
type entraCredentials struct {
	authority string // scheme://host, no trailing slash
	tenant    string
	clientID  string
	secret    string
}

// entraCredentialsOf reads the Entra options. ok is false when none is
// set; some but not all of them is a configuration error naming the
// missing ones.
func entraCredentialsOf(providerName string, t *provider.Target) (entraCredentials, bool, error) {
	cr := entraCredentials{
		tenant:   strings.TrimSpace(t.Option(OptAzureEntraTenantID)),
		clientID: strings.TrimSpace(t.Option(OptAzureEntraClientID)),
		secret:   t.Option(OptAzureEntraClientSecret),
	}
	if cr.tenant == "" && cr.clientID == "" && cr.secret == "" {
		return cr, false, nil
	}
	var missing []string
	for _, f := range []struct{ name, v string }{
		{OptAzureEntraClientID, cr.clientID}, {OptAzureEntraClientSecret, cr.secret}, {OptAzureEntraTenantID, cr.tenant},
	} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return cr, false, &provider.ConfigError{Provider: providerName, Param: missing[0],
			Msg: "Microsoft Entra ID authentication needs azure_entra_client_id, azure_entra_client_secret and azure_entra_tenant_id; missing " + strings.Join(missing, ", ")}
	}
	if !validTenant(cr.tenant) {
		return cr, false, &provider.ConfigError{Provider: providerName, Param: OptAzureEntraTenantID,
			Msg: "azure_entra_tenant_id must be a tenant id (GUID) or domain name"}
	}
	auth, err := authorityOf(t.Option(OptAzureAuthorityHost))
	if err != nil {
		return cr, false, &provider.ConfigError{Provider: providerName, Param: OptAzureAuthorityHost, Msg: "azure_authority_host: " + err.Error()}
	}
	cr.authority = auth
	return cr, true, nil
}

// validTenant accepts GUIDs and domain names: the tenant becomes a path
// segment of the token URL, so nothing else may pass.
func validTenant(s string) bool {
	if len(s) > 253 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return s != "" && s != "." && s != ".."
}

// authorityOf validates an authority host: https, or http only on a
// loopback host (a local test endpoint), never with a path beyond "/",
// so the client secret is sent only to an authority.
func authorityOf(s string) (string, error) {
	if s == "" {
		return DefaultAzureAuthorityHost, nil
	}
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/") {
		return "", fmt.Errorf("must be a bare https URL such as %s", DefaultAzureAuthorityHost)
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !isLoopback(u.Hostname()) {
			return "", fmt.Errorf("must use https (http is allowed only for loopback hosts)")
		}
	default:
		return "", fmt.Errorf("must be a bare https URL such as %s", DefaultAzureAuthorityHost)
	}
	return u.Scheme + "://" + u.Host, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// tokenCache holds Entra access tokens per (authority, tenant, client,
// secret). The secret is part of the key, as a hash: a caller that knows a
// tenant and client id but not the secret must not be handed a token
// another caller obtained with it.
type tokenCache struct {
	now func() time.Time

	mu      sync.Mutex
	entries map[tokenKey]*tokenEntry
}

type tokenKey struct {
	authority, tenant, clientID string
	secret                      [32]byte
}

type tokenEntry struct {
	token     string
	refreshAt time.Time // serve from the cache until then
	expiresAt time.Time // usable until then if a refresh fails
	flight    *tokenFlight
}

// tokenFlight is one fetch in progress; concurrent callers wait for it
// rather than fetching again.
type tokenFlight struct {
	done  chan struct{}
	token string
	err   error
}

// entraTokens is the process's token cache, shared by the azure-openai and
// azure-ai adapters (the same credentials and scope give the same token).
// Tests replace it to inject a clock.
var entraTokens = newTokenCache(time.Now)

func newTokenCache(now func() time.Time) *tokenCache {
	return &tokenCache{now: now, entries: map[tokenKey]*tokenEntry{}}
}

// token returns a valid access token for cr, from the cache or from one
// fetch shared by every concurrent caller. A caller whose context ends
// stops waiting; the fetch itself continues (bounded by fetchTimeout) for
// the others.
func (tc *tokenCache) token(ctx context.Context, hc *http.Client, providerName string, cr entraCredentials) (string, error) {
	k := tokenKey{authority: cr.authority, tenant: cr.tenant, clientID: cr.clientID, secret: sha256.Sum256([]byte(cr.secret))}
	tc.mu.Lock()
	e := tc.entries[k]
	now := tc.now()
	if e != nil && e.token != "" && now.Before(e.refreshAt) {
		tok := e.token
		tc.mu.Unlock()
		return tok, nil
	}
	if e == nil {
		if len(tc.entries) >= maxCachedTokens {
			tc.sweep(now)
		}
		e = &tokenEntry{}
		tc.entries[k] = e
	}
	f := e.flight
	if f == nil {
		f = &tokenFlight{done: make(chan struct{})}
		e.flight = f
		go tc.fetch(context.WithoutCancel(ctx), hc, providerName, cr, k, e, f)
	}
	tc.mu.Unlock()
	select {
	case <-f.done:
		return f.token, f.err
	case <-ctx.Done():
		return "", provider.ClassifyTransportError(ctx, ctx.Err())
	}
}

// fetch runs one token request and publishes its outcome to the entry and
// to the flight's waiters. A failed refresh keeps serving the previous
// token while it is still valid.
func (tc *tokenCache) fetch(ctx context.Context, hc *http.Client, providerName string, cr entraCredentials, k tokenKey, e *tokenEntry, f *tokenFlight) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	issued := tc.now()
	tok, lifetime, err := requestToken(ctx, hc, providerName, cr)
	tc.mu.Lock()
	now := tc.now()
	switch {
	case err == nil:
		margin := min(refreshMargin, lifetime/10)
		e.token, e.refreshAt, e.expiresAt = tok, issued.Add(lifetime-margin), issued.Add(lifetime)
		f.token = tok
	case e.token != "" && now.Before(e.expiresAt):
		f.token = e.token
	default:
		f.err = err
		if e.token == "" && tc.entries[k] == e {
			delete(tc.entries, k)
		}
	}
	e.flight = nil
	tc.mu.Unlock()
	close(f.done)
}

// sweep drops expired entries; the caller holds mu.
func (tc *tokenCache) sweep(now time.Time) {
	for k, e := range tc.entries {
		if e.flight == nil && !now.Before(e.expiresAt) {
			delete(tc.entries, k)
		}
	}
}

// maxTokenResponse bounds the token endpoint's answer.
const maxTokenResponse = 1 << 20

// requestToken performs the client-credentials grant (RFC 6749 §4.4) at
// {authority}/{tenant}/oauth2/v2.0/token. Failures are reported without
// the secret: Entra's own error description names the tenant, the client
// id and an AADSTS code, none of which is a credential.
func requestToken(ctx context.Context, hc *http.Client, providerName string, cr entraCredentials) (string, time.Duration, error) {
	form := url.Values{
		"grant_type":    {"client_credentials"},
		"client_id":     {cr.clientID},
		"client_secret": {cr.secret},
		"scope":         {azureScope},
	}
	endpoint := cr.authority + "/" + url.PathEscape(cr.tenant) + "/oauth2/v2.0/token"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return "", 0, &provider.ConfigError{Provider: providerName, Param: OptAzureAuthorityHost, Msg: "invalid Entra ID token URL"}
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return "", 0, fmt.Errorf("microsoft entra id token request: %w", provider.ClassifyTransportError(ctx, err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenResponse))
	if err != nil {
		return "", 0, fmt.Errorf("microsoft entra id token request: %w", provider.ClassifyTransportError(ctx, err))
	}
	if resp.StatusCode != http.StatusOK {
		return "", 0, entraError(providerName, cr, resp, body)
	}
	res := gjson.GetManyBytes(body, "access_token", "expires_in")
	tok := res[0].String()
	// expires_in is a number on the v2.0 endpoint and a string on v1.0.
	secs, _ := strconv.ParseFloat(res[1].String(), 64)
	if tok == "" || secs <= 0 {
		return "", 0, entraFailure(providerName, http.StatusBadGateway, "server_error", nil,
			"Microsoft Entra ID answered without an access token and its lifetime")
	}
	return tok, time.Duration(secs * float64(time.Second)), nil
}

// entraError maps the token endpoint's refusal: a 4xx means the
// credentials or tenant are wrong (401 for the client), 429 keeps its
// Retry-After, anything else is the identity service failing (502).
func entraError(providerName string, cr entraCredentials, resp *http.Response, body []byte) error {
	code := gjson.GetBytes(body, "error").String()
	desc := gjson.GetBytes(body, "error_description").String()
	// Entra appends trace and correlation ids on further lines.
	if i := strings.IndexAny(desc, "\r\n"); i >= 0 {
		desc = desc[:i]
	}
	if len(desc) > 300 {
		desc = desc[:300] + "…"
	}
	detail := strings.TrimSpace(strings.Trim(code+": "+desc, ": "))
	if cr.secret != "" {
		detail = strings.ReplaceAll(detail, cr.secret, "[redacted]")
	}
	if detail == "" {
		detail = "HTTP " + strconv.Itoa(resp.StatusCode)
	}
	switch s := resp.StatusCode; {
	case s == http.StatusTooManyRequests:
		return entraFailure(providerName, s, "rate_limit_error", resp.Header, "Microsoft Entra ID is rate limiting token requests: "+detail)
	case s >= 400 && s < 500:
		return entraFailure(providerName, http.StatusUnauthorized, "authentication_error", nil,
			fmt.Sprintf("Microsoft Entra ID refused the client credentials (tenant %s, client %s): %s", cr.tenant, cr.clientID, detail))
	default:
		return entraFailure(providerName, http.StatusBadGateway, "server_error", nil, "Microsoft Entra ID token endpoint failed: "+detail)
	}
}

// entraFailure builds the error the gateway answers with, in the OpenAI
// error shape the gateway's error parser reads.
func entraFailure(providerName string, status int, typ string, h http.Header, msg string) error {
	body, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": "azure_entra_token_error"}})
	var hdr http.Header
	if ra := h.Get("Retry-After"); ra != "" {
		hdr = http.Header{"Retry-After": {ra}}
	}
	return &provider.UpstreamError{Provider: providerName, Status: status, Header: hdr, Body: body}
}
