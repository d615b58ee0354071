package catalog

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// litellmSource is the vendored table the embedded catalog is generated
// from, where the checkout has the shared folder beside it.
const litellmSource = "../../../shared/data/pricing/litellm/model_prices_and_context_window.json"

func TestSlugFor(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"openai", "openai"},
		{"azure", "azure-openai"},
		{"azure_ai", "azure-ai"},
		{"anthropic", "anthropic"},
		{"gemini", "google"},
		{"vertex_ai", "vertex-ai"},
		{"vertex_ai-language-models", "vertex-ai"},
		{"vertex_ai-anthropic_models", "vertex-ai"},
		{"bedrock", "bedrock"},
		{"bedrock_converse", "bedrock"},
		{"cohere", "cohere"},
		{"cohere_chat", "cohere"},
		{"mistral", "mistral-ai"},
		{"groq", "groq"},
		{"together_ai", "together-ai"},
		{"fireworks_ai", "fireworks-ai"},
		{"deepseek", "deepseek"},
		{"xai", "x-ai"},
		{"perplexity", "perplexity-ai"},
		{"openrouter", "openrouter"},
		{"cerebras", "cerebras"},
		{"deepinfra", "deepinfra"},
		{"ollama", "ollama"},
		{"replicate", ""},
		{"vertex_aix", ""},
		{"", ""},
	} {
		got, ok := slugFor(tc.in)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("slugFor(%q) = %q, %v; want %q", tc.in, got, ok, tc.want)
		}
	}
}

func TestModelID(t *testing.T) {
	for _, tc := range []struct{ slug, key, want string }{
		{"openai", "gpt-4o", "gpt-4o"},
		{"google", "gemini/gemini-2.5-flash", "gemini-2.5-flash"},
		{"vertex-ai", "vertex_ai/claude-3-5-sonnet@20240620", "claude-3-5-sonnet@20240620"},
		{"openrouter", "openrouter/anthropic/claude-3-haiku", "anthropic/claude-3-haiku"},
		{"fireworks-ai", "fireworks_ai/accounts/fireworks/models/deepseek-v3", "accounts/fireworks/models/deepseek-v3"},
		{"bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"},
		{"azure-openai", "azure/gpt-4o", "gpt-4o"},
		// Price variants, not models.
		{"bedrock", "bedrock/us-east-1/anthropic.claude-v2:1", ""},
		{"azure-openai", "azure/eu/gpt-4o-2024-08-06", ""},
		{"openai", "ft:gpt-4o-mini-2024-07-18", ""},
		{"openai", "openai/container", ""},
		{"together-ai", "together-ai-4.1b-8b", ""},
		{"fireworks-ai", "fireworks_ai/accounts/fireworks/models/", ""},
	} {
		got, ok := modelID(tc.slug, tc.key)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("modelID(%q, %q) = %q, %v; want %q", tc.slug, tc.key, got, ok, tc.want)
		}
	}
}

