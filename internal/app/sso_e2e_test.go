package app_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/ai-gateway/gateway/internal/app"
	"github.com/ai-gateway/gateway/internal/auth"
	"github.com/ai-gateway/gateway/internal/config"
	"github.com/ai-gateway/gateway/internal/provider/providertest"
	"github.com/ai-gateway/gateway/internal/store"
)

// fakeIDP is an OpenID provider: discovery, an authorize endpoint that logs
// in whoever the test names, a token endpoint that checks the client, the
// redirect URI and PKCE, and a JWKS; it signs id_tokens with RS256.
type fakeIDP struct {
	t      *testing.T
	srv    *httptest.Server
	key    *rsa.PrivateKey
	kid    string
	client string
	secret string

	mu sync.Mutex
	// who logs in at the next authorize request.
	email    string
	name     string
	verified any // email_verified claim; nil: omitted
	codes    map[string]authRequest
	// nonce, when set, replaces the login's nonce in the id_token.
	nonce string
	// tamper, when set, rewrites the signed id_token.
	tamper func(string) string
	// basicAuth counts token requests that authenticated with HTTP Basic.
	basicAuth int
}

type authRequest struct {
	redirectURI, challenge, nonce, email, name string
	verified                                   any
}

func newFakeIDP(t *testing.T) *fakeIDP {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	idp := &fakeIDP{t: t, key: key, kid: "key-1", client: "gateway-console", secret: "s3cret+/=", codes: map[string]authRequest{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", idp.discovery)
	mux.HandleFunc("GET /authorize", idp.authorize)
	mux.HandleFunc("POST /token", idp.token)
	mux.HandleFunc("GET /jwks", idp.jwks)
	idp.srv = httptest.NewServer(mux)
	t.Cleanup(idp.srv.Close)
	return idp
}

// as makes the next login sign in email.
func (p *fakeIDP) as(email string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.email, p.name, p.verified, p.nonce, p.tamper = email, "Name of "+email, true, "", nil
}

func (p *fakeIDP) discovery(w http.ResponseWriter, r *http.Request) {
	u := p.srv.URL
	writeJSON(w, 200, map[string]any{
		"issuer": u, "authorization_endpoint": u + "/authorize", "token_endpoint": u + "/token", "jwks_uri": u + "/jwks",
		"response_types_supported": []string{"code"}, "code_challenge_methods_supported": []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post"},
	})
}

func (p *fakeIDP) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	switch {
	case q.Get("response_type") != "code", q.Get("client_id") != p.client,
		!strings.Contains(q.Get("scope"), "openid"), q.Get("code_challenge_method") != "S256",
		q.Get("code_challenge") == "", q.Get("nonce") == "", q.Get("state") == "":
		http.Error(w, "bad authorization request: "+r.URL.RawQuery, http.StatusBadRequest)
		return
	}
	code := rand.Text()
	p.mu.Lock()
	p.codes[code] = authRequest{redirectURI: q.Get("redirect_uri"), challenge: q.Get("code_challenge"), nonce: q.Get("nonce"),
		email: p.email, name: p.name, verified: p.verified}
	p.mu.Unlock()
	back, err := url.Parse(q.Get("redirect_uri"))
	if err != nil {
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	}
	bq := back.Query()
	bq.Set("code", code)
	bq.Set("state", q.Get("state"))
	back.RawQuery = bq.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

func (p *fakeIDP) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, 400, map[string]string{"error": "invalid_request"})
		return
	}
	id, secret, basic := r.BasicAuth()
	if basic {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != p.client || secret != p.secret {
		writeJSON(w, 401, map[string]string{"error": "invalid_client"})
		return
	}
	p.mu.Lock()
	if basic {
		p.basicAuth++
	}
	code := r.PostForm.Get("code")
	req, ok := p.codes[code]
	delete(p.codes, code) // a code is used once
	nonce, tamper := p.nonce, p.tamper
	p.mu.Unlock()
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	switch {
	case r.PostForm.Get("grant_type") != "authorization_code", !ok:
		writeJSON(w, 400, map[string]string{"error": "invalid_grant", "error_description": "unknown code"})
		return
	case r.PostForm.Get("redirect_uri") != req.redirectURI:
		writeJSON(w, 400, map[string]string{"error": "invalid_grant", "error_description": "redirect_uri mismatch"})
		return
	case base64.RawURLEncoding.EncodeToString(sum[:]) != req.challenge:
		writeJSON(w, 400, map[string]string{"error": "invalid_grant", "error_description": "PKCE verification failed"})
		return
	}
	if nonce == "" {
		nonce = req.nonce
	}
	now := time.Now()
	claims := jwt.MapClaims{
		"iss": p.srv.URL, "sub": "sub-" + req.email, "aud": p.client, "exp": now.Add(5 * time.Minute).Unix(), "iat": now.Unix(),
		"nonce": nonce, "email": req.email, "name": req.name,
	}
	if req.verified != nil {
		claims["email_verified"] = req.verified
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	tok.Header["kid"] = p.kid
	signed, err := tok.SignedString(p.key)
	if err != nil {
		p.t.Error(err)
		return
	}
	if tamper != nil {
		signed = tamper(signed)
	}
	writeJSON(w, 200, map[string]any{"access_token": "at", "token_type": "Bearer", "expires_in": 300, "id_token": signed})
}

func (p *fakeIDP) jwks(w http.ResponseWriter, r *http.Request) {
	pub := p.key.PublicKey
	writeJSON(w, 200, map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "kid": p.kid, "use": "sig", "alg": "RS256",
		"n": base64.RawURLEncoding.EncodeToString(pub.N.Bytes()),
		"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(pub.E)).Bytes()),
	}}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// startSSO starts a gateway whose single sign-on trusts idp. The listener
// is bound first so that the default redirect URL (derived from addr) is
// the real one.
func startSSO(t *testing.T, idp *fakeIDP, provisioning string, mutate ...func(*config.Config)) *harness {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Defaults()
	cfg.DataDir = t.TempDir()
	cfg.Addr = ln.Addr().String()
	cfg.OIDCIssuer, cfg.OIDCClientID, cfg.OIDCClientSecret = idp.srv.URL, idp.client, idp.secret
	cfg.SSOProvisioning = provisioning
	for _, m := range mutate {
		m(&cfg)
	}
	a, err := app.New(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		ln.Close()
		t.Fatalf("app.New: %v", err)
	}
	go a.Serve(ln)
	h := &harness{t: t, app: a, cfg: cfg, base: "http://" + ln.Addr().String(), key: a.AdminKey, up: providertest.NewOpenAI(t)}
	t.Cleanup(func() { h.shutdown() })
	return h
}

// browser is a cookie-keeping client that does not follow redirects, so
// each hop of the flow can be checked (and tampered with).
type browser struct {
	t  *testing.T
	h  *harness
	hc *http.Client
}

func newBrowser(t *testing.T, h *harness) *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, h: h, hc: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *browser) send(method, u string) (*http.Response, []byte) {
	b.t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

// authorize runs the login and the provider's authorize step and returns
// the callback URL the provider redirected to. rewrite, if set, changes
// the authorize URL before the provider sees it.
func (b *browser) authorize(loginQuery string, rewrite func(url.Values)) string {
	b.t.Helper()
	resp, body := b.send("GET", b.h.base+"/v1/auth/sso/login"+loginQuery)
	if resp.StatusCode != http.StatusFound {
		b.t.Fatalf("login: %d %s", resp.StatusCode, body)
	}
	to, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		b.t.Fatal(err)
	}
	if rewrite != nil {
		q := to.Query()
		rewrite(q)
		to.RawQuery = q.Encode()
	}
	resp, body = b.send("GET", to.String())
	if resp.StatusCode != http.StatusFound {
		b.t.Fatalf("authorize: %d %s", resp.StatusCode, body)
	}
	return resp.Header.Get("Location")
}

