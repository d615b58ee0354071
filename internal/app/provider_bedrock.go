package app

import (
	"net/http"

	"github.com/ai-gateway/gateway/internal/provider"
	"github.com/ai-gateway/gateway/internal/provider/bedrock"
)

func init() {
	nativeProviders = append(nativeProviders, func(hc *http.Client) provider.Provider { return bedrock.New(hc) })
}