func TestFromLiteLLM(t *testing.T) {
	src := []byte(`{
		"sample_spec": {"litellm_provider": "one of https://docs.litellm.ai/docs/providers", "max_tokens": "LEGACY parameter", "mode": "one of: chat, embedding"},
		"gpt-4o": {"litellm_provider": "openai", "mode": "chat", "max_input_tokens": 128000, "max_output_tokens": 16384,
			"input_cost_per_token": 2.5e-06, "output_cost_per_token": 1e-05, "cache_read_input_token_cost": 1.25e-06},
		"text-embedding-3-small": {"litellm_provider": "openai", "mode": "embedding", "max_input_tokens": 8191, "max_output_tokens": 1, "input_cost_per_token": 2e-08},
		"dall-e-3": {"litellm_provider": "openai", "mode": "image_generation"},
		"deepseek/deepseek-chat": {"litellm_provider": "deepseek", "mode": "chat", "input_cost_per_token": 9e-07},
		"deepseek-chat": {"litellm_provider": "deepseek", "mode": "chat", "input_cost_per_token": 2.7e-07},
		"deepseek/deepseek-coder": {"litellm_provider": "deepseek", "mode": "chat", "input_cost_per_token": 1.4e-07},
		"claude-sonnet-4-5": {"litellm_provider": "anthropic", "mode": "chat", "max_input_tokens": 200000, "max_output_tokens": 64000,
			"input_cost_per_token": 3e-06, "output_cost_per_token": 1.5e-05, "cache_read_input_token_cost": 3e-07, "cache_creation_input_token_cost": 3.75e-06},
		"replicate/llama": {"litellm_provider": "replicate", "mode": "chat"}
	}`)
	got, err := FromLiteLLM(src)
	if err != nil {
		t.Fatal(err)
	}
	want := Catalog{
		"openai": {
			{ID: "gpt-4o", Mode: ModeChat, ContextWindow: 128000, MaxOutputTokens: 16384, InputCostPerToken: 2.5e-06, OutputCostPerToken: 1e-05, CacheReadCostPerToken: 1.25e-06},
			{ID: "text-embedding-3-small", Mode: ModeEmbedding, ContextWindow: 8191, InputCostPerToken: 2e-08},
		},
		"deepseek": {
			{ID: "deepseek-chat", Mode: ModeChat, InputCostPerToken: 2.7e-07},
			{ID: "deepseek-coder", Mode: ModeChat, InputCostPerToken: 1.4e-07},
		},
		"anthropic": {
			{ID: "claude-sonnet-4-5", Mode: ModeChat, ContextWindow: 200000, MaxOutputTokens: 64000, InputCostPerToken: 3e-06, OutputCostPerToken: 1.5e-05, CacheReadCostPerToken: 3e-07, CacheWriteCostPerToken: 3.75e-06},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("FromLiteLLM (-want +got):\n%s", diff)
	}
	enc, err := got.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(got, back); diff != "" {
		t.Errorf("Decode(Encode) (-want +got):\n%s", diff)
	}
}

func TestDecodeRejectsUnsorted(t *testing.T) {
	for _, in := range []string{
		`{"openai":[{"id":"b","mode":"chat"},{"id":"a","mode":"chat"}]}`,
		`{"openai":[{"id":"a","mode":"chat"},{"id":"a","mode":"chat"}]}`,
		`[]`,
	} {
		if _, err := Decode([]byte(in)); err == nil {
			t.Errorf("Decode(%s) accepted", in)
		}
	}
}

func TestEmbeddedCatalog(t *testing.T) {
	want := []string{"anthropic", "azure-ai", "azure-openai", "bedrock", "cerebras", "cohere", "deepinfra", "deepseek",
		"fireworks-ai", "google", "groq", "mistral-ai", "ollama", "openai", "openrouter", "perplexity-ai", "together-ai", "vertex-ai", "x-ai"}
	if diff := cmp.Diff(want, Providers()); diff != "" {
		t.Errorf("Providers (-want +got):\n%s", diff)
	}
	for _, tc := range []struct{ provider, id, mode string }{
		{"openai", "gpt-4o", ModeChat},
		{"openai", "gpt-4o-mini", ModeChat},
		{"openai", "text-embedding-3-small", ModeEmbedding},
		{"anthropic", "claude-sonnet-4-5", ModeChat},
		{"google", "gemini-2.5-flash", ModeChat},
		{"vertex-ai", "gemini-2.5-flash", ModeChat},
		{"bedrock", "anthropic.claude-sonnet-4-5-20250929-v1:0", ModeChat},
		{"cohere", "command-r", ModeChat},
		{"mistral-ai", "mistral-large-latest", ModeChat},
		{"deepseek", "deepseek-chat", ModeChat},
		{"x-ai", "grok-2", ModeChat},
	} {
		m, ok := Lookup(tc.provider, tc.id)
		if !ok {
			t.Errorf("Lookup(%q, %q): not found", tc.provider, tc.id)
			continue
		}
		if m.Mode != tc.mode || m.ContextWindow <= 0 || m.InputCostPerToken <= 0 {
			t.Errorf("Lookup(%q, %q) = %+v", tc.provider, tc.id, m)
		}
	}
	// Values as in the source table (shared/data/pricing/README.md §3).
	if m, _ := Lookup("openai", "gpt-4o"); m.InputCostPerToken != 2.5e-06 || m.OutputCostPerToken != 1e-05 || m.ContextWindow != 128000 || m.MaxOutputTokens != 16384 {
		t.Errorf("gpt-4o = %+v", m)
	}
	if _, ok := Lookup("anthropic", "gpt-4o"); ok {
		t.Error("anthropic offers gpt-4o")
	}
	if ms := Models("no-such-provider"); ms != nil {
		t.Errorf("Models(unknown) = %v", ms)
	}
	for _, p := range Providers() {
		ms := Models(p)
		if len(ms) == 0 {
			t.Errorf("Models(%q) is empty", p)
		}
		if !slices.IsSortedFunc(ms, func(a, b Model) int { return strings.Compare(a.ID, b.ID) }) {
			t.Errorf("Models(%q) is not sorted", p)
		}
		for _, m := range ms {
			if m.Mode != ModeChat && m.Mode != ModeEmbedding {
				t.Errorf("%s %s has mode %q", p, m.ID, m.Mode)
			}
		}
	}
	// Models returns a copy.
	Models("openai")[0].ID = "changed"
	if Models("openai")[0].ID == "changed" {
		t.Error("Models shares its slice with the catalog")
	}
}

// TestEmbeddedIsGenerated checks data/models.json against the vendored
// source, so that a hand edit or a stale file is caught.
func TestEmbeddedIsGenerated(t *testing.T) {
	src, err := os.ReadFile(litellmSource)
	if os.IsNotExist(err) {
		t.Skipf("%s is not in this checkout", litellmSource)
	}
	if err != nil {
		t.Fatal(err)
	}
	c, err := FromLiteLLM(src)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(enc, embedded) {
		t.Error("data/models.json is not what the generator makes from the source; run go generate ./internal/catalog")
	}
}
