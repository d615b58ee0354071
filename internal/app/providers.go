package app

import (
	"net/http"

	"github.com/ai-gateway/gateway/internal/provider"
	"github.com/ai-gateway/gateway/internal/provider/openai"
)

// nativeProviders holds the constructors of the translating adapters. Each
// adapter registers itself from its own file (provider_<name>.go) in an
// init function, so adding one touches no shared line.
var nativeProviders []func(hc *http.Client) provider.Provider

// providers builds every adapter the gateway serves, sharing one client.
func providers(hc *http.Client) []provider.Provider {
	ps := openai.All(hc)
	for _, mk := range nativeProviders {
		ps = append(ps, mk(hc))
	}
	return ps
}
