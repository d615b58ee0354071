package app_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/ai-gateway/gateway/internal/config"
	"github.com/ai-gateway/gateway/internal/provider/providertest"
)

func TestPassThrough(t *testing.T) {
	h := start(t)
	hdr := h.routing()
	hdr["x-fake-status"] = "207"
	hdr["x-client-header"] = "passed"
	resp, body := h.do("POST", "/v1/rerank?top_n=2&x=a%2Fb", `{"model":"rerank-v3","query":"q","documents":["a","b"]}`, hdr)
	if resp.StatusCode != 207 || resp.Header.Get("x-upstream-header") != "kept" || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d headers %v", resp.StatusCode, resp.Header)
	}
	got := decode(t, body)
	if got["path"] != "/v1/rerank" || got["query"] != "top_n=2&x=a%2Fb" || got["method"] != "POST" || got["body"] != `{"model":"rerank-v3","query":"q","documents":["a","b"]}` {
		t.Errorf("upstream saw %v", got)
	}
	if got["authorization"] != "Bearer sk-provider-test" {
		t.Errorf("upstream authorization %v", got["authorization"])
	}
	last := h.up.Last()
	if last.Header.Get("X-Client-Header") != "passed" || last.Header.Get("X-Gateway-Api-Key") != "" {
		t.Errorf("forwarded headers %v", last.Header)
	}
	rec := h.logRecord(resp.Header.Get("x-gateway-request-id"))
	if rec["request_path"] != "/v1/rerank" || rec["status_code"] != 207.0 || rec["model"] != "rerank-v3" || rec["provider"] != "openai" {
		t.Errorf("record %v", rec)
	}

	for _, m := range []string{"GET", "PUT", "DELETE"} {
		resp, body := h.do(m, "/v1/collections/abc", nil, h.routing())
		if resp.StatusCode != 200 || decode(t, body)["method"] != m || decode(t, body)["path"] != "/v1/collections/abc" {
			t.Errorf("%s: %d %s", m, resp.StatusCode, body)
		}
	}
	// Upstream errors come back unchanged.
	hdr = h.routing()
	hdr["x-fake-status"] = "422"
	resp, body = h.do("GET", "/v1/anything", nil, hdr)
	if resp.StatusCode != 422 || decode(t, body)["path"] != "/v1/anything" {
		t.Errorf("error pass-through: %d %s", resp.StatusCode, body)
	}
	// Without routing headers an unknown path is a control-plane 404.
	resp, body = h.do("GET", "/v1/collections/abc", nil, h.admin())
	if resp.StatusCode != 404 || errorField(t, body, "type") != "not_found_error" {
		t.Errorf("no routing: %d %s", resp.StatusCode, body)
	}
}

func TestFiles(t *testing.T) {
	h := start(t)
	c := h.client()
	ctx := context.Background()
	page, err := c.Files.List(ctx, openai.FileListParams{Purpose: openai.String("fine-tune")})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 || page.Data[0].ID != "file-abc" || page.Data[0].Object != "file" {
		t.Fatalf("list = %s", page.RawJSON())
	}
	if h.up.Last().Query != "purpose=fine-tune" {
		t.Errorf("purpose filter not forwarded: %q", h.up.Last().Query)
	}
	f, err := c.Files.Get(ctx, "file-abc")
	if err != nil || f.Filename != "train.jsonl" {
		t.Fatalf("get = %v, %v", f, err)
	}
	content, err := c.Files.Content(ctx, "file-abc")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(content.Body)
	content.Body.Close()
	if string(b) != providertest.FileContent {
		t.Errorf("content = %q", b)
	}
	up, err := c.Files.New(ctx, openai.FileNewParams{File: openai.File(bytes.NewReader([]byte(providertest.FileContent)), "upload.jsonl", "application/jsonl"), Purpose: openai.FilePurposeFineTune})
	if err != nil || up.ID != "file-new" || up.Bytes != int64(len(providertest.FileContent)) {
		t.Fatalf("upload = %+v, %v", up, err)
	}
	del, err := c.Files.Delete(ctx, "file-abc")
	if err != nil || !del.Deleted {
		t.Fatalf("delete = %+v, %v", del, err)
	}
	_, err = c.Files.Get(ctx, "file-missing")
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Errorf("missing file: %v", err)
	}
	resp, body := h.do("GET", "/v1/files", nil, map[string]string{"x-gateway-api-key": h.key})
	if resp.StatusCode != 400 || errorField(t, body, "code") != "missing_provider" {
		t.Errorf("files without routing: %d %s", resp.StatusCode, body)
	}
}

