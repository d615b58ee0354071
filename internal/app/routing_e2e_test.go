package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/ai-gateway/gateway/internal/auth"
	"github.com/ai-gateway/gateway/internal/config"
	"github.com/ai-gateway/gateway/internal/provider/providertest"
	"github.com/ai-gateway/gateway/internal/store"
)

// configTarget renders a config target calling a scripted fake.
func configTarget(f *providertest.Scripted, extra string) map[string]any {
	t := map[string]any{"name": f.Name, "provider": "openai", "api_key": "sk-secret-" + f.Name, "custom_host": f.BaseURL()}
	if extra != "" {
		var m map[string]any
		if err := json.Unmarshal([]byte(extra), &m); err != nil {
			panic(err)
		}
		for k, v := range m {
			t[k] = v
		}
	}
	return t
}

// sdkOnly is an OpenAI SDK client that names no provider: routing comes
// from the given options (a config header) or the key's default config.
func (h *harness) sdkOnly(key string, opts ...option.RequestOption) *openai.Client {
	base := []option.RequestOption{
		option.WithBaseURL(h.base + "/v1"),
		option.WithAPIKey("unused"),
		option.WithHeader("x-gateway-api-key", key),
		option.WithMaxRetries(0),
	}
	c := openai.NewClient(append(base, opts...)...)
	return &c
}

