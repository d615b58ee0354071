package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ai-gateway/gateway/internal/auth"
	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/metrics"
	"github.com/ai-gateway/gateway/internal/provider"
	"github.com/ai-gateway/gateway/internal/provider/openai"
	"github.com/ai-gateway/gateway/internal/provider/providertest"
	"github.com/ai-gateway/gateway/internal/reqlog"
	"github.com/ai-gateway/gateway/internal/routing"
)

// logSink keeps the records the data plane hands over.
type logSink struct {
	mu   sync.Mutex
	recs map[string]*reqlog.Record
}

func (l *logSink) Enqueue(rec *reqlog.Record) error {
	l.mu.Lock()
	l.recs[rec.ID] = rec
	l.mu.Unlock()
	return nil
}

type vkStub map[string]*auth.ResolvedVirtualKey

func (v vkStub) Resolve(_ context.Context, _, slug string) (*auth.ResolvedVirtualKey, error) {
	if vk, ok := v[slug]; ok {
		return vk, nil
	}
	return nil, httpx.Unauthorized("invalid_virtual_key", fmt.Sprintf("virtual key %q not found", slug))
}

// savedStub serves saved configs from memory.
type savedStub map[string]*routing.StoredConfig

func (s savedStub) Plan(_ context.Context, org, slug, param string) (*routing.Plan, *routing.StoredConfig, error) {
	c, ok := s[slug]
	if !ok || c.OrganisationID != org {
		return nil, nil, routing.NotFound(slug, param)
	}
	p, err := routing.Compile(c.Config, "saved:"+c.ID, routing.ParseOptions{})
	return p, c, err
}

type gw struct {
	t         *testing.T
	g         *Gateway
	srv       *httptest.Server
	logs      *logSink
	mu        sync.Mutex
	sleeps    []time.Duration
	principal auth.Principal
	saved     savedStub
}

func newGW(t *testing.T) *gw {
	t.Helper()
	h := &gw{t: t, logs: &logSink{recs: map[string]*reqlog.Record{}}, saved: savedStub{}}
	h.principal = auth.Principal{OrganisationID: "org", WorkspaceID: "ws", APIKeyID: "key", KeyType: auth.KeyTypeOrganisation, Scopes: []string{auth.ScopeAll}}
	hc := provider.NewHTTPClient()
	src := rand.New(rand.NewPCG(7, 7))
	var rmu sync.Mutex
	h.g = New(provider.NewRegistry(openai.All(hc)...), vkStub{
		"vk-b": {Slug: "vk-b", WorkspaceID: "ws", Provider: "openai", APIKey: "sk-from-vk"},
	}, h.logs, metrics.New(nil), hc, slog.New(slog.DiscardHandler), Options{
		LogBodies: true, Configs: h.saved,
		Sleep: func(ctx context.Context, d time.Duration) error {
			h.mu.Lock()
			h.sleeps = append(h.sleeps, d)
			h.mu.Unlock()
			return ctx.Err()
		},
		Rand: func() float64 { rmu.Lock(); defer rmu.Unlock(); return src.Float64() },
	})
	mux := http.NewServeMux()
	h.g.Register(mux)
	pass := h.g.PassThrough()
	h.srv = httptest.NewServer(httpx.RequestIDs(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := h.principal
		r = r.WithContext(auth.WithPrincipal(r.Context(), &p))
		if hd, pattern := mux.Handler(r); pattern != "" {
			hd.ServeHTTP(w, r)
			return
		}
		pass.ServeHTTP(w, r)
	})))
	t.Cleanup(h.srv.Close)
	return h
}

const chatBody = `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`
const streamBody = `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`

func (h *gw) do(method, path, body string, hdr map[string]string) (*http.Response, string) {
	h.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, h.srv.URL+path, r)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func (h *gw) chat(cfg, body string, extra ...string) (*http.Response, string) {
	h.t.Helper()
	hdr := map[string]string{"x-gateway-config": cfg}
	for i := 0; i+1 < len(extra); i += 2 {
		hdr[extra[i]] = extra[i+1]
	}
	return h.do("POST", "/v1/chat/completions", body, hdr)
}

