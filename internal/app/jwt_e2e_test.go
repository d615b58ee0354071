package app_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/openai/openai-go/v3/option"

	"github.com/ai-gateway/gateway/internal/audit"
	"github.com/ai-gateway/gateway/internal/config"
	"github.com/ai-gateway/gateway/internal/store"
)

const (
	jwtAudience = "ai-gateway"
	jwtIssuer   = "https://idp.test"
)

// idp is an in-test identity provider: a JWKS endpoint whose keys can be
// rotated, and the private keys to sign tokens with.
type idp struct {
	t    *testing.T
	srv  *httptest.Server
	mu   sync.Mutex
	jwks []map[string]string
	keys map[string]crypto.Signer
}

func newIDP(t *testing.T) *idp {
	t.Helper()
	p := &idp{t: t, keys: map[string]crypto.Signer{}}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"keys": p.jwks})
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// addRSA and addEC create a key; publish makes the JWKS serve it.
func (p *idp) addRSA(kid string, publish bool) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		p.t.Fatal(err)
	}
	p.add(kid, k, publish)
}

func (p *idp) addEC(kid string, publish bool) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		p.t.Fatal(err)
	}
	p.add(kid, k, publish)
}

func (p *idp) add(kid string, k crypto.Signer, publish bool) {
	p.mu.Lock()
	p.keys[kid] = k
	p.mu.Unlock()
	if publish {
		p.publish(kid)
	}
}

func (p *idp) publish(kid string) {
	b64 := base64.RawURLEncoding.EncodeToString
	p.mu.Lock()
	defer p.mu.Unlock()
	var jwk map[string]string
	switch pub := p.keys[kid].Public().(type) {
	case *rsa.PublicKey:
		jwk = map[string]string{"kty": "RSA", "alg": "RS256", "n": b64(pub.N.Bytes()), "e": b64(big.NewInt(int64(pub.E)).Bytes())}
	case *ecdsa.PublicKey:
		ec, err := pub.ECDH()
		if err != nil {
			p.t.Fatal(err)
		}
		raw := ec.Bytes()
		jwk = map[string]string{"kty": "EC", "alg": "ES256", "crv": "P-256", "x": b64(raw[1:33]), "y": b64(raw[33:])}
	}
	jwk["kid"], jwk["use"] = kid, "sig"
	p.jwks = append(p.jwks, jwk)
}

// token signs claims (over valid defaults; a nil value removes a claim)
// with the key kid; signer, if set, names another key to sign with while
// keeping kid in the header (a wrong signature).
func (p *idp) token(kid string, claims jwt.MapClaims, signer ...string) string {
	p.t.Helper()
	c := jwt.MapClaims{
		"sub": "svc-ci", "aud": jwtAudience, "iss": jwtIssuer, "iat": time.Now().Unix(),
		"exp": time.Now().Add(time.Hour).Unix(), "scope": "completions.write configs.list configs.read",
	}
	for k, v := range claims {
		if v == nil {
			delete(c, k)
			continue
		}
		c[k] = v
	}
	p.mu.Lock()
	key := p.keys[kid]
	if len(signer) > 0 {
		key = p.keys[signer[0]]
	}
	p.mu.Unlock()
	method := jwt.SigningMethod(jwt.SigningMethodRS256)
	if _, ok := key.(*ecdsa.PrivateKey); ok {
		method = jwt.SigningMethodES256
	}
	tok := jwt.NewWithClaims(method, c)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	if err != nil {
		p.t.Fatal(err)
	}
	return s
}

// startJWT starts a gateway that accepts JWTs from a new idp with an RSA
// key "rsa-1" and an EC key "ec-1".
func startJWT(t *testing.T) (*harness, *idp) {
	t.Helper()
	p := newIDP(t)
	p.addRSA("rsa-1", true)
	p.addEC("ec-1", true)
	h := start(t, func(c *config.Config) {
		c.JWTJWKSURL, c.JWTAudience, c.JWTIssuer = p.srv.URL, jwtAudience, jwtIssuer
	})
	return h, p
}

