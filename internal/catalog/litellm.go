package catalog

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// litellmProviders maps litellm's provider names (the litellm_provider
// field) to this gateway's provider slugs. Vertex AI's many
// "vertex_ai-<family>" names map in slugFor.
var litellmProviders = map[string]string{
	"openai":                        "openai",
	"azure":                         "azure-openai",
	"azure_ai":                      "azure-ai",
	"anthropic":                     "anthropic",
	"gemini":                        "google",
	"bedrock":                       "bedrock",
	"bedrock_converse":              "bedrock",
	"cohere":                        "cohere",
	"cohere_chat":                   "cohere",
	"mistral":                       "mistral-ai",
	"groq":                          "groq",
	"together_ai":                   "together-ai",
	"fireworks_ai":                  "fireworks-ai",
	"fireworks_ai-embedding-models": "fireworks-ai",
	"deepseek":                      "deepseek",
	"xai":                           "x-ai",
	"perplexity":                    "perplexity-ai",
	"openrouter":                    "openrouter",
	"cerebras":                      "cerebras",
	"deepinfra":                     "deepinfra",
	"ollama":                        "ollama",
}

// slugFor returns the gateway provider slug of a litellm provider name.
func slugFor(litellmProvider string) (string, bool) {
	if litellmProvider == "vertex_ai" || strings.HasPrefix(litellmProvider, "vertex_ai-") {
		return "vertex-ai", true
	}
	s, ok := litellmProviders[litellmProvider]
	return s, ok
}

// routePrefixes are the first key segments litellm uses to route a model
// string to a provider ("gemini/gemini-2.5-flash"); the model name a
// client sends to the provider itself comes after it.
var routePrefixes = map[string]bool{
	"openai": true, "azure": true, "azure_ai": true, "gemini": true, "vertex_ai": true, "bedrock": true,
	"cohere": true, "mistral": true, "groq": true, "together_ai": true, "fireworks_ai": true, "deepseek": true,
	"xai": true, "perplexity": true, "openrouter": true, "cerebras": true, "deepinfra": true, "ollama": true,
}

// modelID returns the model name a client sends to slug for litellm's
// key, and false for keys that name a price variant rather than a model:
// Bedrock's region and commitment paths ("bedrock/us-east-1/…"), Azure's
// data-zone prices ("azure/eu/…"), OpenAI's fine-tuning templates
// ("ft:gpt-4o"), Together's size buckets ("together-ai-4.1b-8b"), the
// code-interpreter session price ("openai/container") and Fireworks'
// default price ("fireworks_ai/accounts/fireworks/models/").
func modelID(slug, key string) (string, bool) {
	id := key
	if seg, rest, ok := strings.Cut(key, "/"); ok && routePrefixes[seg] {
		id = rest
	}
	switch {
	case id == "" || strings.HasSuffix(id, "/") || id == "container":
		return "", false
	case (slug == "bedrock" || slug == "azure-openai") && strings.Contains(id, "/"):
		return "", false
	case slug == "openai" && strings.HasPrefix(id, "ft:"):
		return "", false
	case slug == "together-ai" && strings.HasPrefix(id, "together-ai-"):
		return "", false
	}
	return id, true
}

// FromLiteLLM builds a catalog from litellm's model_prices_and_context_window.json:
// the chat and embedding models of the providers this gateway serves. When
// two keys give the same model of a provider ("deepseek-chat" and
// "deepseek/deepseek-chat"), the key that is the model name itself wins,
// else the first in key order.
func FromLiteLLM(b []byte) (Catalog, error) {
	var raw map[string]map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("litellm price table: %w", err)
	}
	type pick struct {
		m     Model
		exact bool
	}
	picked := map[string]map[string]pick{}
	for _, key := range slices.Sorted(maps.Keys(raw)) {
		e := raw[key]
		mode := str(e["mode"])
		if mode != ModeChat && mode != ModeEmbedding {
			continue
		}
		slug, ok := slugFor(str(e["litellm_provider"]))
		if !ok {
			continue
		}
		id, ok := modelID(slug, key)
		if !ok {
			continue
		}
		m := Model{
			ID: id, Mode: mode,
			ContextWindow:          int(num(e["max_input_tokens"])),
			InputCostPerToken:      num(e["input_cost_per_token"]),
			OutputCostPerToken:     num(e["output_cost_per_token"]),
			CacheReadCostPerToken:  num(e["cache_read_input_token_cost"]),
			CacheWriteCostPerToken: num(e["cache_creation_input_token_cost"]),
		}
		if mode == ModeChat {
			m.MaxOutputTokens = int(num(e["max_output_tokens"]))
		}
		if picked[slug] == nil {
			picked[slug] = map[string]pick{}
		}
		prev, dup := picked[slug][id]
		if dup && (prev.exact || key != id) {
			continue
		}
		picked[slug][id] = pick{m: m, exact: key == id}
	}
	c := make(Catalog, len(picked))
	for slug, ms := range picked {
		for _, id := range slices.Sorted(maps.Keys(ms)) {
			c[slug] = append(c[slug], ms[id].m)
		}
	}
	return c, nil
}

// str and num read a field leniently: the table has a few fields of
// unexpected types (the sample_spec entry documents fields in strings),
// which count as absent.
func str(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) != nil {
		return ""
	}
	return s
}

func num(v json.RawMessage) float64 {
	var f float64
	if json.Unmarshal(v, &f) != nil {
		return 0
	}
	return f
}
