package gateway

import (
	"context"
	"net/http"
	"slices"

	"github.com/ai-gateway/gateway/internal/catalog"
	"github.com/ai-gateway/gateway/internal/httpx"
)

// VirtualKeyProviders lists the distinct providers of the active virtual
// keys of an organisation, or of one of its workspaces when workspaceID is
// not "". The store satisfies it.
type VirtualKeyProviders interface {
	VirtualKeyProviders(ctx context.Context, organisationID, workspaceID string) ([]string, error)
}

// models serves GET /v1/models: forwarded to the provider when the request
// carries routing headers (the pass-through, unchanged), and otherwise
// answered from the model catalog (API.md §3).
func (g *Gateway) models() http.Handler {
	pass := g.PassThrough()
	list := g.handle("models", g.listModels)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if HasRouting(r) {
			pass.ServeHTTP(w, r)
			return
		}
		list.ServeHTTP(w, r)
	})
}

// modelObject is one entry of OpenAI's model list. Provider, not in
// OpenAI's shape, names the gateway provider slug to route the model to,
// since two providers may offer a model of the same name.
type modelObject struct {
	ID       string `json:"id"`
	Object   string `json:"object"`
	Created  int64  `json:"created"`
	OwnedBy  string `json:"owned_by"`
	Provider string `json:"provider"`
}

type modelList struct {
	Object string        `json:"object"`
	Data   []modelObject `json:"data"`
}

// listModels answers the models the caller's key may use: the catalog
// models of the providers of the virtual keys it can route through (a
// workspace key its workspace's, an organisation key the whole
// organisation's). A key without virtual keys gets an empty list. This
// reads the store directly: the list is not on the hot path.
func (g *Gateway) listModels(c *call) error {
	workspace := c.p.WorkspaceID
	if c.p.IsOrganisationKey() {
		workspace = ""
	}
	var providers []string
	if g.opt.VirtualKeyProviders != nil {
		var err error
		providers, err = g.opt.VirtualKeyProviders.VirtualKeyProviders(c.r.Context(), c.p.OrganisationID, workspace)
		if err != nil {
			return httpx.Internal(err)
		}
	}
	slices.Sort(providers)
	out := modelList{Object: "list", Data: []modelObject{}}
	for _, p := range slices.Compact(providers) {
		if _, ok := g.providers.Lookup(p); !ok {
			continue
		}
		for _, m := range catalog.Models(p) {
			out.Data = append(out.Data, modelObject{ID: m.ID, Object: "model", OwnedBy: p, Provider: p})
		}
	}
	httpx.WriteJSON(c.w, http.StatusOK, out)
	return nil
}