// chatAs sends a chat completion to the fake upstream with credential raw
// and returns the answer.
func (h *harness) chatAs(raw string) (*http.Response, []byte) {
	h.t.Helper()
	hdr := h.routing()
	hdr["x-gateway-api-key"] = raw
	return h.do("POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, hdr)
}

// auditByRequest returns the audit record of request id, nil if none.
func (h *harness) auditByRequest(id string) map[string]any {
	h.t.Helper()
	for _, r := range h.auditRecords("page_size=1000") {
		if r["request_id"] == id {
			return r
		}
	}
	return nil
}

// TestJWTValid: an RS256 and an ES256 token reach the fake upstream
// through the data plane like an API key, and list/read scopes cover the
// control plane.
func TestJWTValid(t *testing.T) {
	h, p := startJWT(t)
	for _, kid := range []string{"rsa-1", "ec-1"} {
		tok := p.token(kid, nil)
		resp, err := h.client(option.WithHeader("x-gateway-api-key", tok)).Chat.Completions.New(context.Background(), userParams("gpt-4.1-mini"))
		if err != nil {
			t.Fatalf("%s: chat: %v", kid, err)
		}
		if resp.Choices[0].Message.Content == "" {
			t.Errorf("%s: empty answer", kid)
		}
		if got := h.up.Last().Header.Get("x-gateway-api-key"); got != "" {
			t.Errorf("%s: the JWT was forwarded upstream", kid)
		}
	}

	cfg := h.must(h.key, "POST", "/v1/configs", map[string]any{"name": "c", "config": map[string]any{"provider": "openai"}})
	tok := p.token("rsa-1", nil)
	if list := h.must(tok, "GET", "/v1/configs", nil); list["total"].(float64) < 1 {
		t.Errorf("list with configs.list: %v", list)
	}
	h.must(tok, "GET", "/v1/configs/"+cfg["slug"].(string), nil)
	// The bootstrap scopes are not grantable: "*" in a token grants nothing.
	star := p.token("rsa-1", jwt.MapClaims{"scope": "*"})
	if status, m := h.call(star, "GET", "/v1/configs", nil); status != 403 {
		t.Errorf("scope *: %d %v, want 403", status, m)
	}
	// Both scope claim forms and both deployment spellings.
	arr := p.token("rsa-1", jwt.MapClaims{"scope": nil, "scopes": []string{"configs.list"}})
	h.must(arr, "GET", "/v1/configs", nil)
}

// TestJWTMissingScope: a valid token without the scope a route needs is
// 403 on both planes.
func TestJWTMissingScope(t *testing.T) {
	h, p := startJWT(t)
	noChat := p.token("rsa-1", jwt.MapClaims{"scope": "configs.list"})
	if resp, body := h.chatAs(noChat); resp.StatusCode != 403 || errorField(t, body, "code") != "missing_scope" {
		t.Errorf("chat without completions.write: %d %s", resp.StatusCode, body)
	}
	noList := p.token("rsa-1", jwt.MapClaims{"scope": "completions.write"})
	if status, m := h.call(noList, "GET", "/v1/configs", nil); status != 403 {
		t.Errorf("list without configs.list: %d %v", status, m)
	}
	if status, m := h.call(noList, "POST", "/v1/configs", map[string]any{"name": "x", "config": map[string]any{"provider": "openai"}}); status != 403 {
		t.Errorf("create without configs.create: %d %v", status, m)
	}
}

// TestJWTRejected: every bad token is a 401 authentication_error with its
// code, on the data plane and on the control plane, and is audited.
func TestJWTRejected(t *testing.T) {
	h, p := startJWT(t)
	p.addRSA("unpublished", false)
	for _, tc := range []struct {
		name, raw, code string
	}{
		{"expired", p.token("rsa-1", jwt.MapClaims{"exp": time.Now().Add(-time.Minute).Unix()}), "expired_token"},
		{"no exp", p.token("rsa-1", jwt.MapClaims{"exp": nil}), "invalid_token"},
		{"not yet valid", p.token("rsa-1", jwt.MapClaims{"nbf": time.Now().Add(10 * time.Minute).Unix()}), "token_not_yet_valid"},
		{"wrong signature", p.token("rsa-1", nil, "unpublished"), "invalid_token_signature"},
		{"bad audience", p.token("ec-1", jwt.MapClaims{"aud": "another-service"}), "invalid_audience"},
		{"bad issuer", p.token("ec-1", jwt.MapClaims{"iss": "https://evil.test"}), "invalid_issuer"},
		{"other organisation", p.token("rsa-1", jwt.MapClaims{"gateway_oid": "00000000-0000-0000-0000-000000000000"}), "unknown_organisation"},
		{"unknown workspace", p.token("rsa-1", jwt.MapClaims{"gateway_workspace": "nowhere"}), "unknown_workspace"},
		// Last: the unknown kid spends the JWKS refresh the rate limit allows.
		{"unknown key id", p.token("unpublished", nil), "unknown_key_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := h.chatAs(tc.raw)
			if resp.StatusCode != 401 || errorField(t, body, "type") != "authentication_error" || errorField(t, body, "code") != tc.code {
				t.Fatalf("data plane: %d %s, want 401 %s", resp.StatusCode, body, tc.code)
			}
			dataID := resp.Header.Get("x-gateway-request-id")
			resp, body = h.do("GET", "/v1/configs", nil, map[string]string{"x-gateway-api-key": tc.raw})
			if resp.StatusCode != 401 || errorField(t, body, "code") != tc.code {
				t.Fatalf("control plane: %d %s, want 401 %s", resp.StatusCode, body, tc.code)
			}
			controlID := resp.Header.Get("x-gateway-request-id")

			rec := h.auditByRequest(dataID)
			if rec == nil {
				t.Fatalf("the data-plane failure %s is not in the audit log", dataID)
			}
			want := map[string]any{"action": "auth.jwt", "status_code": float64(401), "method": "POST", "uri": "/v1/chat/completions",
				"client_ip": "127.0.0.1", "actor_type": "api_key", "actor_id": ""}
			for k, v := range want {
				if rec[k] != v {
					t.Errorf("data-plane audit %s = %v, want %v", k, rec[k], v)
				}
			}
			rec = h.auditByRequest(controlID)
			if rec == nil {
				t.Fatalf("the control-plane failure %s is not in the audit log", controlID)
			}
			if rec["status_code"] != float64(401) || rec["method"] != "GET" || rec["uri"] != "/v1/configs" {
				t.Errorf("control-plane audit record %v", rec)
			}
		})
	}
	// An API-key failure on the data plane is counted, not audited as a JWT
	// failure.
	resp, _ := h.chatAs("gw-not-a-key")
	if rec := h.auditByRequest(resp.Header.Get("x-gateway-request-id")); rec != nil {
		t.Errorf("a bad API key on the data plane was audited: %v", rec)
	}
}

