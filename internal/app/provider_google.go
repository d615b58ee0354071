package app

import (
	"net/http"

	"github.com/ai-gateway/gateway/internal/provider"
	"github.com/ai-gateway/gateway/internal/provider/anthropic"
	"github.com/ai-gateway/gateway/internal/provider/google"
)

// Vertex AI serves Claude models too: the google adapter sends them with
// its Vertex URL and token, the anthropic package translates them.
func init() {
	nativeProviders = append(nativeProviders,
		func(hc *http.Client) provider.Provider { return google.New(hc) },
		func(hc *http.Client) provider.Provider {
			return google.NewVertex(hc, google.WithClaude(anthropic.Translator{Provider: google.NameVertex}))
		},
	)
}
