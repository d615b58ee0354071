// Package admin holds the control-plane handlers of API.md §6, one file per
// resource family, with the envelopes of API.md §2. Handlers return errors;
// httpx renders them.
//
// admin imports auth, reqlog, httpx and secret; what it needs from storage
// arrives as interfaces declared here, which the store satisfies. The data
// plane never imports admin.
package admin

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/ai-gateway/gateway/internal/auth"
	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/reqlog"
	"github.com/ai-gateway/gateway/internal/secret"
)

// VirtualKeyStore persists virtual keys.
type VirtualKeyStore interface {
	CreateVirtualKey(ctx context.Context, vk *auth.VirtualKey) error
	VirtualKey(ctx context.Context, organisationID, slugOrID string) (*auth.VirtualKey, error)
	ListVirtualKeys(ctx context.Context, organisationID, workspaceID string, page, pageSize int) ([]*auth.VirtualKey, int, error)
	UpdateVirtualKey(ctx context.Context, vk *auth.VirtualKey) error
	DeleteVirtualKey(ctx context.Context, organisationID, slugOrID string) (*auth.VirtualKey, error)
}

// LogStore reads and inserts request-log records.
type LogStore interface {
	reqlog.Reader
	reqlog.Sink
}

// VirtualKeyInvalidator drops the data plane's cached copy of a key.
type VirtualKeyInvalidator interface {
	Invalidate(organisationID, slugOrID string)
}

// Deps are what the handlers need.
type Deps struct {
	VirtualKeys VirtualKeyStore
	Logs        LogStore
	Box         *secret.Box
	Invalidate  VirtualKeyInvalidator
	// Providers lists the provider slugs a virtual key or config may name.
	Providers []string
	Logger    *slog.Logger

	// Configs stores saved configs; ConfigCache is the data plane's cache
	// of them, invalidated after each change (configs.go).
	Configs     ConfigStore
	ConfigCache ConfigInvalidator

	// Authenticator checks every control-plane request's key (the data
	// plane has its own middleware) and is invalidated after key changes.
	Authenticator Authenticator
	// OnAuthFail, if set, is called for each rejected key (metrics).
	OnAuthFail func()
	Tenancy    TenancyStore
	APIKeys    APIKeyStore
	Audit      AuditStore
	// Features reports whether a SPEC.md deployment feature flag
	// (GUARDRAILS_ENABLED, …) is on; nil means every flag is on. With
	// AUDIT_LOGS_ENABLED off nothing is recorded and GET /v1/audit-logs
	// answers feature_disabled (features.go).
	Features func(feature string) bool
	// LogRetention is LOG_RETENTION_DISPLAY: logs older than this are not
	// returned (0: no bound).
	LogRetention time.Duration

	// Integrations stores integrations and providers (integrations.go).
	Integrations IntegrationStore
	// ProviderCache is the data plane's cache of stored providers,
	// invalidated after each change to a provider or an integration.
	ProviderCache ProviderInvalidator
	// Deployments stores gateway deployments (deployments.go).
	Deployments DeploymentStore
	// MCP stores MCP integrations and servers (mcp.go).
	MCP MCPStore
	// MCPFetcher reads an MCP server's metadata (package mcp, via app).
	MCPFetcher MCPFetcher
	// OrganisationID is the organisation that audit records of requests
	// whose key failed belong to.
	OrganisationID string
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// API serves the control plane.
type API struct{ d Deps }

// New returns the control-plane API.
func New(d Deps) *API {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	return &API{d: d}
}

func (a *API) now() time.Time { return a.d.Now() }

// Register mounts the control plane on outer: every route, and a JSON 404
// for every other /v1 path, behind the one wrapper (control) that
// authenticates, authorises by the RBAC table and writes the audit log.
func (a *API) Register(outer *http.ServeMux) {
	mux := http.NewServeMux()
	defer outer.Handle("/v1/", a.control(mux))
	h := func(f httpx.HandlerFunc) http.Handler { return httpx.Handler(a.d.Logger, f) }
	a.registerTenancy(mux, h)
	a.registerAPIKeys(mux, h)
	mux.Handle("GET /v1/audit-logs", h(a.listAuditLogs))
	mux.Handle("POST /v1/virtual-keys", h(a.createVirtualKey))
	mux.Handle("GET /v1/virtual-keys", h(a.listVirtualKeys))
	mux.Handle("GET /v1/virtual-keys/{slug}", h(a.getVirtualKey))
	mux.Handle("PUT /v1/virtual-keys/{slug}", h(a.updateVirtualKey))
	mux.Handle("DELETE /v1/virtual-keys/{slug}", h(a.deleteVirtualKey))

	a.registerConfigs(mux, h)
	a.registerIntegrations(mux, h)
	a.registerDeployments(mux, h)
	a.registerMCP(mux, h)

	mux.Handle("GET /v1/logs", h(a.listLogs))
	mux.Handle("POST /v1/logs", h(a.insertLogs))
	mux.Handle("GET /v1/logs/{id}", h(a.getLog))

	mux.Handle("/v1/", h(func(w http.ResponseWriter, r *http.Request) error {
		return httpx.NotFound("no route for " + r.Method + " " + r.URL.Path + " (a pass-through needs provider routing headers)")
	}))
}

// list is the list envelope of API.md §2.
type list[T any] struct {
	Object string `json:"object"`
	Total  int    `json:"total"`
	Data   []T    `json:"data"`
}

// writeList answers 200 with the list envelope of items, each shown by
// view, and total (the count across every page).
func writeList[T, V any](w http.ResponseWriter, total int, items []T, view func(T) V) error {
	return writeViews(w, total, items, func(it T) (V, error) { return view(it), nil })
}

// writeViews is writeList for views that can fail (a stored secret that
// does not open): the answer is then a 500 and nothing is written.
func writeViews[T, V any](w http.ResponseWriter, total int, items []T, view func(T) (V, error)) error {
	out := list[V]{Object: "list", Total: total, Data: make([]V, 0, len(items))}
	for _, it := range items {
		v, err := view(it)
		if err != nil {
			return httpx.Internal(err)
		}
		out.Data = append(out.Data, v)
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

type deleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}

// page reads current_page (0-based) and page_size (default 50, max 1000).
func page(r *http.Request) (int, int, error) {
	q := r.URL.Query()
	p, size := 0, 50
	if v := q.Get("current_page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, 0, httpx.BadRequest("invalid_value", "current_page", "current_page: must be an integer ≥ 0")
		}
		p = n
	}
	if v := q.Get("page_size"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return 0, 0, httpx.BadRequest("invalid_value", "page_size", "page_size: must be an integer between 1 and 1000")
		}
		size = n
	}
	return p, size, nil
}

func principal(r *http.Request) *auth.Principal { return auth.PrincipalFrom(r.Context()) }