// record waits for the log record of resp.
func (h *gw) record(resp *http.Response) *reqlog.Record {
	h.t.Helper()
	id := resp.Header.Get("x-gateway-request-id")
	for range 200 {
		h.logs.mu.Lock()
		rec := h.logs.recs[id]
		h.logs.mu.Unlock()
		if rec != nil {
			return rec
		}
		time.Sleep(5 * time.Millisecond)
	}
	h.t.Fatalf("no record for %s", id)
	return nil
}

func (h *gw) waits() []time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]time.Duration(nil), h.sleeps...)
}

// target renders a config target calling fake f.
func target(f *providertest.Scripted, extra string) string {
	if extra != "" {
		extra = "," + extra
	}
	return fmt.Sprintf(`{"name":%q,"provider":"openai","api_key":"sk-%s","custom_host":%q%s}`, f.Name, f.Name, f.BaseURL(), extra)
}

func attemptsOf(rec *reqlog.Record) string {
	var parts []string
	for _, a := range rec.Attempts {
		parts = append(parts, fmt.Sprintf("%s#%d:%d", a.Target, a.Retry, a.Status))
	}
	return strings.Join(parts, " ")
}

func TestFallbackResponseHeadersAndAttempts(t *testing.T) {
	h := newGW(t)
	a := providertest.NewScripted(t, "a", providertest.Fail(503))
	b := providertest.NewScripted(t, "b")
	cfg := `{"strategy":{"mode":"fallback"},"targets":[` + target(a, "") + `,` + target(b, "") + `]}`
	resp, body := h.chat(cfg, chatBody)
	if resp.StatusCode != 200 || !strings.Contains(body, providertest.Content("b")) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if resp.Header.Get(hdrOptionIndex) != "config.targets[1]" || resp.Header.Get(hdrRetryCount) != "0" || resp.Header.Get(hdrProviderOut) != "openai" {
		t.Errorf("headers %v", resp.Header)
	}
	rec := h.record(resp)
	if attemptsOf(rec) != "config.targets[0]#0:503 config.targets[1]#0:200" || rec.Attempts[0].Error == "" || rec.Attempts[0].Provider != "openai" {
		t.Errorf("attempts %+v", rec.Attempts)
	}
	if rec.LastUsedOptionIndex != "config.targets[1]" || rec.RetryCount != 0 || !rec.IsSuccess {
		t.Errorf("record %+v", rec)
	}
	if b.Requests()[0].Header.Get("Authorization") != "Bearer sk-b" {
		t.Error("credentials of target b not used")
	}

	// Every target fails: the last answer, with the headers of the last
	// attempt.
	a.Then(providertest.Fail(500))
	b.Then(providertest.Fail(429), providertest.Fail(429))
	cfg = `{"strategy":{"mode":"fallback"},"targets":[` + target(a, "") + `,` + target(b, `"retry":{"attempts":1}`) + `]}`
	resp, body = h.chat(cfg, chatBody)
	if resp.StatusCode != 429 || !strings.Contains(body, `"provider":"openai"`) || !strings.Contains(body, "b failed with 429") {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
	if resp.Header.Get(hdrOptionIndex) != "config.targets[1]" || resp.Header.Get(hdrRetryCount) != "1" || resp.Header.Get(hdrProviderOut) != "openai" {
		t.Errorf("error answer headers %v", resp.Header)
	}
	if rec := h.record(resp); attemptsOf(rec) != "config.targets[0]#0:500 config.targets[1]#0:429 config.targets[1]#1:429" || rec.RetryCount != 1 {
		t.Errorf("attempts %s", attemptsOf(rec))
	}
}

func TestFallbackOnStatusCodes(t *testing.T) {
	h := newGW(t)
	a := providertest.NewScripted(t, "a", providertest.Fail(400))
	b := providertest.NewScripted(t, "b")
	cfg := `{"strategy":{"mode":"fallback","on_status_codes":[429,500]},"targets":[` + target(a, "") + `,` + target(b, "") + `]}`
	if resp, _ := h.chat(cfg, chatBody); resp.StatusCode != 400 || b.Hits() != 0 {
		t.Errorf("400 moved on: %d, b hits %d", resp.StatusCode, b.Hits())
	}
	// A connection error always moves on.
	dead := `{"provider":"openai","api_key":"k","custom_host":"http://127.0.0.1:1/v1"}`
	cfg = `{"strategy":{"mode":"fallback","on_status_codes":[429]},"targets":[` + dead + `,` + target(b, "") + `]}`
	resp, _ := h.chat(cfg, chatBody)
	if resp.StatusCode != 200 || b.Hits() != 1 {
		t.Errorf("connection error did not move on: %d", resp.StatusCode)
	}
	if rec := h.record(resp); attemptsOf(rec) != "config.targets[0]#0:502 config.targets[1]#0:200" {
		t.Errorf("attempts %s", attemptsOf(rec))
	}
}

// TestRetryRules: retries with backoff from the injected sleeper; the
// provider's Retry-After or retry-after-ms when use_retry_after_header.
func TestRetryRules(t *testing.T) {
	h := newGW(t)
	a := providertest.NewScripted(t, "a", providertest.RateLimit("2"), providertest.RateLimitMS("1500"), providertest.Fail(503))
	cfg := `{"retry":{"attempts":3,"use_retry_after_header":true},"targets":[` + target(a, "") + `]}`
	resp, body := h.chat(cfg, chatBody)
	if resp.StatusCode != 200 || resp.Header.Get(hdrRetryCount) != "3" || a.Hits() != 4 {
		t.Fatalf("%d %s retry count %q hits %d", resp.StatusCode, body, resp.Header.Get(hdrRetryCount), a.Hits())
	}
	w := h.waits()
	if len(w) != 3 || w[0] != 2*time.Second || w[1] != 1500*time.Millisecond || w[2] < 500*time.Millisecond || w[2] >= time.Second {
		t.Errorf("waits %v: want 2s (Retry-After), 1.5s (retry-after-ms), then backoff in [0.5s, 1s)", w)
	}
	if rec := h.record(resp); rec.RetryCount != 3 || len(rec.Attempts) != 4 {
		t.Errorf("record retries %d attempts %d", rec.RetryCount, len(rec.Attempts))
	}
	// A status outside the retry codes is not retried.
	a.Then(providertest.Fail(401))
	resp, _ = h.chat(cfg, chatBody)
	if resp.StatusCode != 401 || a.Hits() != 5 {
		t.Errorf("401 retried: hits %d", a.Hits())
	}
	// A Retry-After beyond the wait budget ends the retries at once, with
	// the provider's hint passed on.
	a.Then(providertest.RateLimit("120"))
	resp, _ = h.chat(cfg, chatBody)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "120" || a.Hits() != 6 {
		t.Errorf("over budget: %d hits %d", resp.StatusCode, a.Hits())
	}
}

// TestTimeouts: request_timeout bounds each attempt (504, or the next
// fallback target); x-gateway-request-timeout overrides it.
func TestTimeouts(t *testing.T) {
	h := newGW(t)
	a := providertest.NewScripted(t, "a")
	a.SetDefault(providertest.Stall())
	b := providertest.NewScripted(t, "b")
	cfg := `{"strategy":{"mode":"fallback","on_status_codes":[500]},"request_timeout":100,"targets":[` + target(a, "") + `,` + target(b, "") + `]}`
	start := time.Now()
	resp, body := h.chat(cfg, chatBody)
	if resp.StatusCode != 200 || !strings.Contains(body, providertest.Content("b")) || time.Since(start) > 3*time.Second {
		t.Errorf("timeout did not move on: %d %s", resp.StatusCode, body)
	}
	if rec := h.record(resp); attemptsOf(rec) != "config.targets[0]#0:504 config.targets[1]#0:200" {
		t.Errorf("attempts %s", attemptsOf(rec))
	}
	single := `{"request_timeout":10000,"targets":[` + target(a, "") + `]}`
	start = time.Now()
	resp, body = h.chat(single, chatBody, "x-gateway-request-timeout", "100")
	if resp.StatusCode != 504 || !strings.Contains(body, "timeout_error") || time.Since(start) > 3*time.Second {
		t.Errorf("header timeout: %d %s after %v", resp.StatusCode, body, time.Since(start))
	}
	// A retried timeout gets a fresh deadline per attempt.
	retried := `{"request_timeout":100,"retry":{"attempts":1},"targets":[` + target(a, "") + `]}`
	resp, _ = h.chat(retried, chatBody)
	if rec := h.record(resp); resp.StatusCode != 504 || attemptsOf(rec) != "config.targets[0]#0:504 config.targets[0]#1:504" {
		t.Errorf("retried timeout: %d %s", resp.StatusCode, attemptsOf(rec))
	}
}

// readStream reads an SSE answer and reports whether it ended cleanly.
func readStream(t *testing.T, resp *http.Response) (string, bool) {
	t.Helper()
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		b.WriteString(sc.Text())
		b.WriteByte('\n')
	}
	return b.String(), sc.Err() == nil
}