// TestSavedConfigsEndToEnd: create, read, list, version, use by slug with
// the OpenAI SDK, update (a new version, used at once), delete.
func TestSavedConfigsEndToEnd(t *testing.T) {
	h := start(t)
	a := providertest.NewScripted(t, "a")
	a.SetDefault(providertest.Fail(503))
	b := providertest.NewScripted(t, "b")
	c := providertest.NewScripted(t, "c")

	cfg := map[string]any{"strategy": map[string]any{"mode": "fallback"}, "targets": []any{configTarget(a, ""), configTarget(b, "")}}
	resp, body := h.do("POST", "/v1/configs", map[string]any{"name": "Prod fallback", "config": cfg}, h.admin())
	if resp.StatusCode != 200 {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	created := decode(t, body)
	slug, id := created["slug"].(string), created["id"].(string)
	if !strings.HasPrefix(slug, "pc-prod-fallback-") || id == "" || created["object"] != "config" || created["version"] != 1.0 {
		t.Errorf("created %v", created)
	}
	if strings.Contains(string(body), "sk-secret") || !strings.Contains(string(body), `"api_key":"********"`) {
		t.Errorf("credentials shown: %s", body)
	}

	// Validation: AB01, param naming the path of the first problem in the
	// JSON text (the SDK-free body here has its keys sorted), every
	// problem listed.
	bad := map[string]any{"name": "bad", "config": map[string]any{"strategy": map[string]any{"mode": "fallback"},
		"targets": []any{map[string]any{"provider": "openai"}, map[string]any{"provider": "openai", "weight": -1, "retry": map[string]any{"attempts": 7}}}}}
	resp, body = h.do("POST", "/v1/configs", bad, h.admin())
	if code, _ := errorField(t, body, "code").(string); resp.StatusCode != 400 || !strings.HasPrefix(code, "AB01") || errorField(t, body, "param") != "config.targets[1].retry.attempts" {
		t.Errorf("invalid config: %d %s", resp.StatusCode, body)
	}
	if errs, _ := decode(t, body)["errors"].([]any); len(errs) != 2 {
		t.Errorf("errors %v", decode(t, body)["errors"])
	}
	if resp, body := h.do("POST", "/v1/configs", map[string]any{"name": "x", "config": map[string]any{"provider": "no-such-provider"}}, h.admin()); resp.StatusCode != 400 || errorField(t, body, "code") != "AB01_UNKNOWN_PROVIDER" {
		t.Errorf("unknown provider: %d %s", resp.StatusCode, body)
	}

	// Read by slug and by id; list.
	for _, key := range []string{slug, id} {
		if resp, body := h.do("GET", "/v1/configs/"+key, nil, h.admin()); resp.StatusCode != 200 || decode(t, body)["slug"] != slug {
			t.Errorf("GET %s: %d %s", key, resp.StatusCode, body)
		}
	}
	resp, body = h.do("GET", "/v1/configs", nil, h.admin())
	if l := decode(t, body); resp.StatusCode != 200 || l["object"] != "list" || l["total"] != 1.0 {
		t.Errorf("list: %d %s", resp.StatusCode, body)
	}

	// Use it by slug with the SDK: a fails, b answers.
	var raw *http.Response
	comp, err := h.sdkOnly(h.key, option.WithHeader("x-gateway-config", slug)).Chat.Completions.New(context.Background(), userParams("gpt-4o"), option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if comp.Choices[0].Message.Content != providertest.Content("b") || raw.Header.Get("x-gateway-last-used-option-index") != "config.targets[1]" ||
		raw.Header.Get("x-gateway-retry-attempt-count") != "0" || raw.Header.Get("x-gateway-provider") != "openai" {
		t.Errorf("answer %q headers %v", comp.Choices[0].Message.Content, raw.Header)
	}
	if b.Requests()[0].Header.Get("Authorization") != "Bearer sk-secret-b" {
		t.Error("the saved credential was not used")
	}
	rec := h.logRecord(raw.Header.Get("x-gateway-request-id"))
	atts, _ := rec["attempts"].([]any)
	if rec["config"] != slug || rec["last_used_option_index"] != "config.targets[1]" || len(atts) != 2 {
		t.Fatalf("record %v", rec)
	}
	if a0 := atts[0].(map[string]any); a0["target"] != "config.targets[0]" || a0["status"] != 503.0 || a0["provider"] != "openai" || a0["error"] == nil {
		t.Errorf("attempt 0 %v", a0)
	}

	// PUT: a new version, with the masked credential kept, used at once.
	cfg2 := map[string]any{"retry": map[string]any{"attempts": 1}, "targets": []any{configTarget(c, "")}}
	resp, body = h.do("PUT", "/v1/configs/"+slug, map[string]any{"config": cfg2}, h.admin())
	if resp.StatusCode != 200 || decode(t, body)["version"] != 2.0 || decode(t, body)["name"] != "Prod fallback" {
		t.Fatalf("update: %d %s", resp.StatusCode, body)
	}
	got := decode(t, body)["config"].(map[string]any)
	got["targets"].([]any)[0].(map[string]any)["override_params"] = map[string]any{"model": "gpt-4o-mini"}
	resp, body = h.do("PUT", "/v1/configs/"+id, map[string]any{"name": "Prod single", "config": got}, h.admin())
	if resp.StatusCode != 200 || decode(t, body)["version"] != 3.0 {
		t.Fatalf("update with masked credential: %d %s", resp.StatusCode, body)
	}
	comp, err = h.sdkOnly(h.key, option.WithHeader("x-gateway-config", slug)).Chat.Completions.New(context.Background(), userParams("gpt-4o"))
	if err != nil || comp.Choices[0].Message.Content != providertest.Content("c") {
		t.Fatalf("after update: %v %v", comp, err)
	}
	if last := c.Requests()[0]; last.Header.Get("Authorization") != "Bearer sk-secret-c" || !strings.Contains(string(last.Body), `"model":"gpt-4o-mini"`) {
		t.Errorf("c got %s with %q", last.Body, last.Header.Get("Authorization"))
	}
	resp, body = h.do("GET", "/v1/configs/"+slug+"/versions", nil, h.admin())
	vs := decode(t, body)
	if data, _ := vs["data"].([]any); resp.StatusCode != 200 || vs["total"] != 3.0 || len(data) != 3 || data[0].(map[string]any)["version"] != 3.0 ||
		data[2].(map[string]any)["name"] != "Prod fallback" || data[0].(map[string]any)["name"] != "Prod single" {
		t.Errorf("versions: %d %s", resp.StatusCode, body)
	}

	// Scopes and workspaces.
	readOnly := h.addKey(auth.KeyTypeOrganisation, "", "configs.read")
	if resp, _ := h.do("POST", "/v1/configs", map[string]any{"name": "x", "config": cfg}, map[string]string{"x-gateway-api-key": readOnly}); resp.StatusCode != 403 {
		t.Errorf("create without configs.create: %d", resp.StatusCode)
	}
	if resp, _ := h.do("GET", "/v1/configs/"+slug, nil, map[string]string{"x-gateway-api-key": readOnly}); resp.StatusCode != 200 {
		t.Errorf("read with configs.read: %d", resp.StatusCode)
	}
	if resp, _ := h.do("GET", "/v1/configs", nil, map[string]string{"x-gateway-api-key": readOnly}); resp.StatusCode != 403 {
		t.Errorf("list without configs.list: %d", resp.StatusCode)
	}
	st, err := store.Open(context.Background(), "", h.cfg.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	otherWS, err := st.CreateWorkspace(context.Background(), h.app.Bootstrap.OrganisationID, "team-cfg", "Team")
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	other := h.addKey(auth.KeyTypeWorkspace, otherWS, "*")
	if resp, _ := h.do("GET", "/v1/configs/"+slug, nil, map[string]string{"x-gateway-api-key": other}); resp.StatusCode != 404 {
		t.Errorf("another workspace's config: %d", resp.StatusCode)
	}
	if resp, body := h.do("GET", "/v1/configs", nil, map[string]string{"x-gateway-api-key": other}); decode(t, body)["total"] != 0.0 {
		t.Errorf("another workspace lists %d %s", resp.StatusCode, body)
	}
	resp, body = h.do("POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, map[string]string{"x-gateway-api-key": other, "x-gateway-config": slug})
	if resp.StatusCode != 400 || errorField(t, body, "code") != "AB01_CONFIG_NOT_FOUND" {
		t.Errorf("another workspace using the config: %d %s", resp.StatusCode, body)
	}

	// Delete: the slug stops routing at once.
	resp, body = h.do("DELETE", "/v1/configs/"+slug, nil, h.admin())
	if d := decode(t, body); resp.StatusCode != 200 || d["deleted"] != true || d["id"] != id {
		t.Errorf("delete: %d %s", resp.StatusCode, body)
	}
	if resp, _ := h.do("GET", "/v1/configs/"+slug, nil, h.admin()); resp.StatusCode != 404 {
		t.Errorf("GET after delete: %d", resp.StatusCode)
	}
	resp, body = h.do("POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, map[string]string{"x-gateway-api-key": h.key, "x-gateway-config": slug})
	if resp.StatusCode != 400 || errorField(t, body, "code") != "AB01_CONFIG_NOT_FOUND" || errorField(t, body, "param") != "x-gateway-config" {
		t.Errorf("deleted slug: %d %s", resp.StatusCode, body)
	}

	// Saved credentials are sealed at rest.
	h.shutdown()
	for _, name := range []string{"gateway.db", "gateway.db-wal"} {
		b, _ := os.ReadFile(filepath.Join(h.cfg.DataDir, name))
		if bytes.Contains(b, []byte("sk-secret-")) {
			t.Errorf("%s holds a config credential in clear", name)
		}
	}
}

// addKeyWithDefaults stores an API key with a defaults object.
func (h *harness) addKeyWithDefaults(defaults string) string {
	h.t.Helper()
	st, err := store.Open(context.Background(), "", h.cfg.DataDir)
	if err != nil {
		h.t.Fatal(err)
	}
	defer st.Close()
	raw := auth.GenerateKey()
	k := &auth.APIKey{
		OrganisationID: h.app.Bootstrap.OrganisationID, Name: "defaults", Type: auth.KeyTypeOrganisation, Subtype: auth.KeySubtypeService,
		Hash: auth.HashKey(raw), Mask: auth.MaskKey(raw), Scopes: []string{auth.ScopeCompletionsWrite}, Status: auth.StatusActive,
		Defaults: json.RawMessage(defaults),
	}
	if err := st.CreateAPIKey(context.Background(), k); err != nil {
		h.t.Fatal(err)
	}
	return raw
}

// TestKeyDefaultConfigEndToEnd: a key's default config routes requests
// that name none, streamed ones too, with fallback before the first byte.
func TestKeyDefaultConfigEndToEnd(t *testing.T) {
	h := start(t)
	a := providertest.NewScripted(t, "a", providertest.ErrorEvent())
	b := providertest.NewScripted(t, "b")
	cfg := map[string]any{"strategy": map[string]any{"mode": "fallback"}, "targets": []any{configTarget(a, ""), configTarget(b, "")}}
	resp, body := h.do("POST", "/v1/configs", map[string]any{"name": "Default", "config": cfg}, h.admin())
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	slug := decode(t, body)["slug"].(string)
	key := h.addKeyWithDefaults(fmt.Sprintf(`{"config_id":%q,"allow_config_override":false}`, slug))

	stream := h.sdkOnly(key).Chat.Completions.NewStreaming(context.Background(), streamParams("gpt-4o", true))
	var text strings.Builder
	for stream.Next() {
		if ch := stream.Current(); len(ch.Choices) > 0 {
			text.WriteString(ch.Choices[0].Delta.Content)
		}
	}
	if stream.Err() != nil || text.String() != providertest.Content("b") {
		t.Errorf("stream %q, %v", text.String(), stream.Err())
	}
	// The key may not bring its own config.
	_, err := h.sdkOnly(key, option.WithHeader("x-gateway-config", slug)).Chat.Completions.New(context.Background(), userParams("m"))
	var apiErr *openai.Error
	if !asAPIError(err, &apiErr) || apiErr.StatusCode != 403 || apiErr.Code != "config_override_not_allowed" {
		t.Errorf("override: %v", err)
	}
}

func asAPIError(err error, target **openai.Error) bool {
	e, ok := err.(*openai.Error)
	if ok {
		*target = e
	}
	return ok
}

// TestCircuitBreakerSharedThroughRedis: two gateway processes on one Redis
// share a target's circuit: failures seen by one open it for the other.
func TestCircuitBreakerSharedThroughRedis(t *testing.T) {
	addr := os.Getenv("GATEWAY_TEST_REDIS_ADDR")
	if addr == "" {
		t.Skip("GATEWAY_TEST_REDIS_ADDR not set: skipping the shared circuit-breaker test")
	}
	withRedis := func(c *config.Config) { c.RedisURL = "redis://" + addr }
	h1 := start(t, withRedis)
	h2 := start(t, withRedis)
	b := providertest.NewScripted(t, "b")
	// The processes connect to Redis in the background: a round whose
	// failures landed in one process's own state (before it connected) is
	// repeated with a fresh target, hence a fresh circuit.
	deadline := time.Now().Add(5 * time.Second)
	for round := 0; ; round++ {
		a := providertest.NewScripted(t, fmt.Sprintf("a%d", round))
		a.SetDefault(providertest.Fail(500))
		cfg, _ := json.Marshal(map[string]any{"strategy": map[string]any{"mode": "fallback"},
			"circuit_breaker": map[string]any{"failure_threshold": 2, "cooldown_ms": 60000},
			"targets":         []any{configTarget(a, ""), configTarget(b, "")}})
		hdr := map[string]string{"x-gateway-config": string(cfg)}
		send := func(h *harness) int {
			hdr["x-gateway-api-key"] = h.key
			resp, body := h.do("POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, hdr)
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			return a.Hits()
		}
		send(h1)
		send(h1)
		if send(h2) == 2 {
			return // h2 skipped a: the circuit h1 opened is shared
		}
		if time.Now().After(deadline) {
			t.Fatalf("process 2 kept calling a target whose circuit process 1 opened (round %d)", round)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