// TestJWTAuditDisabled: with AUDIT_LOGS_ENABLED OFF a rejected JWT is not
// recorded.
func TestJWTAuditDisabled(t *testing.T) {
	p := newIDP(t)
	p.addRSA("rsa-1", true)
	h := start(t, func(c *config.Config) {
		c.JWTJWKSURL = p.srv.URL
		c.Settings.Disabled["AUDIT_LOGS_ENABLED"] = true
	})
	resp, _ := h.chatAs(p.token("rsa-1", jwt.MapClaims{"exp": time.Now().Add(-time.Minute).Unix()}))
	if resp.StatusCode != 401 {
		t.Fatalf("expired token: %d", resp.StatusCode)
	}
	h.withStore(func(st *store.Store) {
		_, total, err := st.ListAuditRecords(context.Background(), audit.Filter{OrganisationID: h.app.Bootstrap.OrganisationID})
		if err != nil || total != 0 {
			t.Errorf("%d audit records with the audit log disabled (%v)", total, err)
		}
	})
}

// TestJWTKeyRotation: a key published in the JWKS after start is picked up
// on the first token that names it.
func TestJWTKeyRotation(t *testing.T) {
	h, p := startJWT(t)
	if resp, body := h.chatAs(p.token("rsa-1", nil)); resp.StatusCode != 200 {
		t.Fatalf("before rotation: %d %s", resp.StatusCode, body)
	}
	p.addEC("rotated", true)
	if resp, body := h.chatAs(p.token("rotated", nil)); resp.StatusCode != 200 {
		t.Fatalf("rotated key: %d %s", resp.StatusCode, body)
	}
	h.must(p.token("rotated", nil), "GET", "/v1/configs", nil)
}

// TestJWTWorkspaceClaim: gateway_workspace makes the token a workspace
// principal: it acts in that workspace and never sees another's resources.
func TestJWTWorkspaceClaim(t *testing.T) {
	h, p := startJWT(t)
	wsA, wsB := h.newWorkspace("team-a"), h.newWorkspace("team-b")
	cfgB := h.must(h.key, "POST", "/v1/configs", map[string]any{"name": "b", "config": map[string]any{"provider": "openai"}, "workspace_id": wsB})["slug"].(string)
	for _, claim := range []string{"team-a", wsA} {
		tok := p.token("rsa-1", jwt.MapClaims{"gateway_workspace": claim, "scope": "configs.create configs.read configs.list completions.write"})
		if status, m := h.call(tok, "GET", "/v1/configs/"+cfgB, nil); status != 404 {
			t.Errorf("%s: another workspace's config: %d %v, want 404", claim, status, m)
		}
		created := h.must(tok, "POST", "/v1/configs", map[string]any{"name": "a " + claim, "config": map[string]any{"provider": "openai"}})
		if created["workspace_id"] != wsA {
			t.Errorf("%s: config created in %v, want %s", claim, created["workspace_id"], wsA)
		}
		for _, d := range h.must(tok, "GET", "/v1/configs", nil)["data"].([]any) {
			if ws := d.(map[string]any)["workspace_id"]; ws != wsA {
				t.Errorf("%s: list shows a config of workspace %v", claim, ws)
			}
		}
		if status, m := h.call(tok, "GET", "/v1/configs", nil, "x-gateway-workspace", wsB); status != 404 {
			t.Errorf("%s: naming another workspace: %d %v, want 404", claim, status, m)
		}
		if resp, body := h.chatAs(tok); resp.StatusCode != 200 {
			t.Errorf("%s: chat: %d %s", claim, resp.StatusCode, body)
		}
	}
}

