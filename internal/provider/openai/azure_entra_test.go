package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ai-gateway/gateway/internal/llm"
	"github.com/ai-gateway/gateway/internal/provider"
)

// fakeEntra is a token endpoint speaking Entra ID's v2.0 wire format.
type fakeEntra struct {
	srv     *httptest.Server
	fetches atomic.Int32
	// status, when set, is answered with body instead of a token.
	status int
	body   string
	header http.Header
	delay  time.Duration
	mu     sync.Mutex
	forms  []map[string]string
	paths  []string
}

func newFakeEntra(t *testing.T) *fakeEntra {
	f := &fakeEntra{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := f.fetches.Add(1)
		if err := r.ParseForm(); err != nil || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
			http.Error(w, "bad request", 400)
			return
		}
		form := map[string]string{}
		for k := range r.PostForm {
			form[k] = r.PostForm.Get(k)
		}
		f.mu.Lock()
		f.forms = append(f.forms, form)
		f.paths = append(f.paths, r.URL.Path)
		f.mu.Unlock()
		if f.delay > 0 {
			time.Sleep(f.delay)
		}
		w.Header().Set("Content-Type", "application/json")
		for k, vs := range f.header {
			w.Header()[k] = vs
		}
		if f.status != 0 {
			w.WriteHeader(f.status)
			fmt.Fprint(w, f.body)
			return
		}
		fmt.Fprintf(w, `{"token_type":"Bearer","expires_in":3599,"ext_expires_in":3599,"access_token":"eyJhbGciOiJSUzI1NiJ9.token%d.sig"}`, n)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// clock is an injectable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// useClock gives the test its own token cache on a fake clock.
func useClock(t *testing.T) *clock {
	c := &clock{t: time.Unix(1767225600, 0)}
	old := entraTokens
	entraTokens = newTokenCache(c.now)
	t.Cleanup(func() { entraTokens = old })
	return c
}

func entraTarget(providerName string, f *fakeEntra, secret string) *provider.Target {
	return &provider.Target{Provider: providerName, APIKey: "ignored-api-key", Options: map[string]string{
		"azure_resource_name":     "myres",
		OptAzureEntraClientID:     "11111111-2222-3333-4444-555555555555",
		OptAzureEntraClientSecret: secret,
		OptAzureEntraTenantID:     "contoso.onmicrosoft.com",
		OptAzureAuthorityHost:     f.srv.URL,
	}}
}

func prepare(t *testing.T, c *Client, target *provider.Target) (*http.Request, error) {
	t.Helper()
	out, _ := http.NewRequest("POST", "http://placeholder", nil)
	err := c.PrepareForward(out, target, "/chat/completions", "")
	return out, err
}

func TestEntraTokenFetchedOnceAndSentAsBearer(t *testing.T) {
	useClock(t)
	f := newFakeEntra(t)
	for _, name := range []string{"azure-openai", "azure-ai"} {
		out, err := prepare(t, byName(t, name), entraTarget(name, f, "s3cret"))
		if err != nil {
			t.Fatal(err)
		}
		if got := out.Header.Get("Authorization"); got != "Bearer eyJhbGciOiJSUzI1NiJ9.token1.sig" || out.Header.Get("api-key") != "" {
			t.Errorf("%s: Authorization %q, api-key %q", name, got, out.Header.Get("api-key"))
		}
	}
	if n := f.fetches.Load(); n != 1 {
		t.Errorf("%d token fetches for two requests with one credential, want 1", n)
	}
	form, path := f.forms[0], f.paths[0]
	if path != "/contoso.onmicrosoft.com/oauth2/v2.0/token" || form["grant_type"] != "client_credentials" || form["client_id"] != "11111111-2222-3333-4444-555555555555" ||
		form["client_secret"] != "s3cret" || form["scope"] != "https://cognitiveservices.azure.com/.default" {
		t.Errorf("token request %s %v", path, form)
	}
	// Another secret for the same tenant and client is another credential.
	if _, err := prepare(t, byName(t, "azure-openai"), entraTarget("azure-openai", f, "other")); err != nil {
		t.Fatal(err)
	}
	if n := f.fetches.Load(); n != 2 {
		t.Errorf("a different secret reused the cached token (%d fetches)", n)
	}
}

func TestEntraConcurrentMissesShareOneFetch(t *testing.T) {
	useClock(t)
	f := newFakeEntra(t)
	f.delay = 100 * time.Millisecond
	c := byName(t, "azure-openai")
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := prepare(t, c, entraTarget("azure-openai", f, "s3cret"))
			if err == nil && out.Header.Get("Authorization") != "Bearer eyJhbGciOiJSUzI1NiJ9.token1.sig" {
				err = fmt.Errorf("authorization %q", out.Header.Get("Authorization"))
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := f.fetches.Load(); n != 1 {
		t.Errorf("%d fetches for 20 concurrent misses, want 1", n)
	}
}

func TestEntraRefreshBeforeExpiry(t *testing.T) {
	clk := useClock(t)
	f := newFakeEntra(t)
	c := byName(t, "azure-openai")
	auth := func() string {
		out, err := prepare(t, c, entraTarget("azure-openai", f, "s3cret"))
		if err != nil {
			t.Fatal(err)
		}
		return out.Header.Get("Authorization")
	}
	first := auth()
	clk.add(50 * time.Minute) // 3599 s lifetime, refreshed 5 min early: still cached
	if got := auth(); got != first || f.fetches.Load() != 1 {
		t.Fatalf("token refreshed too early: %q after %d fetches", got, f.fetches.Load())
	}
	clk.add(5 * time.Minute) // 55 min: inside the refresh margin
	if got := auth(); got == first || got != "Bearer eyJhbGciOiJSUzI1NiJ9.token2.sig" {
		t.Fatalf("token not refreshed: %q", got)
	}
	// A failed refresh keeps serving the previous token while it is valid.
	clk.add(56 * time.Minute)
	f.status, f.body = 503, `{"error":"temporarily_unavailable","error_description":"AADSTS50196: try later"}`
	if got := auth(); got != "Bearer eyJhbGciOiJSUzI1NiJ9.token2.sig" {
		t.Fatalf("previous valid token not kept after a failed refresh: %q", got)
	}
	clk.add(10 * time.Minute) // now past expiry: the failure surfaces
	if _, err := prepare(t, c, entraTarget("azure-openai", f, "s3cret")); err == nil {
		t.Fatal("expired token served after a failed refresh")
	}
}

func TestEntraTokenErrors(t *testing.T) {
	const secret = "Sup3r~Secret.Value"
	for _, tc := range []struct {
		name       string
		status     int
		body       string
		header     http.Header
		wantStatus int
		wantMsg    string
	}{
		{"bad secret", 401, `{"error":"invalid_client","error_description":"AADSTS7000215: Invalid client secret provided. Ensure the secret being sent in the request is the client secret value.\r\nTrace ID: 1\r\nCorrelation ID: 2","error_codes":[7000215]}`, nil,
			401, "Microsoft Entra ID refused the client credentials (tenant contoso.onmicrosoft.com, client 11111111-2222-3333-4444-555555555555): invalid_client: AADSTS7000215: Invalid client secret provided. Ensure the secret being sent in the request is the client secret value."},
		{"unknown tenant", 400, `{"error":"invalid_request","error_description":"AADSTS90002: Tenant 'contoso.onmicrosoft.com' not found."}`, nil,
			401, "invalid_request: AADSTS90002: Tenant 'contoso.onmicrosoft.com' not found."},
		{"echoed secret is redacted", 400, `{"error":"invalid_request","error_description":"bad value Sup3r~Secret.Value"}`, nil,
			401, "bad value [redacted]"},
		{"throttled", 429, `{"error":"temporarily_unavailable","error_description":"slow down"}`, http.Header{"Retry-After": {"7"}},
			429, "Microsoft Entra ID is rate limiting token requests: temporarily_unavailable: slow down"},
		{"server failure", 500, `<html>oops</html>`, nil, 502, "Microsoft Entra ID token endpoint failed: HTTP 500"},
		{"no token in answer", 200, `{"token_type":"Bearer"}`, nil, 502, "Microsoft Entra ID answered without an access token and its lifetime"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			useClock(t)
			f := newFakeEntra(t)
			f.status, f.body, f.header = tc.status, tc.body, tc.header
			_, err := prepare(t, byName(t, "azure-openai"), entraTarget("azure-openai", f, secret))
			var ue *provider.UpstreamError
			if !errors.As(err, &ue) || ue.Status != tc.wantStatus {
				t.Fatalf("err = %v, want an UpstreamError %d", err, tc.wantStatus)
			}
			d := provider.ParseErrorBody(ue.Body)
			if !strings.Contains(d.Message, tc.wantMsg) || d.Code != "azure_entra_token_error" {
				t.Errorf("message %q code %q, want it to contain %q", d.Message, d.Code, tc.wantMsg)
			}
			if strings.Contains(string(ue.Body), secret) || strings.Contains(err.Error(), secret) {
				t.Errorf("secret leaked: %s", ue.Body)
			}
			if tc.header != nil && ue.Header.Get("Retry-After") != "7" {
				t.Errorf("Retry-After not kept: %v", ue.Header)
			}
			// Failures are not cached: the next request asks again.
			prepare(t, byName(t, "azure-openai"), entraTarget("azure-openai", f, secret))
			if n := f.fetches.Load(); n != 2 {
				t.Errorf("%d fetches after two failed requests, want 2", n)
			}
		})
	}
}

func TestEntraConfigErrors(t *testing.T) {
	useClock(t)
	f := newFakeEntra(t)
	for _, tc := range []struct {
		name  string
		patch map[string]string
		param string
	}{
		{"missing secret", map[string]string{OptAzureEntraClientSecret: ""}, OptAzureEntraClientSecret},
		{"missing tenant and client", map[string]string{OptAzureEntraTenantID: "", OptAzureEntraClientID: ""}, OptAzureEntraClientID},
		{"tenant with a path", map[string]string{OptAzureEntraTenantID: "../evil"}, OptAzureEntraTenantID},
		{"plain http authority", map[string]string{OptAzureAuthorityHost: "http://login.example.com"}, OptAzureAuthorityHost},
		{"authority with a path", map[string]string{OptAzureAuthorityHost: "https://login.example.com/x"}, OptAzureAuthorityHost},
		{"authority not a URL", map[string]string{OptAzureAuthorityHost: "login.microsoftonline.com"}, OptAzureAuthorityHost},
	} {
		target := entraTarget("azure-openai", f, "s3cret")
		for k, v := range tc.patch {
			target.Options[k] = v
		}
		_, err := prepare(t, byName(t, "azure-openai"), target)
		var ce *provider.ConfigError
		if !errors.As(err, &ce) || ce.Param != tc.param || strings.Contains(ce.Msg, "s3cret") {
			t.Errorf("%s: err = %#v, want a ConfigError on %s", tc.name, err, tc.param)
		}
	}
	if n := f.fetches.Load(); n != 0 {
		t.Errorf("token endpoint called %d times for invalid configurations", n)
	}
	if a, err := authorityOf("https://login.microsoftonline.us/"); err != nil || a != "https://login.microsoftonline.us" {
		t.Errorf("sovereign authority: %q %v", a, err)
	}
}

func TestEntraUnreachableAndCallerDeadline(t *testing.T) {
	useClock(t)
	f := newFakeEntra(t)
	target := entraTarget("azure-openai", f, "s3cret")
	target.Options[OptAzureAuthorityHost] = "http://127.0.0.1:1"
	if _, err := prepare(t, byName(t, "azure-openai"), target); !errors.Is(err, provider.ErrUnreachable) {
		t.Errorf("unreachable authority: %v", err)
	}
	f.delay = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	out, _ := http.NewRequestWithContext(ctx, "POST", "http://placeholder", nil)
	start := time.Now()
	err := byName(t, "azure-openai").PrepareForward(out, entraTarget("azure-openai", f, "s3cret"), "/chat/completions", "")
	if !errors.Is(err, provider.ErrTimeout) || time.Since(start) > 250*time.Millisecond {
		t.Errorf("caller deadline: %v after %v", err, time.Since(start))
	}
}

func TestAzureAccessTokenAsKey(t *testing.T) {
	const jwt = "eyJ0eXAiOiJKV1QifQ.eyJhdWQiOiJjb2duaXRpdmUifQ.c2ln"
	for _, tc := range []struct{ key, wantAuth, wantAPIKey string }{
		{jwt, "Bearer " + jwt, ""},
		{"0123456789abcdef0123456789abcdef", "", "0123456789abcdef0123456789abcdef"},
		{"eyJnot-a-jwt", "", "eyJnot-a-jwt"},
	} {
		for _, name := range []string{"azure-openai", "azure-ai"} {
			out, err := prepare(t, byName(t, name), &provider.Target{Provider: name, APIKey: tc.key, Options: map[string]string{"azure_resource_name": "myres"}})
			if err != nil {
				t.Fatal(err)
			}
			if out.Header.Get("Authorization") != tc.wantAuth || out.Header.Get("api-key") != tc.wantAPIKey {
				t.Errorf("%s key %q: headers %v", name, tc.key, out.Header)
			}
		}
	}
}

func TestAzureAIEndpoint(t *testing.T) {
	for _, tc := range []struct {
		name, customHost, path, query string
		opts                          map[string]string
		want                          string
	}{
		{"default version", "", "/chat/completions", "", map[string]string{"azure_resource_name": "myres"},
			"https://myres.services.ai.azure.com/models/chat/completions?api-version=2024-05-01-preview"},
		{"version option", "", "/embeddings", "", map[string]string{"azure_resource_name": "myres", "azure_api_version": "2025-04-01"},
			"https://myres.services.ai.azure.com/models/embeddings?api-version=2025-04-01"},
		{"client query kept", "", "/info", "api-version=2024-08-01&x=1", map[string]string{"azure_resource_name": "myres"},
			"https://myres.services.ai.azure.com/models/info?api-version=2024-08-01&x=1"},
		{"custom host", "http://127.0.0.1:9/", "/chat/completions", "", nil,
			"http://127.0.0.1:9/models/chat/completions?api-version=2024-05-01-preview"},
	} {
		out, err := prepare(t, byName(t, "azure-ai"), &provider.Target{Provider: "azure-ai", APIKey: "k", CustomHost: tc.customHost, Options: tc.opts})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		out2, _ := http.NewRequest("GET", "http://placeholder", nil)
		if err := byName(t, "azure-ai").PrepareForward(out2, &provider.Target{Provider: "azure-ai", APIKey: "k", CustomHost: tc.customHost, Options: tc.opts}, tc.path, tc.query); err != nil {
			t.Fatal(err)
		}
		if got := out2.URL.String(); got != tc.want {
			t.Errorf("%s: URL %s, want %s", tc.name, got, tc.want)
		}
		if out.Header.Get("api-key") != "k" || out.Header.Get("extra-parameters") != "pass-through" {
			t.Errorf("%s: headers %v", tc.name, out.Header)
		}
	}
	for _, opts := range []map[string]string{nil, {"azure_resource_name": "a.b/c"}} {
		_, err := prepare(t, byName(t, "azure-ai"), &provider.Target{Provider: "azure-ai", Options: opts})
		var ce *provider.ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%v: err = %v, want a ConfigError", opts, err)
		}
	}
	// A value the client forwarded wins.
	out, _ := http.NewRequest("POST", "http://placeholder", nil)
	out.Header.Set("extra-parameters", "drop")
	byName(t, "azure-ai").PrepareForward(out, &provider.Target{Provider: "azure-ai", Options: map[string]string{"azure_resource_name": "r"}}, "/chat/completions", "")
	if out.Header.Get("extra-parameters") != "drop" {
		t.Errorf("forwarded extra-parameters replaced: %v", out.Header)
	}
}

