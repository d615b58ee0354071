package app

import (
	"net/http"

	"github.com/ai-gateway/gateway/internal/provider"
	"github.com/ai-gateway/gateway/internal/provider/google"
)

func init() {
	nativeProviders = append(nativeProviders,
		func(hc *http.Client) provider.Provider { return google.New(hc) },
		func(hc *http.Client) provider.Provider { return google.NewVertex(hc) },
	)
}