func TestVirtualKeys(t *testing.T) {
	h := start(t)
	const secret = "sk-virtual-key-secret-9f8e7d"
	resp, body := h.do("POST", "/v1/virtual-keys", map[string]any{
		"name": "Prod OpenAI", "provider": "openai", "key": secret, "custom_host": h.up.BaseURL(), "note": "team a",
		"azure_api_version": "2024-10-21", "rate_limits": map[string]any{"rpm": 10},
	}, h.admin())
	if resp.StatusCode != 200 {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	vk := decode(t, body)
	slug, _ := vk["slug"].(string)
	if !strings.HasPrefix(slug, "prod-openai-") || vk["object"] != "virtual-key" || vk["id"] == "" {
		t.Fatalf("created %v", vk)
	}
	if strings.Contains(string(body), secret) {
		t.Fatal("create answered the provider key")
	}

	// The data plane uses the stored credential.
	c := openai.NewClient(option.WithBaseURL(h.base+"/v1"), option.WithAPIKey("ignored"), option.WithHeader("x-gateway-api-key", h.key),
		option.WithHeader("x-gateway-virtual-key", slug), option.WithMaxRetries(0))
	var raw *http.Response
	if _, err := c.Chat.Completions.New(context.Background(), userParams("gpt-4.1-mini"), option.WithResponseInto(&raw)); err != nil {
		t.Fatal(err)
	}
	if got := h.up.Last().Header.Get("Authorization"); got != "Bearer "+secret {
		t.Errorf("upstream Authorization = %q", got)
	}
	if rec := h.logRecord(raw.Header.Get("x-gateway-request-id")); rec["virtual_key"] != slug {
		t.Errorf("record virtual_key = %v", rec["virtual_key"])
	}

	for _, path := range []string{"/v1/virtual-keys/" + slug, "/v1/virtual-keys/" + vk["id"].(string), "/v1/virtual-keys"} {
		resp, body := h.do("GET", path, nil, h.admin())
		if resp.StatusCode != 200 || strings.Contains(string(body), secret) || !strings.Contains(string(body), slug) {
			t.Errorf("GET %s: %d %s", path, resp.StatusCode, body)
		}
	}
	// Rotate the provider key: the data plane picks it up at once.
	resp, body = h.do("PUT", "/v1/virtual-keys/"+slug, map[string]any{"key": "sk-rotated-key", "note": "rotated"}, h.admin())
	if resp.StatusCode != 200 || decode(t, body)["note"] != "rotated" {
		t.Fatalf("update: %d %s", resp.StatusCode, body)
	}
	if _, err := c.Chat.Completions.New(context.Background(), userParams("gpt-4.1-mini")); err != nil {
		t.Fatal(err)
	}
	if got := h.up.Last().Header.Get("Authorization"); got != "Bearer sk-rotated-key" {
		t.Errorf("after rotation upstream Authorization = %q", got)
	}

	// Validation and conflicts.
	for _, bad := range []struct {
		body  any
		param string
	}{
		{map[string]any{"provider": "openai", "key": "k"}, "name"},
		{map[string]any{"name": "x", "provider": "nope", "key": "k"}, "provider"},
		{map[string]any{"name": "x", "provider": "openai", "custom_host": "ftp://x"}, "custom_host"},
		{map[string]any{"name": "x", "provider": "openai", "bogus": 1}, "bogus"},
		{map[string]any{"name": strings.Repeat("n", 256), "provider": "openai"}, "name"},
	} {
		resp, body := h.do("POST", "/v1/virtual-keys", bad.body, h.admin())
		if resp.StatusCode != 400 || errorField(t, body, "param") != bad.param {
			t.Errorf("create %v: %d %s", bad.body, resp.StatusCode, body)
		}
	}
	resp, body = h.do("POST", "/v1/virtual-keys", map[string]any{"name": "dup", "slug": slug, "provider": "openai"}, h.admin())
	if resp.StatusCode != 409 {
		t.Errorf("duplicate slug: %d %s", resp.StatusCode, body)
	}

	// Delete: the data plane stops accepting the key.
	resp, body = h.do("DELETE", "/v1/virtual-keys/"+slug, nil, h.admin())
	if resp.StatusCode != 200 || decode(t, body)["deleted"] != true {
		t.Fatalf("delete: %d %s", resp.StatusCode, body)
	}
	_, err := c.Chat.Completions.New(context.Background(), userParams("gpt-4.1-mini"))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 {
		t.Errorf("deleted key: %v", err)
	}
	if resp, _ := h.do("GET", "/v1/virtual-keys/"+slug, nil, h.admin()); resp.StatusCode != 404 {
		t.Errorf("GET deleted: %d", resp.StatusCode)
	}

	// The credential is never stored in clear.
	h.shutdown()
	for _, name := range []string{"gateway.db", "gateway.db-wal"} {
		b, _ := os.ReadFile(filepath.Join(h.cfg.DataDir, name))
		if bytes.Contains(b, []byte(secret)) || bytes.Contains(b, []byte("sk-rotated-key")) {
			t.Errorf("%s holds a provider key in clear", name)
		}
	}
}

func TestInlineConfig(t *testing.T) {
	h := start(t)
	cfg := `{"strategy":{"mode":"single"},"targets":[{"provider":"openai","api_key":"sk-from-config","custom_host":"` + h.up.BaseURL() + `","override_params":{"model":"gpt-4o-mini"}}]}`
	resp, body := h.do("POST", "/v1/chat/completions", `{"model":"gpt-4.1","messages":[{"role":"user","content":"hi"}]}`, map[string]string{"x-gateway-api-key": h.key, "x-gateway-config": cfg})
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if resp.Header.Get("x-gateway-last-used-option-index") != "config.targets[0]" {
		t.Errorf("option index %q", resp.Header.Get("x-gateway-last-used-option-index"))
	}
	last := h.up.Last()
	if last.Header.Get("Authorization") != "Bearer sk-from-config" || !strings.Contains(string(last.Body), `"model":"gpt-4o-mini"`) {
		t.Errorf("upstream got %s with %q", last.Body, last.Header.Get("Authorization"))
	}
	rec := h.logRecord(resp.Header.Get("x-gateway-request-id"))
	if strings.Contains(rec["config"].(string), "sk-from-config") || rec["model"] != "gpt-4o-mini" {
		t.Errorf("record config %v model %v", rec["config"], rec["model"])
	}
	for _, tc := range []struct{ cfg, param string }{
		{`{"provider":"openai","bogus":1}`, "config.bogus"},
		{`{"strategy":{"mode":"zigzag"},"targets":[{"provider":"openai"}]}`, "config.strategy.mode"},
		{`{"targets":[{"provider":"openai","weight":-1}]}`, "config.targets[0].weight"},
		{`{"targets":[{"provider":"openai","custom_host":"nope"}]}`, "config.targets[0].custom_host"},
		{`[1]`, "config"},
	} {
		resp, body := h.do("POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, map[string]string{"x-gateway-api-key": h.key, "x-gateway-config": tc.cfg})
		code, _ := errorField(t, body, "code").(string)
		if resp.StatusCode != 400 || !strings.HasPrefix(code, "AB01") || errorField(t, body, "param") != tc.param {
			t.Errorf("config %s: %d %s", tc.cfg, resp.StatusCode, body)
		}
	}
}

func TestAuthentication(t *testing.T) {
	h := start(t, func(c *config.Config) { c.AdminAPIKey = "admin-key-from-environment-0123" })
	if h.app.AdminKey != "" {
		t.Error("a key was generated although GATEWAY_ADMIN_API_KEY was set")
	}
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	for _, key := range []string{"", "wrong-key"} {
		hdr := h.routing()
		hdr["x-gateway-api-key"] = key
		resp, out := h.do("POST", "/v1/chat/completions", body, hdr)
		if resp.StatusCode != 401 || errorField(t, out, "type") != "authentication_error" || resp.Header.Get("x-gateway-request-id") == "" {
			t.Errorf("key %q: %d %s", key, resp.StatusCode, out)
		}
	}
	if resp, _ := h.do("GET", "/v1/logs", nil, map[string]string{"x-gateway-api-key": "nope"}); resp.StatusCode != 401 {
		t.Errorf("control plane with a bad key: %d", resp.StatusCode)
	}
	if resp, out := h.do("POST", "/v1/chat/completions", body, h.routing()); resp.StatusCode != 200 {
		t.Errorf("environment key: %d %s", resp.StatusCode, out)
	}
}

func TestTracingHeadersAndLogFilters(t *testing.T) {
	h := start(t)
	hdr := h.routing()
	hdr["x-gateway-trace-id"] = "trace-abc"
	hdr["x-gateway-span-id"] = "span-1"
	hdr["x-gateway-parent-span-id"] = "span-0"
	hdr["x-gateway-span-name"] = "answer"
	hdr["x-gateway-metadata"] = `{"team":"search","_user":"u-42"}`
	resp, out := h.do("POST", "/v1/chat/completions", `{"model":"gpt-4.1-mini","messages":[{"role":"user","content":"hi"}]}`, hdr)
	if resp.StatusCode != 200 || resp.Header.Get("x-gateway-trace-id") != "trace-abc" {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, out)
	}
	id := resp.Header.Get("x-gateway-request-id")
	rec := h.logRecord(id)
	if rec["trace_id"] != "trace-abc" || rec["span_id"] != "span-1" || rec["parent_span_id"] != "span-0" || rec["span_name"] != "answer" {
		t.Errorf("record %v", rec)
	}
	if md := rec["metadata"].(map[string]any); md["team"] != "search" || md["_user"] != "u-42" {
		t.Errorf("metadata %v", md)
	}
	hdr["x-gateway-metadata"] = `{"team":"other"}`
	h.do("POST", "/v1/chat/completions", `{"model":"err-500","messages":[{"role":"user","content":"hi"}]}`, hdr)

	lastID := ""
	for _, bad := range []string{`[1]`, `{"n":1}`, `not json`} {
		hdr["x-gateway-metadata"] = bad
		resp, out := h.do("POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, hdr)
		if resp.StatusCode != 400 || errorField(t, out, "param") != "x-gateway-metadata" {
			t.Errorf("metadata %s: %d %s", bad, resp.StatusCode, out)
		}
		lastID = resp.Header.Get("x-gateway-request-id")
	}
	h.logRecord(lastID)
	count := func(q string) float64 {
		t.Helper()
		resp, out := h.do("GET", "/v1/logs?"+q, nil, h.admin())
		if resp.StatusCode != 200 {
			t.Fatalf("list %s: %d %s", q, resp.StatusCode, out)
		}
		return decode(t, out)["total"].(float64)
	}
	h.logRecord(id)
	for q, want := range map[string]float64{
		"trace_id=trace-abc":                 5,
		`metadata={"team":"search"}`:         1,
		"status_code=500":                    1,
		"status_code=400&trace_id=trace-abc": 3,
		"provider=openai&model=gpt-4.1-mini": 1,
		"trace_id=nope":                      0,
		"start_time=2000-01-01T00:00:00Z":    5,
		"end_time=2000-01-01T00:00:00Z":      0,
		"trace_id=trace-abc&page_size=2":     5,
	} {
		if got := count(q); got != want {
			t.Errorf("GET /v1/logs?%s total = %v, want %v", q, got, want)
		}
	}
	resp, out = h.do("GET", "/v1/logs?trace_id=trace-abc&page_size=2&current_page=2", nil, h.admin())
	if n := len(decode(t, out)["data"].([]any)); n != 1 {
		t.Errorf("page 2 of 5 by 2 has %d records", n)
	}
	if resp, _ := h.do("GET", "/v1/logs?page_size=5000", nil, h.admin()); resp.StatusCode != 400 {
		t.Errorf("page_size 5000: %d", resp.StatusCode)
	}
}

func TestInsertExternalLogs(t *testing.T) {
	h := start(t)
	resp, out := h.do("POST", "/v1/logs", `[{"trace_id":"ext-1","provider":"anthropic","model":"claude","request_path":"/v1/messages","status_code":200,"is_success":true,"usage":{"prompt_tokens":3,"completion_tokens":4},"metadata":{"source":"batch"}}]`, h.admin())
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, out)
	}
	data := decode(t, out)["data"].([]any)
	id := data[0].(map[string]any)["id"].(string)
	rec := h.logRecord(id)
	if rec["trace_id"] != "ext-1" || rec["usage"].(map[string]any)["total_tokens"] != 7.0 || rec["metadata"].(map[string]any)["source"] != "batch" {
		t.Errorf("record %v", rec)
	}
	if resp, out := h.do("POST", "/v1/logs", `{"trace_id":"x","bogus":true}`, h.admin()); resp.StatusCode != 400 {
		t.Errorf("unknown field: %d %s", resp.StatusCode, out)
	}
	if resp, _ := h.do("GET", "/v1/logs/00000000-0000-0000-0000-000000000000", nil, h.admin()); resp.StatusCode != 404 {
		t.Errorf("unknown log: %d", resp.StatusCode)
	}
}

