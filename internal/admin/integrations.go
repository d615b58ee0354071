package admin

import (
	"net/http"

	"github.com/ai-gateway/gateway/internal/httpx"
)

// IntegrationStore persists integrations and providers (stub).
type IntegrationStore interface{}

func (a *API) registerIntegrations(mux *http.ServeMux, h func(httpx.HandlerFunc) http.Handler) {}