func (h *gw) stream(cfg string) *http.Response {
	req, _ := http.NewRequest("POST", h.srv.URL+"/v1/chat/completions", strings.NewReader(streamBody))
	req.Header.Set("x-gateway-config", cfg)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp
}

// TestStreamFirstByteRule: a stream falls back or retries until its first
// byte reaches the client (an error status, a cut before the first event,
// an in-stream error event first, no first event in first_token_timeout);
// after that, a break ends the stream with an error event.
func TestStreamFirstByteRule(t *testing.T) {
	for _, tc := range []struct {
		name  string
		step  providertest.Step
		extra string
	}{
		{"error status", providertest.Fail(500), ""},
		{"cut before the first event", providertest.Cut(0), ""},
		{"in-stream error event first", providertest.ErrorEvent(), ""},
		{"no first token in time", providertest.SlowFirstEvent(5 * time.Second), `"first_token_timeout":100`},
		{"stalled headers", providertest.Stall(), `"first_token_timeout":100`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newGW(t)
			a := providertest.NewScripted(t, "a", tc.step)
			b := providertest.NewScripted(t, "b")
			cfg := `{"strategy":{"mode":"fallback"},"targets":[` + target(a, tc.extra) + `,` + target(b, "") + `]}`
			start := time.Now()
			resp := h.stream(cfg)
			body, clean := readStream(t, resp)
			if resp.StatusCode != 200 || !clean || !strings.Contains(body, `"b"`) || !strings.Contains(body, "[DONE]") || strings.Contains(body, `"a"`) {
				t.Errorf("status %d clean %v body %s", resp.StatusCode, clean, body)
			}
			if time.Since(start) > 3*time.Second {
				t.Errorf("took %v", time.Since(start))
			}
			if resp.Header.Get(hdrOptionIndex) != "config.targets[1]" {
				t.Errorf("option index %q", resp.Header.Get(hdrOptionIndex))
			}
			rec := h.record(resp)
			if len(rec.Attempts) != 2 || rec.Attempts[0].Status < 500 || rec.Attempts[1].Status != 200 || !rec.IsSuccess || rec.TTFTMS <= 0 {
				t.Errorf("attempts %+v ttft %v", rec.Attempts, rec.TTFTMS)
			}
		})
	}
	t.Run("retry before the first byte", func(t *testing.T) {
		h := newGW(t)
		a := providertest.NewScripted(t, "a", providertest.ErrorEvent(), providertest.Cut(0))
		resp := h.stream(`{"retry":{"attempts":2,"on_status_codes":[502]},"targets":[` + target(a, "") + `]}`)
		body, clean := readStream(t, resp)
		if !clean || !strings.Contains(body, "[DONE]") || a.Hits() != 3 || resp.Header.Get(hdrRetryCount) != "2" {
			t.Errorf("clean %v hits %d body %s", clean, a.Hits(), body)
		}
	})
	t.Run("first token timeout alone", func(t *testing.T) {
		h := newGW(t)
		a := providertest.NewScripted(t, "a", providertest.SlowFirstEvent(5*time.Second))
		resp := h.stream(`{"targets":[` + target(a, `"first_token_timeout":100`) + `]}`)
		body, _ := readStream(t, resp)
		if resp.StatusCode != 504 || !strings.Contains(body, "first_token_timeout") {
			t.Errorf("%d %s", resp.StatusCode, body)
		}
	})
	t.Run("no fallback after the first byte", func(t *testing.T) {
		h := newGW(t)
		a := providertest.NewScripted(t, "a", providertest.Cut(2))
		b := providertest.NewScripted(t, "b")
		resp := h.stream(`{"strategy":{"mode":"fallback"},"retry":{"attempts":3},"targets":[` + target(a, "") + `,` + target(b, "") + `]}`)
		body, clean := readStream(t, resp)
		if resp.StatusCode != 200 || clean || !strings.Contains(body, `data: {"error"`) || strings.Contains(body, "[DONE]") {
			t.Errorf("clean %v body %s", clean, body)
		}
		if b.Hits() != 0 || a.Hits() != 1 {
			t.Errorf("retried or fell back after the first byte: a %d b %d", a.Hits(), b.Hits())
		}
		if rec := h.record(resp); rec.IsSuccess || rec.StatusCode != 502 {
			t.Errorf("record %d %v", rec.StatusCode, rec.IsSuccess)
		}
	})
}