// TestJWTUserAttribution: a sub that names a user of the organisation acts
// with that user's role and is the audit log's actor; any other sub is a
// service identity.
func TestJWTUserAttribution(t *testing.T) {
	h, p := startJWT(t)
	adminID := h.addUser("ada@example.com", "admin", nil)
	memberID := h.addUser("bob@example.com", "member", nil)
	body := map[string]any{"name": "by ada", "config": map[string]any{"provider": "openai"}}
	scope := jwt.MapClaims{"scope": "configs.create configs.list"}
	for _, tc := range []struct {
		name      string
		claims    jwt.MapClaims
		status    int
		actorType string
		actorID   string
	}{
		{"sub is an email", jwt.MapClaims{"sub": "ada@example.com"}, 200, "user", adminID},
		{"sub is a user id", jwt.MapClaims{"sub": adminID}, 200, "user", adminID},
		{"email claim", jwt.MapClaims{"sub": "idp|42", "email": "Ada@Example.com"}, 200, "user", adminID},
		// An organisation-level token of a member carries the member's role,
		// which may not write organisation-wide (like the member's own key).
		{"member", jwt.MapClaims{"sub": memberID}, 403, "user", memberID},
		{"service identity", jwt.MapClaims{"sub": "svc-deployer"}, 200, "api_key", "jwt:svc-deployer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			claims := jwt.MapClaims{}
			for k, v := range scope {
				claims[k] = v
			}
			for k, v := range tc.claims {
				claims[k] = v
			}
			resp, raw := h.do("POST", "/v1/configs", body, map[string]string{"x-gateway-api-key": p.token("rsa-1", claims)})
			if resp.StatusCode != tc.status {
				t.Fatalf("create: %d %s, want %d", resp.StatusCode, raw, tc.status)
			}
			rec := h.auditByRequest(resp.Header.Get("x-gateway-request-id"))
			if rec == nil {
				t.Fatal("the write is not in the audit log")
			}
			if rec["actor_type"] != tc.actorType || rec["actor_id"] != tc.actorID {
				t.Errorf("audit actor %v %v, want %s %s", rec["actor_type"], rec["actor_id"], tc.actorType, tc.actorID)
			}
		})
	}
}

// TestJWTSameDataPlaneAsKeys: a JWT caller takes the data plane's path of
// an API key of the same workspace: its gateway_workspace decides which
// stored provider "@slug" names, and the integration's model allow-list
// and the provider's rate limit apply to it exactly as to the key.
func TestJWTSameDataPlaneAsKeys(t *testing.T) {
	h, p := startJWT(t)
	wsB := h.newWorkspace("team-b")
	keyB, _ := h.newKey(h.key, "workspace", "service", map[string]any{"workspace_id": wsB})
	integ := h.newIntegration("jwt-openai", "sk-stored-for-b", nil)
	h.must(h.key, "PUT", "/v1/integrations/"+integ+"/models", map[string]any{"models": []any{map[string]any{"slug": "gpt-4o", "enabled": true}}})
	h.must(h.key, "POST", "/v1/providers", map[string]any{"name": "B", "slug": "b-openai", "integration_id": integ, "workspace_id": wsB,
		"rate_limits": []any{map[string]any{"type": "requests", "unit": "rpd", "value": 3}}})

	tokB := p.token("rsa-1", jwt.MapClaims{"gateway_workspace": "team-b"})
	tokDefault := p.token("ec-1", nil)

	// The default workspace has no such provider, for a token as for a key.
	if resp, body := h.storedChat(tokDefault, "@b-openai", chatBody); resp.StatusCode != 400 || errorField(t, body, "code") != "unknown_provider" {
		t.Errorf("token of the default workspace: %d %s", resp.StatusCode, body)
	}
	// Workspace B's token and key share one provider, one allow-list and
	// one rate limit.
	if resp, body := h.storedChat(tokB, "@b-openai", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`); resp.StatusCode != 403 || errorField(t, body, "code") != "model_not_allowed" {
		t.Errorf("token, model not allowed: %d %s", resp.StatusCode, body)
	}
	for i, cred := range []string{tokB, keyB, tokB} {
		if resp, body := h.storedChat(cred, "@b-openai", chatBody); resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, body)
		}
		if got := h.up.Last().Header.Get("Authorization"); got != "Bearer sk-stored-for-b" {
			t.Errorf("request %d reached the upstream with %q", i, got)
		}
	}
	for _, cred := range []string{keyB, tokB} {
		if resp, body := h.storedChat(cred, "@b-openai", chatBody); resp.StatusCode != 429 {
			t.Errorf("past the provider's limit: %d %s", resp.StatusCode, body)
		}
	}
}