// TestAzureChatWithEntra drives Chat and ChatStream end to end against a
// fake Azure OpenAI: the access token reaches the upstream, the api-key
// does not.
func TestAzureChatWithEntra(t *testing.T) {
	useClock(t)
	f := newFakeEntra(t)
	var mu sync.Mutex
	var seen []http.Header
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		if r.URL.Path != "/openai/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("Accept") == "text/event-stream" {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":null}]}\n\ndata: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	defer up.Close()
	target := entraTarget("azure-openai", f, "s3cret")
	target.CustomHost = up.URL
	body := []byte(`{"model":"dep","messages":[{"role":"user","content":"hi"}]}`)
	req, err := llm.DecodeChatRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	c := New(Spec{Name: "azure-openai", Azure: true}, http.DefaultClient)
	if _, err := c.Chat(context.Background(), &provider.ChatCall{Target: target, Request: req, Body: body}); err != nil {
		t.Fatal(err)
	}
	s, err := c.ChatStream(context.Background(), &provider.ChatCall{Target: target, Request: req, Body: body})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, h := range seen {
		if h.Get("Authorization") != "Bearer eyJhbGciOiJSUzI1NiJ9.token1.sig" || h.Get("api-key") != "" {
			t.Errorf("upstream auth headers %v", h)
		}
	}
	if len(seen) != 2 || f.fetches.Load() != 1 {
		t.Errorf("%d upstream calls, %d token fetches", len(seen), f.fetches.Load())
	}
}