func TestLoadbalanceAndConditional(t *testing.T) {
	h := newGW(t)
	a := providertest.NewScripted(t, "a")
	b := providertest.NewScripted(t, "b")
	c := providertest.NewScripted(t, "c")
	cfg := `{"strategy":{"mode":"loadbalance"},"targets":[` + target(a, `"weight":1`) + `,` + target(b, `"weight":0`) + `,` + target(c, `"weight":3`) + `]}`
	for range 40 {
		if resp, body := h.chat(cfg, chatBody); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	}
	if b.Hits() != 0 || a.Hits() == 0 || c.Hits() <= a.Hits() {
		t.Errorf("hits a %d b %d c %d", a.Hits(), b.Hits(), c.Hits())
	}

	cond := `{"strategy":{"mode":"conditional","conditions":[` +
		`{"query":{"metadata.plan":"paid"},"then":"c"},` +
		`{"query":{"$and":[{"params.model":{"$regex":"^mini"}},{"url.pathname":"/v1/chat/completions"}]},"then":"b"}]},` +
		`"targets":[` + target(b, "") + `,` + target(c, "") + `]}`
	resp, body := h.chat(cond, chatBody, "x-gateway-metadata", `{"plan":"paid"}`)
	if !strings.Contains(body, providertest.Content("c")) || resp.Header.Get(hdrOptionIndex) != "config.targets[1]" {
		t.Errorf("metadata condition: %s", body)
	}
	if _, body := h.chat(cond, `{"model":"mini-1","messages":[{"role":"user","content":"hi"}]}`); !strings.Contains(body, providertest.Content("b")) {
		t.Errorf("params condition: %s", body)
	}
	resp, body = h.chat(cond, chatBody)
	if resp.StatusCode != 400 || !strings.Contains(body, "no_matching_condition") {
		t.Errorf("no match: %d %s", resp.StatusCode, body)
	}
}