func TestHealthAndMetrics(t *testing.T) {
	h := start(t)
	for _, p := range []string{"/health/live", "/health/ready"} {
		if resp, out := h.do("GET", p, nil, nil); resp.StatusCode != 200 {
			t.Errorf("%s: %d %s", p, resp.StatusCode, out)
		}
	}
	h.do("POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, h.routing())
	resp, out := h.do("GET", "/metrics", nil, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("metrics %d", resp.StatusCode)
	}
	for _, want := range []string{`gateway_requests_total{provider="openai",route="chat",status_class="2xx"} 1`, "gateway_log_queue_depth", "gateway_tokens_total"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(string(out), h.key) || strings.Contains(string(out), "/v1/chat/completions") {
		t.Error("metrics carry a key or a raw path")
	}
	if resp, _ := h.do("GET", "/nowhere", nil, nil); resp.StatusCode != 404 {
		t.Errorf("unknown root path: %d", resp.StatusCode)
	}
}

func TestRedisReadiness(t *testing.T) {
	h := start(t, func(c *config.Config) { c.RedisURL = "redis://127.0.0.1:1" })
	if resp, out := h.do("GET", "/health/ready", nil, nil); resp.StatusCode != 503 || !strings.Contains(string(out), "redis") {
		t.Errorf("unreachable redis: %d %s", resp.StatusCode, out)
	}
	addr := os.Getenv("GATEWAY_TEST_REDIS_ADDR")
	if addr == "" {
		t.Skip("GATEWAY_TEST_REDIS_ADDR not set: skipping the reachable-Redis readiness check")
	}
	h2 := start(t, func(c *config.Config) { c.RedisURL = "redis://" + addr })
	if resp, out := h2.do("GET", "/health/ready", nil, nil); resp.StatusCode != 200 {
		t.Errorf("reachable redis: %d %s", resp.StatusCode, out)
	}
}

func TestEmbeddingsAndCompletions(t *testing.T) {
	h := start(t)
	c := h.client()
	var raw *http.Response
	emb, err := c.Embeddings.New(context.Background(), openai.EmbeddingNewParams{
		Model: "text-embedding-3-small",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"a", "b"}},
	}, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if len(emb.Data) != 2 || emb.Data[1].Embedding[2] != 1.5 || emb.Usage.PromptTokens != 8 {
		t.Errorf("embeddings = %s", emb.RawJSON())
	}
	rec := h.logRecord(raw.Header.Get("x-gateway-request-id"))
	if rec["model"] != "text-embedding-3-small" || rec["usage"].(map[string]any)["prompt_tokens"] != 8.0 {
		t.Errorf("record %v", rec)
	}
	comp, err := c.Completions.New(context.Background(), openai.CompletionNewParams{
		Model:  "gpt-3.5-turbo-instruct",
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("hello")},
	})
	if err != nil || comp.Choices[0].Text != " world" {
		t.Fatalf("completions = %v, %v", comp, err)
	}
	for _, tc := range []struct{ path, body, param string }{
		{"/v1/embeddings", `{"model":"m"}`, "input"},
		{"/v1/embeddings", `{"input":"x"}`, "model"},
		{"/v1/completions", `{"model":"m"}`, "prompt"},
	} {
		resp, body := h.do("POST", tc.path, tc.body, h.routing())
		if resp.StatusCode != 400 || errorField(t, body, "param") != tc.param {
			t.Errorf("%s %s: %d %s", tc.path, tc.body, resp.StatusCode, body)
		}
	}
}

// TestDeeplyNestedBodies: a body nested millions of levels deep gets a 400;
// a recursive validator would overflow the stack and kill the process.
func TestDeeplyNestedBodies(t *testing.T) {
	h := start(t)
	deep := `{"model":"m","prompt":` + strings.Repeat("[", 4<<20)
	for _, path := range []string{"/v1/completions", "/v1/chat/completions", "/v1/embeddings"} {
		resp, body := h.do("POST", path, deep, h.routing())
		if resp.StatusCode != 400 {
			t.Errorf("%s: %d %.200s", path, resp.StatusCode, body)
		}
	}
	if resp, _ := h.do("GET", "/health/live", nil, nil); resp.StatusCode != 200 {
		t.Fatal("gateway down after nested bodies")
	}
}
