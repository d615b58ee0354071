package admin

import (
	"net/http"

	"github.com/ai-gateway/gateway/internal/httpx"
)

// DeploymentStore persists deployments (stub).
type DeploymentStore interface{}

func (a *API) registerDeployments(mux *http.ServeMux, h func(httpx.HandlerFunc) http.Handler) {}
