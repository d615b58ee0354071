package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"

	"github.com/ai-gateway/gateway/internal/httpx"
)

// testJWKS serves a JWK Set whose keys the test can change (rotation).
type testJWKS struct {
	mu    sync.Mutex
	keys  []map[string]string
	srv   *httptest.Server
	fetch int
}

func newTestJWKS(t testing.TB) *testJWKS {
	t.Helper()
	j := &testJWKS{}
	j.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		j.mu.Lock()
		defer j.mu.Unlock()
		j.fetch++
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"keys": j.keys})
	}))
	t.Cleanup(j.srv.Close)
	return j
}

// publish adds the public half of key under kid.
func (j *testJWKS) publish(t testing.TB, kid string, key crypto.Signer) {
	t.Helper()
	b64 := base64.RawURLEncoding.EncodeToString
	var jwk map[string]string
	switch pub := key.Public().(type) {
	case *rsa.PublicKey:
		jwk = map[string]string{"kty": "RSA", "n": b64(pub.N.Bytes()), "e": b64(big.NewInt(int64(pub.E)).Bytes())}
	case *ecdsa.PublicKey:
		ec, err := pub.ECDH()
		if err != nil {
			t.Fatal(err)
		}
		raw := ec.Bytes() // 0x04 || X || Y
		jwk = map[string]string{"kty": "EC", "crv": "P-256", "x": b64(raw[1:33]), "y": b64(raw[33:])}
	default:
		t.Fatalf("unsupported key %T", pub)
	}
	jwk["kid"], jwk["use"] = kid, "sig"
	j.mu.Lock()
	j.keys = append(j.keys, jwk)
	j.mu.Unlock()
}

func (j *testJWKS) fetches() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.fetch
}

func rsaKey(t testing.TB) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func ecKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// sign returns a compact JWT of claims signed with key under kid ("" for
// no kid header).
func sign(t testing.TB, method jwt.SigningMethod, kid string, key any, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// memDirectory is an in-memory JWTDirectory counting lookups.
type memDirectory struct {
	mu         sync.Mutex
	users      map[string]string // id or email -> id
	workspaces map[string]string // id or slug -> id
	lookups    int
	fail       error
}

func (d *memDirectory) find(m map[string]string, key string) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lookups++
	if d.fail != nil {
		return "", d.fail
	}
	if id, ok := m[key]; ok {
		return id, nil
	}
	return "", httpx.ErrNotFound
}

func (d *memDirectory) UserID(_ context.Context, _, s string) (string, error) {
	return d.find(d.users, strings.ToLower(s))
}

func (d *memDirectory) WorkspaceID(_ context.Context, _, s string) (string, error) {
	return d.find(d.workspaces, s)
}

func (d *memDirectory) DefaultWorkspaceID(context.Context, string) (string, error) {
	return d.find(d.workspaces, "default")
}

const testOrg = "org-1"

func newDirectory() *memDirectory {
	return &memDirectory{
		users:      map[string]string{"u-1": "u-1", "ada@example.com": "u-1"},
		workspaces: map[string]string{"default": "ws-default", "ws-2": "ws-2", "team": "ws-2"},
	}
}