// TestOverridesPerTarget: each target sends the body with its own merged
// override_params; a virtual key may be a target's credential.
func TestOverridesPerTarget(t *testing.T) {
	h := newGW(t)
	a := providertest.NewScripted(t, "a", providertest.Fail(500))
	b := providertest.NewScripted(t, "b")
	cfg := `{"strategy":{"mode":"fallback"},"override_params":{"temperature":0.2,"model":"parent"},"targets":[` +
		target(a, `"override_params":{"model":"model-a","max_tokens":7}`) + `,` +
		`{"virtual_key":"vk-b","custom_host":"` + b.BaseURL() + `","override_params":{"model":"model-b"}}]}`
	resp, body := h.chat(cfg, chatBody)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	var ab, bb map[string]any
	json.Unmarshal(a.Requests()[0].Body, &ab)
	json.Unmarshal(b.Requests()[0].Body, &bb)
	if ab["model"] != "model-a" || ab["max_tokens"] != 7.0 || ab["temperature"] != 0.2 {
		t.Errorf("a got %v", ab)
	}
	if bb["model"] != "model-b" || bb["max_tokens"] != nil || bb["temperature"] != 0.2 {
		t.Errorf("b got %v", bb)
	}
	if b.Requests()[0].Header.Get("Authorization") != "Bearer sk-from-vk" {
		t.Errorf("virtual key credential not used")
	}
	if rec := h.record(resp); rec.Model != "model-b" || rec.VirtualKey != "vk-b" {
		t.Errorf("record model %q vk %q", rec.Model, rec.VirtualKey)
	}
}

