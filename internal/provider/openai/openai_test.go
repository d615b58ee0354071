package openai

import (
	"errors"
	"net/http"
	"testing"

	"github.com/ai-gateway/gateway/internal/provider"
)

func TestPrepareForwardURLs(t *testing.T) {
	for _, tc := range []struct {
		name, provider, customHost, path, query string
		opts                                    map[string]string
		want, wantAuth, wantAPIKey              string
	}{
		{name: "openai", provider: "openai", path: "/chat/completions", want: "https://api.openai.com/v1/chat/completions", wantAuth: "Bearer k"},
		{name: "groq", provider: "groq", path: "/models", want: "https://api.groq.com/openai/v1/models", wantAuth: "Bearer k"},
		{name: "deepseek has no /v1", provider: "deepseek", path: "/chat/completions", want: "https://api.deepseek.com/chat/completions", wantAuth: "Bearer k"},
		{name: "fireworks", provider: "fireworks-ai", path: "/files", query: "purpose=batch", want: "https://api.fireworks.ai/inference/v1/files?purpose=batch", wantAuth: "Bearer k"},
		{name: "ollama", provider: "ollama", path: "/chat/completions", want: "http://localhost:11434/v1/chat/completions", wantAuth: "Bearer k"},
		{name: "custom host replaces base", provider: "openai", customHost: "http://10.0.0.5:8000/v1/", path: "/rerank", want: "http://10.0.0.5:8000/v1/rerank", wantAuth: "Bearer k"},
		{name: "vllm by custom host", provider: "vllm", customHost: "http://127.0.0.1:8000/v1", path: "/chat/completions", want: "http://127.0.0.1:8000/v1/chat/completions", wantAuth: "Bearer k"},
		{name: "azure deployment", provider: "azure-openai", opts: map[string]string{"azure_resource_name": "myres", "azure_deployment_id": "gpt4o"}, path: "/chat/completions",
			want: "https://myres.openai.azure.com/openai/deployments/gpt4o/chat/completions?api-version=2024-10-21", wantAPIKey: "k"},
		{name: "azure deployment with version", provider: "azure-openai", opts: map[string]string{"azure_resource_name": "myres", "azure_deployment_id": "gpt4o", "azure_api_version": "2025-03-01-preview"}, path: "/embeddings",
			want: "https://myres.openai.azure.com/openai/deployments/gpt4o/embeddings?api-version=2025-03-01-preview", wantAPIKey: "k"},
		{name: "azure v1", provider: "azure-openai", opts: map[string]string{"azure_resource_name": "myres"}, path: "/chat/completions",
			want: "https://myres.openai.azure.com/openai/v1/chat/completions", wantAPIKey: "k"},
		{name: "azure custom host", provider: "azure-openai", customHost: "https://proxy.example/", opts: map[string]string{"azure_deployment_id": "d"}, path: "/files", query: "purpose=x",
			want: "https://proxy.example/openai/deployments/d/files?api-version=2024-10-21&purpose=x", wantAPIKey: "k"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := byName(t, tc.provider)
			out, _ := http.NewRequest("GET", "http://placeholder", nil)
			err := c.PrepareForward(out, &provider.Target{Provider: tc.provider, APIKey: "k", CustomHost: tc.customHost, Options: tc.opts}, tc.path, tc.query)
			if err != nil {
				t.Fatal(err)
			}
			if got := out.URL.String(); got != tc.want {
				t.Errorf("URL = %s, want %s", got, tc.want)
			}
			if out.Header.Get("Authorization") != tc.wantAuth || out.Header.Get("api-key") != tc.wantAPIKey {
				t.Errorf("auth headers = %v", out.Header)
			}
		})
	}
}

func TestPrepareForwardConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		provider string
		opts     map[string]string
	}{
		{"vllm", nil},
		{"azure-openai", nil},
		{"azure-openai", map[string]string{"azure_resource_name": "evil.com/x"}},
	} {
		out, _ := http.NewRequest("GET", "http://placeholder", nil)
		err := byName(t, tc.provider).PrepareForward(out, &provider.Target{Provider: tc.provider, Options: tc.opts}, "/chat/completions", "")
		var ce *provider.ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%s %v: err = %v, want a ConfigError", tc.provider, tc.opts, err)
		}
	}
}

func TestNoKeyNoAuthHeader(t *testing.T) {
	out, _ := http.NewRequest("GET", "http://placeholder", nil)
	if err := byName(t, "ollama").PrepareForward(out, &provider.Target{Provider: "ollama"}, "/models", ""); err != nil {
		t.Fatal(err)
	}
	if _, ok := out.Header["Authorization"]; ok {
		t.Error("Authorization set without a key")
	}
}

func byName(t *testing.T, name string) *Client {
	t.Helper()
	for _, s := range Specs {
		if s.Name == name {
			return New(s, http.DefaultClient)
		}
	}
	t.Fatalf("no spec %s", name)
	return nil
}
