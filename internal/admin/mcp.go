package admin

import (
	"net/http"

	"github.com/ai-gateway/gateway/internal/httpx"
)

// MCPStore persists MCP integrations and servers (stub).
type MCPStore interface{}

func (a *API) registerMCP(mux *http.ServeMux, h func(httpx.HandlerFunc) http.Handler) {}