// TestPassThroughAndEmbeddingsFallback: the other routes follow the plan
// too; a pass-through error that is final is relayed unchanged.
func TestPassThroughAndEmbeddingsFallback(t *testing.T) {
	h := newGW(t)
	a := providertest.NewScripted(t, "a", providertest.Fail(502), providertest.Fail(503))
	b := providertest.NewScripted(t, "b")
	cfg := `{"strategy":{"mode":"fallback"},"targets":[` + target(a, "") + `,` + target(b, "") + `]}`
	resp, body := h.do("POST", "/v1/assistants", `{"x":1}`, map[string]string{"x-gateway-config": cfg})
	if resp.StatusCode != 200 || !strings.Contains(body, `"upstream":"b"`) || resp.Header.Get(hdrOptionIndex) != "config.targets[1]" {
		t.Errorf("pass-through: %d %s", resp.StatusCode, body)
	}
	resp, body = h.do("POST", "/v1/embeddings", `{"model":"e","input":"x"}`, map[string]string{"x-gateway-config": cfg})
	if resp.StatusCode != 200 || b.Hits() != 2 {
		t.Errorf("embeddings: %d %s", resp.StatusCode, body)
	}
	a.Then(providertest.Fail(418))
	single := `{"targets":[` + target(a, "") + `]}`
	resp, body = h.do("GET", "/v1/things", "", map[string]string{"x-gateway-config": single})
	if resp.StatusCode != 418 || body != `{"error":{"message":"a failed with 418","type":"invalid_request_error","param":null,"code":"scripted_418"}}` {
		t.Errorf("final pass-through error not relayed unchanged: %d %s", resp.StatusCode, body)
	}
	if rec := h.record(resp); rec.StatusCode != 418 || rec.ErrorMessage != "a failed with 418" {
		t.Errorf("record %d %q", rec.StatusCode, rec.ErrorMessage)
	}
}

// TestCircuitBreakerSkipsTarget: once a target's circuit opens, requests go
// straight to the next target, and the record says the target was skipped.
func TestCircuitBreakerSkipsTarget(t *testing.T) {
	h := newGW(t)
	a := providertest.NewScripted(t, "a")
	a.SetDefault(providertest.Fail(500))
	b := providertest.NewScripted(t, "b")
	cfg := `{"strategy":{"mode":"fallback"},"circuit_breaker":{"failure_threshold":2,"cooldown_ms":60000},"targets":[` + target(a, "") + `,` + target(b, "") + `]}`
	for range 2 {
		h.chat(cfg, chatBody)
	}
	resp, _ := h.chat(cfg, chatBody)
	if resp.StatusCode != 200 || a.Hits() != 2 || b.Hits() != 3 {
		t.Errorf("a %d b %d", a.Hits(), b.Hits())
	}
	if rec := h.record(resp); attemptsOf(rec) != "config.targets[0]#0:503 config.targets[1]#0:200" || rec.Attempts[0].Error != "skipped: circuit open" {
		t.Errorf("attempts %+v", rec.Attempts)
	}
}

