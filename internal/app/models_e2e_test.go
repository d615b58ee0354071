package app_test

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"github.com/ai-gateway/gateway/internal/catalog"
)

// listModels lists GET /v1/models with the OpenAI SDK and the gateway key
// raw, without routing headers, and returns the models by provider.
func (h *harness) listModels(raw string) map[string][]string {
	h.t.Helper()
	c := openai.NewClient(option.WithBaseURL(h.base+"/v1"), option.WithAPIKey("unused"),
		option.WithHeader("x-gateway-api-key", raw), option.WithMaxRetries(0))
	page, err := c.Models.List(context.Background())
	if err != nil {
		h.t.Fatalf("Models.List: %v", err)
	}
	out := map[string][]string{}
	for _, m := range page.Data {
		if m.Object != "model" || m.OwnedBy == "" {
			h.t.Errorf("model %+v", m)
		}
		out[m.OwnedBy] = append(out[m.OwnedBy], m.ID)
	}
	return out
}

func TestModelsList(t *testing.T) {
	h := start(t)

	// No virtual keys: an empty list, not 404.
	if got := h.listModels(h.key); len(got) != 0 {
		t.Fatalf("without virtual keys: %v", got)
	}
	resp, body := h.do("GET", "/v1/models", nil, h.admin())
	if resp.StatusCode != 200 || string(body) != `{"object":"list","data":[]}` {
		t.Fatalf("without virtual keys: %d %s", resp.StatusCode, body)
	}

	// Virtual keys for openai and anthropic in the default workspace.
	h.must(h.key, "POST", "/v1/virtual-keys", map[string]any{"name": "oa", "provider": "openai", "key": "sk-vk"})
	h.must(h.key, "POST", "/v1/virtual-keys", map[string]any{"name": "ant", "provider": "anthropic", "key": "sk-ant-vk"})
	h.must(h.key, "POST", "/v1/virtual-keys", map[string]any{"name": "ant-2", "provider": "anthropic", "key": "sk-ant-vk-2"})

	got := h.listModels(h.key)
	if len(got) != 2 || len(got["openai"]) != len(catalog.Models("openai")) || len(got["anthropic"]) != len(catalog.Models("anthropic")) {
		t.Fatalf("with openai and anthropic virtual keys: %d providers, openai %d of %d, anthropic %d of %d",
			len(got), len(got["openai"]), len(catalog.Models("openai")), len(got["anthropic"]), len(catalog.Models("anthropic")))
	}
	for provider, id := range map[string]string{"openai": "gpt-4o", "anthropic": "claude-sonnet-4-5"} {
		if !slices.Contains(got[provider], id) {
			t.Errorf("%s models lack %s", provider, id)
		}
	}
	resp, body = h.do("GET", "/v1/models", nil, h.admin())
	if first := gjson.GetBytes(body, "data.0"); resp.StatusCode != 200 || first.Get("provider").String() != first.Get("owned_by").String() || first.Get("created").Type != gjson.Number {
		t.Errorf("list item %s", first.Raw)
	}
	if rec := h.logRecord(resp.Header.Get("x-gateway-request-id")); rec["request_path"] != "/v1/models" || rec["status_code"] != float64(200) {
		t.Errorf("log record %v", rec)
	}

	// A workspace key sees only its own workspace's virtual keys.
	ws := h.newWorkspace("other")
	other, _ := h.newKey(h.key, "workspace", "service", map[string]any{"workspace_id": ws})
	if got := h.listModels(other); len(got) != 0 {
		t.Errorf("another workspace's key sees %d providers", len(got))
	}
	h.must(h.key, "POST", "/v1/virtual-keys", map[string]any{"name": "gem", "provider": "google", "key": "g-key", "workspace_id": ws})
	if got := h.listModels(other); len(got) != 1 || len(got["google"]) == 0 {
		t.Errorf("other workspace with a google virtual key: %v providers", len(got))
	}
	// The organisation key sees every workspace's.
	if got := h.listModels(h.key); len(got) != 3 {
		t.Errorf("organisation key sees %d providers, want 3", len(got))
	}
	defKey, _ := h.newKey(h.key, "workspace", "service", nil)
	if got := h.listModels(defKey); len(got) != 2 || got["google"] != nil {
		t.Errorf("default workspace key sees %d providers", len(got))
	}

	// The list is a data-plane call: completions.write is required.
	limited, _ := h.newKey(h.key, "workspace", "service", map[string]any{"scopes": []string{"logs.list"}})
	if resp, body := h.do("GET", "/v1/models", nil, map[string]string{"x-gateway-api-key": limited}); resp.StatusCode != 403 {
		t.Errorf("key without completions.write: %d %s", resp.StatusCode, body)
	}
	if resp, _ := h.do("GET", "/v1/models", nil, nil); resp.StatusCode != 401 {
		t.Errorf("no key: %d", resp.StatusCode)
	}
}

func TestModelsForwardedWithRouting(t *testing.T) {
	h := start(t)
	vk := h.must(h.key, "POST", "/v1/virtual-keys", map[string]any{"name": "oa", "provider": "openai", "key": "sk-vk", "custom_host": h.up.BaseURL()})["slug"].(string)
	for name, hdr := range map[string]map[string]string{
		"provider headers": h.routing(),
		"virtual key":      {"x-gateway-api-key": h.key, "x-gateway-virtual-key": vk},
	} {
		before := len(h.up.Requests())
		resp, body := h.do("GET", "/v1/models?limit=2", nil, hdr)
		if resp.StatusCode != http.StatusOK || gjson.GetBytes(body, "path").String() != "/v1/models" || gjson.GetBytes(body, "query").String() != "limit=2" {
			t.Errorf("%s: %d %s", name, resp.StatusCode, body)
			continue
		}
		if n := len(h.up.Requests()); n != before+1 {
			t.Errorf("%s: upstream saw %d requests, want 1", name, n-before)
		}
		if resp.Header.Get("x-upstream-header") != "kept" || resp.Header.Get("x-gateway-provider") != "openai" {
			t.Errorf("%s: headers %v", name, resp.Header)
		}
	}
}