func newTestVerifier(t testing.TB, j *testJWKS, d JWTDirectory, mutate ...func(*JWTOptions)) *JWTVerifier {
	t.Helper()
	o := JWTOptions{JWKSURL: j.srv.URL, OrganisationID: testOrg, Directory: d}
	for _, m := range mutate {
		m(&o)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	v, err := NewJWTVerifier(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestScopeClaims(t *testing.T) {
	for _, tc := range []struct {
		name, payload string
		want          []string
		wantErr       bool
	}{
		{"space separated", `{"scope":"completions.write configs.read"}`, []string{"completions.write", "configs.read"}, false},
		{"array", `{"scopes":["configs.list","logs.view"]}`, []string{"configs.list", "logs.view"}, false},
		{"both, deduplicated", `{"scope":"configs.read","scopes":["configs.read","api_keys.list"]}`, []string{"configs.read", "api_keys.list"}, false},
		{"deployment spelling", `{"scope":"deployments:create deployments.read"}`, []string{"deployments.create", "deployments.read"}, false},
		{"unknown names ignored", `{"scope":"openid profile * configs.frobnicate completions.write"}`, []string{"completions.write"}, false},
		{"scope as array", `{"scope":["completions.write"]}`, []string{"completions.write"}, false},
		{"none", `{}`, []string{}, false},
		{"null", `{"scopes":null}`, []string{}, false},
		{"number", `{"scope":42}`, nil, true},
		{"array of numbers", `{"scopes":[1,2]}`, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c gatewayClaims
			err := json.Unmarshal([]byte(tc.payload), &c)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if diff := cmp.Diff(tc.want, c.grantedScopes()); diff != "" {
				t.Errorf("scopes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGatewayClaimNames(t *testing.T) {
	var c gatewayClaims
	payload := `{"sub":"svc","email":"a@b.c","gateway_oid":"o","gateway_workspace":"w","exp":1}`
	if err := json.Unmarshal([]byte(payload), &c); err != nil {
		t.Fatal(err)
	}
	got := []string{c.Subject, c.Email, c.OrganisationID, c.Workspace}
	if diff := cmp.Diff([]string{"svc", "a@b.c", "o", "w"}, got); diff != "" {
		t.Errorf("claims (-want +got):\n%s", diff)
	}
}

func TestLooksLikeJWT(t *testing.T) {
	for raw, want := range map[string]bool{
		"eyJhbGciOi.eyJzdWIi.c2ln": true,
		"eyJhbGciOi.eyJzdWIi":      false,
		"eyJa.b.c.d":               false,
		"gw-abc.def.ghi":           false,
		GenerateKey():              false,
		"":                         false,
	} {
		if got := LooksLikeJWT(raw); got != want {
			t.Errorf("LooksLikeJWT(%q) = %v, want %v", raw, got, want)
		}
	}
}

func TestJWTVerify(t *testing.T) {
	j := newTestJWKS(t)
	rk, ek, other := rsaKey(t), ecKey(t), rsaKey(t)
	j.publish(t, "rsa-1", rk)
	j.publish(t, "ec-1", ek)
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	v := newTestVerifier(t, j, newDirectory(), func(o *JWTOptions) {
		o.Audience, o.Issuer = "gateway", "https://idp.example"
		o.Now = func() time.Time { return now }
	})
	base := func(extra jwt.MapClaims) jwt.MapClaims {
		c := jwt.MapClaims{
			"sub": "svc-reporting", "aud": "gateway", "iss": "https://idp.example",
			"exp": now.Add(time.Hour).Unix(), "iat": now.Unix(), "scope": "completions.write configs.read",
		}
		for k, v := range extra {
			if v == nil {
				delete(c, k)
				continue
			}
			c[k] = v
		}
		return c
	}
	rs := func(extra jwt.MapClaims) string { return sign(t, jwt.SigningMethodRS256, "rsa-1", rk, base(extra)) }
	service := &Principal{OrganisationID: testOrg, WorkspaceID: "ws-default", KeyType: KeyTypeOrganisation,
		Scopes: []string{"completions.write", "configs.read"}, Method: MethodJWT, Subject: "svc-reporting"}
	with := func(f func(p *Principal)) *Principal { p := *service; f(&p); return &p }

	for _, tc := range []struct {
		name     string
		raw      string
		want     *Principal
		wantCode string
	}{
		{"RS256 service identity", rs(nil), service, ""},
		{"ES256", sign(t, jwt.SigningMethodES256, "ec-1", ek, base(nil)), service, ""},
		{"sub is a user id", rs(jwt.MapClaims{"sub": "u-1"}), with(func(p *Principal) { p.UserID, p.Subject = "u-1", "u-1" }), ""},
		{"sub is a user email", rs(jwt.MapClaims{"sub": "Ada@Example.com"}), with(func(p *Principal) { p.UserID, p.Subject = "u-1", "Ada@Example.com" }), ""},
		{"email claim names the user", rs(jwt.MapClaims{"sub": "idp|123", "email": "ada@example.com"}), with(func(p *Principal) { p.UserID, p.Subject = "u-1", "idp|123" }), ""},
		{"email without sub", rs(jwt.MapClaims{"sub": nil, "email": "bob@example.com"}), with(func(p *Principal) { p.Subject = "bob@example.com" }), ""},
		{"workspace by slug", rs(jwt.MapClaims{"gateway_workspace": "team"}), with(func(p *Principal) { p.KeyType, p.WorkspaceID = KeyTypeWorkspace, "ws-2" }), ""},
		{"own organisation", rs(jwt.MapClaims{"gateway_oid": testOrg}), service, ""},
		{"scopes array", rs(jwt.MapClaims{"scope": nil, "scopes": []string{"configs.list"}}), with(func(p *Principal) { p.Scopes = []string{"configs.list"} }), ""},
		{"nbf within leeway", rs(jwt.MapClaims{"nbf": now.Add(30 * time.Second).Unix()}), service, ""},
		{"iat within leeway", rs(jwt.MapClaims{"iat": now.Add(30 * time.Second).Unix()}), service, ""},

		{"expired", rs(jwt.MapClaims{"exp": now.Add(-time.Minute).Unix()}), nil, "expired_token"},
		{"expired a second ago", rs(jwt.MapClaims{"exp": now.Add(-time.Second).Unix()}), nil, "expired_token"},
		{"no exp", rs(jwt.MapClaims{"exp": nil}), nil, "invalid_token"},
		{"nbf beyond leeway", rs(jwt.MapClaims{"nbf": now.Add(2 * time.Minute).Unix()}), nil, "token_not_yet_valid"},
		{"iat beyond leeway", rs(jwt.MapClaims{"iat": now.Add(2 * time.Minute).Unix()}), nil, "token_not_yet_valid"},
		{"wrong signature", sign(t, jwt.SigningMethodRS256, "rsa-1", other, base(nil)), nil, "invalid_token_signature"},
		{"tampered payload", tamper(rs(nil)), nil, "invalid_token_signature"},
		{"EC key for an RS256 token", sign(t, jwt.SigningMethodRS256, "ec-1", rk, base(nil)), nil, "invalid_token_signature"},
		{"unknown kid", sign(t, jwt.SigningMethodRS256, "nope", rk, base(nil)), nil, "unknown_key_id"},
		{"no kid", sign(t, jwt.SigningMethodRS256, "", rk, base(nil)), nil, "invalid_token"},
		{"HS256", sign(t, jwt.SigningMethodHS256, "rsa-1", []byte("secret"), base(nil)), nil, "invalid_token"},
		{"bad audience", rs(jwt.MapClaims{"aud": "someone-else"}), nil, "invalid_audience"},
		{"no audience", rs(jwt.MapClaims{"aud": nil}), nil, "invalid_audience"},
		{"bad issuer", rs(jwt.MapClaims{"iss": "https://evil.example"}), nil, "invalid_issuer"},
		{"other organisation", rs(jwt.MapClaims{"gateway_oid": "org-2"}), nil, "unknown_organisation"},
		{"unknown workspace", rs(jwt.MapClaims{"gateway_workspace": "elsewhere"}), nil, "unknown_workspace"},
		{"no subject", rs(jwt.MapClaims{"sub": nil}), nil, "invalid_token"},
		{"bad scope type", rs(jwt.MapClaims{"scope": 7}), nil, "invalid_token"},
		{"garbage", "eyJhbGciOiJSUzI1NiJ9.eyJzdWIi.bad", nil, "invalid_token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := v.Verify(context.Background(), tc.raw)
			if tc.wantCode != "" {
				var he *httpx.Error
				if !errors.As(err, &he) || he.Status != http.StatusUnauthorized || he.Code != tc.wantCode || he.Type != httpx.TypeAuthentication {
					t.Fatalf("err = %v, want 401 %s", err, tc.wantCode)
				}
				if !errors.Is(err, ErrJWT) {
					t.Errorf("err = %v does not wrap ErrJWT", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if diff := cmp.Diff(tc.want, p); diff != "" {
				t.Errorf("principal (-want +got):\n%s", diff)
			}
		})
	}
}

// tamper changes the payload of a signed token, keeping its signature.
func tamper(raw string) string {
	parts := strings.Split(raw, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	payload = []byte(strings.Replace(string(payload), "svc-reporting", "svc-root", 1))
	parts[1] = base64.RawURLEncoding.EncodeToString(payload)
	return strings.Join(parts, ".")
}

func TestJWTCache(t *testing.T) {
	j := newTestJWKS(t)
	rk := rsaKey(t)
	j.publish(t, "k", rk)
	d := newDirectory()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	v := newTestVerifier(t, j, d, func(o *JWTOptions) {
		o.CacheTTL = 10 * time.Minute
		o.Now = func() time.Time { return now }
	})
	raw := sign(t, jwt.SigningMethodRS256, "k", rk, jwt.MapClaims{"sub": "svc", "exp": now.Add(time.Minute).Unix()})
	first, err := v.Verify(context.Background(), raw)
	if err != nil {
		t.Fatal(err)
	}
	lookups := d.lookups
	second, err := v.Verify(context.Background(), raw)
	if err != nil {
		t.Fatal(err)
	}
	if second != first || d.lookups != lookups {
		t.Errorf("second verification was not served from the cache (lookups %d -> %d)", lookups, d.lookups)
	}
	// The cache entry ends at exp, before the cache TTL.
	now = now.Add(time.Minute)
	if _, err := v.Verify(context.Background(), raw); err == nil || err.(*httpx.Error).Code != "expired_token" {
		t.Errorf("after exp: err = %v, want expired_token", err)
	}
	// A failed directory is a 503, still marked as a JWT failure, and not cached.
	d.fail = errors.New("database down")
	raw2 := sign(t, jwt.SigningMethodRS256, "k", rk, jwt.MapClaims{"sub": "svc", "exp": now.Add(time.Hour).Unix()})
	_, err = v.Verify(context.Background(), raw2)
	var he *httpx.Error
	if !errors.As(err, &he) || he.Status != http.StatusServiceUnavailable || !errors.Is(err, ErrJWT) {
		t.Fatalf("directory down: err = %v, want 503 auth_unavailable", err)
	}
	d.fail = nil
	if _, err := v.Verify(context.Background(), raw2); err != nil {
		t.Errorf("after the directory recovered: %v", err)
	}
}

func TestJWTKeyRotation(t *testing.T) {
	j := newTestJWKS(t)
	old, next := rsaKey(t), ecKey(t)
	j.publish(t, "old", old)
	v := newTestVerifier(t, j, newDirectory())
	claims := jwt.MapClaims{"sub": "svc", "exp": time.Now().Add(time.Hour).Unix()}
	if _, err := v.Verify(context.Background(), sign(t, jwt.SigningMethodRS256, "old", old, claims)); err != nil {
		t.Fatalf("old key: %v", err)
	}
	fetches := j.fetches()
	j.publish(t, "new", next)
	if _, err := v.Verify(context.Background(), sign(t, jwt.SigningMethodES256, "new", next, claims)); err != nil {
		t.Fatalf("rotated key: %v", err)
	}
	if j.fetches() != fetches+1 {
		t.Errorf("JWKS fetched %d times for the new kid, want 1", j.fetches()-fetches)
	}
	// A second unknown kid within the refresh interval fails without
	// another fetch.
	_, err := v.Verify(context.Background(), sign(t, jwt.SigningMethodES256, "made-up", next, claims))
	if he, ok := err.(*httpx.Error); !ok || he.Code != "unknown_key_id" {
		t.Fatalf("made-up kid: err = %v, want unknown_key_id", err)
	}
	if j.fetches() != fetches+1 {
		t.Errorf("an unknown kid refreshed the JWKS again within the interval")
	}
}

func TestAuthenticatorDelegatesJWT(t *testing.T) {
	j := newTestJWKS(t)
	rk := rsaKey(t)
	j.publish(t, "k", rk)
	v := newTestVerifier(t, j, newDirectory())
	a := NewAuthenticator(&memKeys{}, time.Minute)
	a.AddVerifier(v)
	raw := sign(t, jwt.SigningMethodRS256, "k", rk, jwt.MapClaims{"sub": "svc", "exp": time.Now().Add(time.Hour).Unix(), "scope": "completions.write"})
	p, err := a.Authenticate(context.Background(), raw)
	if err != nil || p.Method != MethodJWT || !p.Can(ScopeCompletionsWrite) {
		t.Fatalf("Authenticate(JWT) = %+v, %v", p, err)
	}
}

// BenchmarkJWT measures what a JWT costs the hot path: a token seen before
// (the cache), and a token's first use (signature and claim checks, the
// directory lookup).
func BenchmarkJWT(b *testing.B) {
	j := newTestJWKS(b)
	for _, tc := range []struct {
		name   string
		method jwt.SigningMethod
		key    crypto.Signer
	}{{"RS256", jwt.SigningMethodRS256, rsaKey(b)}, {"ES256", jwt.SigningMethodES256, ecKey(b)}} {
		j.publish(b, tc.name, tc.key)
		v := newTestVerifier(b, j, newDirectory())
		claims := func(i int) jwt.MapClaims {
			return jwt.MapClaims{"sub": "svc", "exp": time.Now().Add(time.Hour).Unix(), "scope": "completions.write", "jti": strconv.Itoa(i)}
		}
		ctx := context.Background()
		b.Run(tc.name+"/cached", func(b *testing.B) {
			tok := sign(b, tc.method, tc.name, tc.key, claims(0))
			if _, err := v.Verify(ctx, tok); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(ctx, tok); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/first-use", func(b *testing.B) {
			toks := make([]string, 512)
			for i := range toks {
				toks[i] = sign(b, tc.method, tc.name, tc.key, claims(i+1))
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				v.mu.Lock()
				clear(v.cache)
				v.mu.Unlock()
				if _, err := v.Verify(ctx, toks[i%len(toks)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