// login runs the whole flow and returns the callback's answer.
func (b *browser) login(loginQuery string) (*http.Response, []byte) {
	b.t.Helper()
	return b.send("GET", b.authorize(loginQuery, nil))
}

// sessionCookie is the session token the browser holds, "" if none.
func (b *browser) sessionCookie() string {
	u, _ := url.Parse(b.h.base + "/v1/admin/users")
	for _, c := range b.hc.Jar.Cookies(u) {
		if c.Name == auth.SessionCookie {
			return c.Value
		}
	}
	return ""
}

// get sends a GET with the browser's cookies and decodes the answer.
func (b *browser) get(path string) (int, map[string]any) {
	b.t.Helper()
	resp, body := b.send("GET", b.h.base+path)
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	return resp.StatusCode, m
}

// auditRecords lists the audit records of action.
func auditRecords(h *harness, action string) []map[string]any {
	h.t.Helper()
	m := h.must(h.key, "GET", "/v1/audit-logs?action="+action, nil)
	var out []map[string]any
	for _, d := range m["data"].([]any) {
		out = append(out, d.(map[string]any))
	}
	return out
}

func TestSSOInviteAcceptedAtFirstLogin(t *testing.T) {
	idp := newFakeIDP(t)
	h := startSSO(t, idp, "reject")
	ws := h.newWorkspace("research")
	inv := h.must(h.key, "POST", "/v1/admin/users/invites", map[string]any{
		"email": "Grace@Example.com", "role": "member", "workspaces": []map[string]string{{"id": ws, "role": "manager"}},
	})
	inviteID := inv["id"].(string)

	idp.as("grace@example.com")
	b := newBrowser(t, h)
	resp, body := b.login("?return_to=" + url.QueryEscape("/console/logs?page=2"))
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/console/logs?page=2" {
		t.Fatalf("callback: %d %q %s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	token := b.sessionCookie()
	if !strings.HasPrefix(token, "gws-") {
		t.Fatalf("session cookie = %q, want a gws- token", token)
	}
	idp.mu.Lock()
	if idp.basicAuth != 1 {
		t.Errorf("token requests with client_secret_basic = %d, want 1", idp.basicAuth)
	}
	idp.mu.Unlock()

	if got := h.must(h.key, "GET", "/v1/admin/users/invites/"+inviteID, nil)["status"]; got != "accepted" {
		t.Errorf("invite status = %v, want accepted", got)
	}
	users := h.must(h.key, "GET", "/v1/admin/users?email=grace@example.com", nil)
	if users["total"] != float64(1) {
		t.Fatalf("users = %v", users)
	}
	user := users["data"].([]any)[0].(map[string]any)
	if user["role"] != "member" || user["name"] != "Name of grace@example.com" {
		t.Errorf("provisioned user = %v", user)
	}
	uid := user["id"].(string)
	if m := h.must(h.key, "GET", "/v1/admin/workspaces/"+ws+"/users/"+uid, nil); m["role"] != "manager" {
		t.Errorf("membership = %v, want manager of the invited workspace", m)
	}

	status, sess := b.get("/v1/auth/session")
	if status != 200 || sess["object"] != "session" || sess["workspace_id"] != ws || sess["token"] != nil {
		t.Fatalf("GET /v1/auth/session: %d %v", status, sess)
	}
	if u := sess["user"].(map[string]any); u["email"] != "grace@example.com" {
		t.Errorf("session user = %v", u)
	}
	// A manager's session lists its workspace's virtual keys, not the
	// organisation's users.
	if status, m := b.get("/v1/virtual-keys"); status != 200 {
		t.Errorf("manager session on GET /v1/virtual-keys: %d %v", status, m)
	}
	if status, m := b.get("/v1/admin/users"); status != 403 {
		t.Errorf("manager session on GET /v1/admin/users: %d %v, want 403", status, m)
	}

	recs := auditRecords(h, "auth.sso_login")
	if len(recs) != 1 || recs[0]["actor_type"] != "user" || recs[0]["actor_id"] != uid || recs[0]["status_code"] != float64(302) ||
		!strings.Contains(recs[0]["request_body"].(string), "invite_accepted") || strings.Contains(recs[0]["uri"].(string), "code=") {
		t.Errorf("audit records = %v", recs)
	}
}

func TestSSOWithoutInvite(t *testing.T) {
	idp := newFakeIDP(t)
	t.Run("reject", func(t *testing.T) {
		h := startSSO(t, idp, "reject")
		idp.as("stranger@example.com")
		b := newBrowser(t, h)
		resp, body := b.login("")
		if resp.StatusCode != 403 || errorField(t, body, "code") != "sso_not_provisioned" ||
			!strings.Contains(errorField(t, body, "message").(string), "invite") {
			t.Fatalf("callback: %d %s", resp.StatusCode, body)
		}
		if b.sessionCookie() != "" {
			t.Error("a rejected login set a session cookie")
		}
		if m := h.must(h.key, "GET", "/v1/admin/users?email=stranger@example.com", nil); m["total"] != float64(0) {
			t.Errorf("users = %v, want none", m)
		}
		recs := auditRecords(h, "auth.sso_login")
		if len(recs) != 1 || recs[0]["status_code"] != float64(403) || !strings.Contains(recs[0]["request_body"].(string), "stranger@example.com") {
			t.Errorf("audit records = %v", recs)
		}
	})
	t.Run("member", func(t *testing.T) {
		h := startSSO(t, idp, "member")
		idp.as("walk-in@example.com")
		b := newBrowser(t, h)
		resp, body := b.login("?mode=json")
		if resp.StatusCode != 200 {
			t.Fatalf("callback: %d %s", resp.StatusCode, body)
		}
		m := decode(t, body)
		if m["object"] != "session" || !strings.HasPrefix(m["token"].(string), "gws-") || m["expires_at"] == nil {
			t.Fatalf("JSON session = %v", m)
		}
		if u := m["user"].(map[string]any); u["role"] != "member" || u["email"] != "walk-in@example.com" {
			t.Errorf("user = %v", u)
		}
		if b.sessionCookie() != m["token"] {
			t.Error("the JSON login did not also set the session cookie")
		}
		// With no workspace, the member only sees who they are.
		status, sess := h.call(m["token"].(string), "GET", "/v1/auth/session", nil)
		if status != 200 || sess["workspace_id"] != "" {
			t.Errorf("GET /v1/auth/session with the token: %d %v", status, sess)
		}
		if status, body := h.call(m["token"].(string), "GET", "/v1/admin/users", nil); status != 403 {
			t.Errorf("member session on GET /v1/admin/users: %d %v, want 403", status, body)
		}
	})
}

func TestSSOExistingOwnerAndLogout(t *testing.T) {
	idp := newFakeIDP(t)
	h := startSSO(t, idp, "reject")
	h.addUser("boss@example.com", "owner", nil)
	idp.as("BOSS@example.com")
	b := newBrowser(t, h)
	resp, body := b.login("")
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/" {
		t.Fatalf("callback: %d %q %s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	if c := resp.Header.Get("Set-Cookie"); !strings.Contains(c, "HttpOnly") || !strings.Contains(c, "SameSite=Lax") {
		t.Errorf("session cookie attributes: %q", c)
	}
	token := b.sessionCookie()
	status, users := b.get("/v1/admin/users")
	if status != 200 || users["total"] != float64(2) {
		t.Fatalf("owner session on GET /v1/admin/users: %d %v", status, users)
	}
	// The token works in x-gateway-api-key as well, and writes are audited
	// as the user.
	created := h.must(token, "POST", "/v1/admin/workspaces", map[string]any{"name": "by-sso", "slug": "by-sso"})
	recs := auditRecords(h, "")
	found := false
	for _, r := range recs {
		if r["resource_id"] == created["id"] && r["actor_type"] == "user" {
			found = true
		}
	}
	if !found {
		t.Errorf("no user-attributed audit record for the workspace created with the session: %v", recs)
	}

	resp, body = b.send("POST", h.base+"/v1/auth/logout")
	if resp.StatusCode != 200 || decode(t, body)["deleted"] != true {
		t.Fatalf("logout: %d %s", resp.StatusCode, body)
	}
	if b.sessionCookie() != "" {
		t.Error("logout did not clear the session cookie")
	}
	for _, path := range []string{"/v1/admin/users", "/v1/auth/session"} {
		if status, m := h.call(token, "GET", path, nil); status != 401 {
			t.Errorf("GET %s after logout: %d %v, want 401", path, status, m)
		}
	}
	if len(auditRecords(h, "auth.logout")) != 1 {
		t.Error("logout not audited")
	}
}

func TestSSOExpiredSession(t *testing.T) {
	idp := newFakeIDP(t)
	h := startSSO(t, idp, "reject")
	uid := h.addUser("old@example.com", "admin", nil)
	raw := "gws-expiredsessiontokenexpiredsessiontoken0123"
	h.withStore(func(st *store.Store) {
		past := time.Now().Add(-time.Hour)
		if err := st.CreateSession(context.Background(), &store.Session{
			OrganisationID: h.app.Bootstrap.OrganisationID, UserID: uid, TokenHash: auth.HashKey(raw),
			CreatedAt: past.Add(-12 * time.Hour), ExpiresAt: past,
		}); err != nil {
			t.Fatal(err)
		}
	})
	status, m := h.call(raw, "GET", "/v1/admin/users", nil)
	if status != 401 || m["error"].(map[string]any)["code"] != "session_expired" {
		t.Errorf("expired session: %d %v, want 401 session_expired", status, m)
	}
	if status, _ := h.call("gws-unknown", "GET", "/v1/admin/users", nil); status != 401 {
		t.Errorf("unknown session: %d, want 401", status)
	}
}

func TestSSORefusals(t *testing.T) {
	idp := newFakeIDP(t)
	h := startSSO(t, idp, "member")
	otherVerifier := "another-verifier-another-verifier-another-verifier"
	sum := sha256.Sum256([]byte(otherVerifier))
	cases := []struct {
		name  string
		setup func()
		// rewrite changes the authorize request; callback the callback URL.
		rewrite  func(url.Values)
		callback func(string) string
		status   int
		code     string
	}{
		{name: "bad state", callback: func(u string) string { return strings.Replace(u, "state=", "state=x", 1) }, status: 400, code: "invalid_state"},
		{name: "wrong nonce", setup: func() { idp.nonce = "not-the-login-nonce" }, status: 401, code: "invalid_id_token"},
		{name: "tampered id_token", setup: func() {
			idp.tamper = func(tok string) string {
				parts := strings.Split(tok, ".")
				payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
				payload = []byte(strings.Replace(string(payload), "eve@example.com", "boss@example.com", 1))
				parts[1] = base64.RawURLEncoding.EncodeToString(payload)
				return strings.Join(parts, ".")
			}
		}, status: 401, code: "invalid_id_token"},
		{name: "PKCE mismatch", rewrite: func(q url.Values) { q.Set("code_challenge", base64.RawURLEncoding.EncodeToString(sum[:])) },
			status: 401, code: "sso_failed"},
		{name: "provider error", callback: func(u string) string {
			pu, _ := url.Parse(u)
			q := pu.Query()
			q.Del("code")
			q.Set("error", "access_denied")
			pu.RawQuery = q.Encode()
			return pu.String()
		}, status: 401, code: "sso_denied"},
		{name: "unverified email", setup: func() { idp.verified = false }, status: 403, code: "email_not_verified"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			idp.as("eve@example.com")
			if tc.setup != nil {
				idp.mu.Lock()
				tc.setup()
				idp.mu.Unlock()
			}
			b := newBrowser(t, h)
			cb := b.authorize("", tc.rewrite)
			if tc.callback != nil {
				cb = tc.callback(cb)
			}
			resp, body := b.send("GET", cb)
			if resp.StatusCode != tc.status || errorField(t, body, "code") != tc.code {
				t.Fatalf("callback: %d %s, want %d %s", resp.StatusCode, body, tc.status, tc.code)
			}
			if b.sessionCookie() != "" {
				t.Error("a refused login set a session cookie")
			}
		})
	}
	if m := h.must(h.key, "GET", "/v1/admin/users?email=eve@example.com", nil); m["total"] != float64(0) {
		t.Errorf("a refused login provisioned a user: %v", m)
	}

	t.Run("replayed callback", func(t *testing.T) {
		idp.as("replay@example.com")
		b := newBrowser(t, h)
		cb := b.authorize("", nil)
		cbURL, _ := url.Parse(cb)
		var state *http.Cookie
		for _, c := range b.hc.Jar.Cookies(cbURL) {
			if c.Name == "gateway_sso_state" {
				state = c
			}
		}
		if state == nil {
			t.Fatal("login set no state cookie")
		}
		if resp, body := b.send("GET", cb); resp.StatusCode != http.StatusFound {
			t.Fatalf("first callback: %d %s", resp.StatusCode, body)
		}
		// The browser no longer holds the state cookie ...
		resp, body := b.send("GET", cb)
		if resp.StatusCode != 400 || errorField(t, body, "code") != "invalid_state" {
			t.Errorf("replayed callback: %d %s, want 400 invalid_state", resp.StatusCode, body)
		}
		// ... and a copy of it is refused too.
		req, _ := http.NewRequest("GET", cb, nil)
		req.AddCookie(state)
		r2, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(r2.Body)
		r2.Body.Close()
		if r2.StatusCode != 400 || errorField(t, body, "code") != "invalid_state" {
			t.Errorf("callback replayed with a copied state cookie: %d %s, want 400 invalid_state", r2.StatusCode, body)
		}
	})
	t.Run("foreign return_to", func(t *testing.T) {
		b := newBrowser(t, h)
		for _, to := range []string{"https://evil.example/", "//evil.example/x", "/\\evil.example", "javascript:alert(1)"} {
			resp, body := b.send("GET", h.base+"/v1/auth/sso/login?return_to="+url.QueryEscape(to))
			if resp.StatusCode != 400 {
				t.Errorf("return_to %q: %d %s, want 400", to, resp.StatusCode, body)
			}
		}
	})
	failures := 0
	for _, r := range auditRecords(h, "auth.sso_login") {
		if r["status_code"].(float64) >= 400 {
			failures++
		}
	}
	if failures < len(cases)+1 {
		t.Errorf("audited failed logins = %d, want at least %d", failures, len(cases)+1)
	}
}