// TestKeyDefaultConfig: an API key's defaults.config_id routes requests
// that name no target; allow_config_override false refuses a request's own
// config and ignores its routing headers.
func TestKeyDefaultConfig(t *testing.T) {
	h := newGW(t)
	a := providertest.NewScripted(t, "a")
	b := providertest.NewScripted(t, "b")
	h.saved["pc-default"] = &routing.StoredConfig{ID: "cfg-1", Slug: "pc-default", OrganisationID: "org", WorkspaceID: "ws",
		Config: []byte(`{"targets":[` + target(a, "") + `]}`)}
	h.saved["pc-other-ws"] = &routing.StoredConfig{ID: "cfg-2", Slug: "pc-other-ws", OrganisationID: "org", WorkspaceID: "ws-2",
		Config: []byte(`{"targets":[` + target(b, "") + `]}`)}
	inlineB := `{"targets":[` + target(b, "") + `]}`
	headersB := map[string]string{"x-gateway-provider": "openai", "Authorization": "Bearer k", "x-gateway-custom-host": b.BaseURL()}

	h.principal.Defaults = []byte(`{"config_id":"pc-default"}`)
	resp, body := h.do("POST", "/v1/chat/completions", chatBody, nil)
	if resp.StatusCode != 200 || !strings.Contains(body, providertest.Content("a")) || resp.Header.Get(hdrOptionIndex) != "config.targets[0]" {
		t.Errorf("default config: %d %s", resp.StatusCode, body)
	}
	if rec := h.record(resp); rec.Config != "pc-default" {
		t.Errorf("record config %q", rec.Config)
	}
	if _, body := h.chat(inlineB, chatBody); !strings.Contains(body, providertest.Content("b")) {
		t.Errorf("override allowed: the request's config must win: %s", body)
	}
	if _, body := h.do("POST", "/v1/chat/completions", chatBody, headersB); !strings.Contains(body, providertest.Content("b")) {
		t.Errorf("override allowed: the request's headers must win: %s", body)
	}

	h.principal.Defaults = []byte(`{"config_id":"pc-default","allow_config_override":false}`)
	if resp, body := h.chat(inlineB, chatBody); resp.StatusCode != 403 || !strings.Contains(body, "config_override_not_allowed") {
		t.Errorf("override refused: %d %s", resp.StatusCode, body)
	}
	if _, body := h.do("POST", "/v1/chat/completions", chatBody, headersB); !strings.Contains(body, providertest.Content("a")) {
		t.Errorf("override refused: the default config must win over headers: %s", body)
	}

	// Saved configs by slug; a workspace key sees only its workspace's.
	h.principal.Defaults = nil
	if _, body := h.chat("pc-other-ws", chatBody); !strings.Contains(body, providertest.Content("b")) {
		t.Errorf("organisation key with a saved config: %s", body)
	}
	h.principal.KeyType = auth.KeyTypeWorkspace
	resp, body = h.chat("pc-other-ws", chatBody)
	if resp.StatusCode != 400 || !strings.Contains(body, routing.CodeConfigNotFound) {
		t.Errorf("workspace key with another workspace's config: %d %s", resp.StatusCode, body)
	}
	if resp, body := h.chat("pc-missing", chatBody); resp.StatusCode != 400 || !strings.Contains(body, `"param":"x-gateway-config"`) {
		t.Errorf("unknown slug: %d %s", resp.StatusCode, body)
	}
}

// TestInvalidInlineConfig answers AB01 with every problem.
func TestInvalidInlineConfig(t *testing.T) {
	h := newGW(t)
	resp, body := h.chat(`{"strategy":{"mode":"fallback"},"targets":[{"provider":"openai","weight":-1},{"provider":"nope","retry":{"attempts":9}}]}`, chatBody)
	var e struct {
		Error struct {
			Code, Param string
		}
		Errors []routing.Problem
	}
	json.Unmarshal([]byte(body), &e)
	if resp.StatusCode != 400 || e.Error.Code != routing.CodeInvalidValue || e.Error.Param != "config.targets[0].weight" || len(e.Errors) != 3 ||
		e.Errors[1].Param != "config.targets[1].provider" || e.Errors[1].Code != routing.CodeUnknownProvider {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
}
