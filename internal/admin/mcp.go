package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/registry"
)

// MCPStore persists MCP integrations (organisation-level) and MCP servers
// (workspace-level), with the metadata of their last sync.
type MCPStore interface {
	CreateMCPIntegration(ctx context.Context, i *registry.MCPIntegration) error
	MCPIntegration(ctx context.Context, organisationID, slugOrID string) (*registry.MCPIntegration, error)
	// ListMCPIntegrations lists those shared with workspaceID, or all
	// when it is empty.
	ListMCPIntegrations(ctx context.Context, organisationID, workspaceID string, page, pageSize int) ([]*registry.MCPIntegration, int, error)
	UpdateMCPIntegration(ctx context.Context, i *registry.MCPIntegration) error
	// DeleteMCPIntegration is a conflict while servers use the integration.
	DeleteMCPIntegration(ctx context.Context, organisationID, slugOrID string) (*registry.MCPIntegration, error)

	CreateMCPServer(ctx context.Context, s *registry.MCPServer) error
	MCPServer(ctx context.Context, organisationID, slugOrID string) (*registry.MCPServer, error)
	ListMCPServers(ctx context.Context, organisationID, workspaceID string, page, pageSize int) ([]*registry.MCPServer, int, error)
	UpdateMCPServer(ctx context.Context, s *registry.MCPServer) error
	DeleteMCPServer(ctx context.Context, organisationID, slugOrID string) (*registry.MCPServer, error)
	// RecordMCPSync stores a fetch's outcome on the server and on its
	// integration.
	RecordMCPSync(ctx context.Context, organisationID, serverID string, md registry.MCPMetadata) error
}

// MCPFetcher connects to an MCP server and returns what it says about
// itself (package mcp, passed in by package app). Its errors are safe to
// show an administrator.
type MCPFetcher interface {
	Fetch(ctx context.Context, t registry.MCPTarget) (registry.MCPMetadata, error)
}

func (a *API) registerMCP(mux *http.ServeMux, h func(httpx.HandlerFunc) http.Handler) {
	mux.Handle("POST /v1/mcp-integrations", h(a.createMCPIntegration))
	mux.Handle("GET /v1/mcp-integrations", h(a.listMCPIntegrations))
	mux.Handle("GET /v1/mcp-integrations/{slug}", h(a.getMCPIntegration))
	mux.Handle("PUT /v1/mcp-integrations/{slug}", h(a.updateMCPIntegration))
	mux.Handle("DELETE /v1/mcp-integrations/{slug}", h(a.deleteMCPIntegration))

	mux.Handle("POST /v1/mcp-servers", h(a.createMCPServer))
	mux.Handle("GET /v1/mcp-servers", h(a.listMCPServers))
	mux.Handle("GET /v1/mcp-servers/{slug}", h(a.getMCPServer))
	mux.Handle("PUT /v1/mcp-servers/{slug}", h(a.updateMCPServer))
	mux.Handle("DELETE /v1/mcp-servers/{slug}", h(a.deleteMCPServer))
	mux.Handle("GET /v1/mcp-servers/{slug}/metadata", h(a.getMCPServerMetadata))
}

// Bounds of MCP integration input.
const (
	maxMCPHeaders     = 32
	maxMCPHeaderValue = 8 << 10
	maxMCPTags        = 64
	maxMCPDescription = 4 << 10
)

// mcpReservedHeaders are headers the MCP transports or HTTP itself set; an
// integration may not override them.
var mcpReservedHeaders = []string{
	"accept", "connection", "content-length", "content-type", "host", "last-event-id",
	"mcp-protocol-version", "mcp-session-id", "te", "trailer", "transfer-encoding", "upgrade",
}

// mcpIntegrationInput is the body of POST and PUT /v1/mcp-integrations.
// Pointers and raw values tell "absent" from "empty" for PUT.
type mcpIntegrationInput struct {
	Name        *string `json:"name"`
	Slug        *string `json:"slug"`
	Description *string `json:"description"`
	URL         *string `json:"url"`
	Transport   *string `json:"transport"`
	AuthType    *string `json:"auth_type"`
	// Headers are write-only: header name to value, sealed at rest.
	Headers       json.RawMessage    `json:"headers"`
	AllWorkspaces *bool              `json:"all_workspaces"`
	WorkspaceIDs  *[]string          `json:"workspace_ids"`
	Tags          *map[string]string `json:"tags"`
}

type mcpIntegrationView struct {
	Object string `json:"object"`
	*registry.MCPIntegration
}

func mcpIntegrationOut(i *registry.MCPIntegration) mcpIntegrationView {
	return mcpIntegrationView{Object: "mcp-integration", MCPIntegration: i}
}

func (a *API) createMCPIntegration(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	var in mcpIntegrationInput
	if err := readStrict(w, r, &in); err != nil {
		return err
	}
	if in.Name == nil || strings.TrimSpace(*in.Name) == "" {
		return httpx.BadRequest("missing_required", "name", "name: is required")
	}
	if in.URL == nil || *in.URL == "" {
		return httpx.BadRequest("missing_required", "url", "url: is required")
	}
	now := a.now().UTC()
	i := &registry.MCPIntegration{
		ID: uuid.NewString(), OrganisationID: p.OrganisationID, Transport: registry.MCPTransportHTTP,
		AuthType: registry.MCPAuthNone, HeaderNames: []string{}, WorkspaceIDs: []string{},
		Metadata:  registry.MCPMetadata{SyncStatus: registry.MCPSyncNever, Icons: []registry.MCPIcon{}},
		CreatedAt: now, UpdatedAt: now,
	}
	if in.Slug != nil {
		i.Slug = *in.Slug
	} else {
		i.Slug = newSlug(*in.Name)
	}
	// Shared with every workspace unless the request lists some.
	if in.AllWorkspaces == nil && in.WorkspaceIDs == nil {
		i.AllWorkspaces = true
	}
	if err := a.applyMCPIntegrationInput(r.Context(), i, &in, true); err != nil {
		return err
	}
	if err := a.d.MCP.CreateMCPIntegration(r.Context(), i); err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, mcpIntegrationOut(i))
	return nil
}

// applyMCPIntegrationInput validates in and copies it onto i, sealing the
// headers for i.ID.
func (a *API) applyMCPIntegrationInput(ctx context.Context, i *registry.MCPIntegration, in *mcpIntegrationInput, creating bool) error {
	if in.Name != nil {
		n := strings.TrimSpace(*in.Name)
		if n == "" || len(n) > maxNameLen {
			return httpx.BadRequest("invalid_value", "name", "name: must be 1 to %d characters", maxNameLen)
		}
		i.Name = n
	}
	if !slugPattern.MatchString(i.Slug) {
		return httpx.BadRequest("invalid_value", "slug", "slug: lowercase letters, digits and dashes, at most 255 characters")
	}
	if in.Description != nil {
		if len(*in.Description) > maxMCPDescription {
			return httpx.BadRequest("invalid_value", "description", "description: at most %d bytes", maxMCPDescription)
		}
		i.Description = *in.Description
	}
	oldURL := i.URL
	if in.URL != nil {
		if err := mcpValidURL(*in.URL); err != nil {
			return httpx.BadRequest("invalid_value", "url", "url: %v", err)
		}
		i.URL = *in.URL
	}
	if in.Transport != nil {
		switch *in.Transport {
		case registry.MCPTransportHTTP, registry.MCPTransportSSE:
			i.Transport = *in.Transport
		default:
			return httpx.BadRequest("invalid_value", "transport", "transport: must be %q (streamable HTTP) or %q, got %q",
				registry.MCPTransportHTTP, registry.MCPTransportSSE, *in.Transport)
		}
	}
	if err := a.applyMCPHeaders(i, in, oldURL, creating); err != nil {
		return err
	}
	if err := a.applyMCPSharing(ctx, i, in); err != nil {
		return err
	}
	if in.Tags != nil {
		if len(*in.Tags) > maxMCPTags {
			return httpx.BadRequest("invalid_value", "tags", "tags: at most %d", maxMCPTags)
		}
		for k, v := range *in.Tags {
			if k == "" || len(k) > maxNameLen || len(v) > maxNameLen {
				return httpx.BadRequest("invalid_value", "tags", "tags: keys of 1 to %d characters, values of at most %d", maxNameLen, maxNameLen)
			}
		}
		i.Tags = *in.Tags
	}
	return nil
}

// applyMCPHeaders applies auth_type and headers. Sending headers without
// auth_type implies "headers"; auth_type "none" drops them. Moving the URL
// to another origin needs the headers sent again, so that whoever may edit
// an integration cannot send its stored secrets to a server of their own.
func (a *API) applyMCPHeaders(i *registry.MCPIntegration, in *mcpIntegrationInput, oldURL string, creating bool) error {
	var headers map[string]string
	given := len(in.Headers) > 0
	if given {
		if err := json.Unmarshal(in.Headers, &headers); err != nil {
			return httpx.BadRequest("invalid_type", "headers", "headers: must be an object of header names to string values")
		}
		if err := validMCPHeaders(headers); err != nil {
			return err
		}
	}
	if !creating && !given && len(i.HeaderNames) > 0 && in.URL != nil && !sameOrigin(oldURL, i.URL) &&
		(in.AuthType == nil || *in.AuthType != registry.MCPAuthNone) {
		return httpx.BadRequest("invalid_value", "headers", "headers: must be sent again when url moves to another origin")
	}
	authType := i.AuthType
	switch {
	case in.AuthType != nil:
		authType = *in.AuthType
	case given && len(headers) > 0:
		authType = registry.MCPAuthHeaders
	}
	switch authType {
	case registry.MCPAuthNone:
		if given && len(headers) > 0 {
			return httpx.BadRequest("invalid_value", "headers", "headers: not allowed with auth_type %q", registry.MCPAuthNone)
		}
		i.AuthType, i.HeaderNames, i.SealedHeaders = authType, []string{}, nil
		return nil
	case registry.MCPAuthHeaders:
	default:
		return httpx.BadRequest("invalid_value", "auth_type", "auth_type: must be %q or %q, got %q", registry.MCPAuthNone, registry.MCPAuthHeaders, authType)
	}
	if !given {
		if len(i.HeaderNames) == 0 {
			return httpx.BadRequest("missing_required", "headers", "headers: at least one header is required with auth_type %q", registry.MCPAuthHeaders)
		}
		i.AuthType = authType
		return nil
	}
	if len(headers) == 0 {
		return httpx.BadRequest("missing_required", "headers", "headers: at least one header is required with auth_type %q", registry.MCPAuthHeaders)
	}
	b, err := json.Marshal(headers)
	if err != nil {
		return httpx.Internal(fmt.Errorf("seal MCP headers: %w", err))
	}
	names := make([]string, 0, len(headers))
	for k := range headers {
		names = append(names, http.CanonicalHeaderKey(k))
	}
	slices.Sort(names)
	i.AuthType, i.HeaderNames, i.SealedHeaders = authType, names, a.d.Box.Seal(b, registry.MCPSealAAD(i))
	return nil
}

func validMCPHeaders(headers map[string]string) error {
	if len(headers) > maxMCPHeaders {
		return httpx.BadRequest("invalid_value", "headers", "headers: at most %d", maxMCPHeaders)
	}
	seen := map[string]bool{}
	for k, v := range headers {
		if !isHeaderToken(k) {
			return httpx.BadRequest("invalid_value", "headers", "headers: %q is not a valid header name", k)
		}
		lk := strings.ToLower(k)
		if slices.Contains(mcpReservedHeaders, lk) {
			return httpx.BadRequest("invalid_value", "headers", "headers: %s is set by the MCP transport and cannot be configured", k)
		}
		if seen[lk] {
			return httpx.BadRequest("invalid_value", "headers", "headers: %s is given twice", k)
		}
		seen[lk] = true
		if v == "" || len(v) > maxMCPHeaderValue || strings.ContainsAny(v, "\r\n\x00") {
			return httpx.BadRequest("invalid_value", "headers", "headers: the value of %s must be 1 to %d bytes without line breaks", k, maxMCPHeaderValue)
		}
	}
	return nil
}

// isHeaderToken reports whether s is an HTTP field name (RFC 9110 token).
func isHeaderToken(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	for _, c := range []byte(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// applyMCPSharing applies all_workspaces and workspace_ids (ids or slugs
// of the organisation's workspaces, stored as ids).
func (a *API) applyMCPSharing(ctx context.Context, i *registry.MCPIntegration, in *mcpIntegrationInput) error {
	if in.AllWorkspaces != nil {
		i.AllWorkspaces = *in.AllWorkspaces
	}
	if in.WorkspaceIDs != nil {
		ids := make([]string, 0, len(*in.WorkspaceIDs))
		for _, key := range *in.WorkspaceIDs {
			ws, err := a.d.Tenancy.Workspace(ctx, i.OrganisationID, key)
			if errors.Is(err, httpx.ErrNotFound) {
				return httpx.BadRequest("invalid_value", "workspace_ids", "workspace_ids: workspace %q not found", key)
			}
			if err != nil {
				return err
			}
			if !slices.Contains(ids, ws.ID) {
				ids = append(ids, ws.ID)
			}
		}
		i.WorkspaceIDs = ids
		if in.AllWorkspaces == nil {
			i.AllWorkspaces = false
		}
	}
	if i.AllWorkspaces && len(i.WorkspaceIDs) > 0 {
		return httpx.BadRequest("invalid_value", "workspace_ids", "workspace_ids: must be empty when all_workspaces is true")
	}
	return nil
}

func mcpValidURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(s) > 2048 {
		return fmt.Errorf("must be an absolute http or https URL of at most 2048 characters, got %q", s)
	}
	return nil
}

// sameOrigin reports whether two URLs share scheme and host (with port).
func sameOrigin(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Scheme == ub.Scheme && strings.EqualFold(ua.Host, ub.Host)
}

// readStrict reads a control-plane body into v, rejecting unknown fields.
func readStrict(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := httpx.ReadBody(w, r, 1<<20)
	if err != nil {
		return err
	}
	return httpx.DecodeStrict(body, v)
}

// lookupMCPIntegration finds the integration of the path; a workspace key
// sees only those shared with its workspace (404 otherwise).
func (a *API) lookupMCPIntegration(r *http.Request) (*registry.MCPIntegration, error) {
	p := principal(r)
	i, err := a.d.MCP.MCPIntegration(r.Context(), p.OrganisationID, r.PathValue("slug"))
	if err != nil {
		return nil, err
	}
	if !p.IsOrganisationKey() && !i.SharedWith(p.WorkspaceID) {
		return nil, httpx.NotFound(fmt.Sprintf("MCP integration %q not found", r.PathValue("slug")))
	}
	return i, nil
}

func (a *API) getMCPIntegration(w http.ResponseWriter, r *http.Request) error {
	i, err := a.lookupMCPIntegration(r)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, mcpIntegrationOut(i))
	return nil
}

func (a *API) listMCPIntegrations(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	pg, size, err := page(r)
	if err != nil {
		return err
	}
	list0, total, err := a.d.MCP.ListMCPIntegrations(r.Context(), p.OrganisationID, actorFrom(r).listWorkspace(), pg, size)
	if err != nil {
		return err
	}
	return writeList(w, total, list0, mcpIntegrationOut)
}

func (a *API) updateMCPIntegration(w http.ResponseWriter, r *http.Request) error {
	i, err := a.lookupMCPIntegration(r)
	if err != nil {
		return err
	}
	var in mcpIntegrationInput
	if err := readStrict(w, r, &in); err != nil {
		return err
	}
	if in.Slug != nil && *in.Slug != i.Slug {
		return httpx.BadRequest("invalid_value", "slug", "slug: cannot be changed")
	}
	if err := a.applyMCPIntegrationInput(r.Context(), i, &in, false); err != nil {
		return err
	}
	if err := a.d.MCP.UpdateMCPIntegration(r.Context(), i); err != nil {
		return err
	}
	noteResource(r, i.ID, "")
	httpx.WriteJSON(w, http.StatusOK, mcpIntegrationOut(i))
	return nil
}

func (a *API) deleteMCPIntegration(w http.ResponseWriter, r *http.Request) error {
	i, err := a.lookupMCPIntegration(r)
	if err != nil {
		return err
	}
	if _, err := a.d.MCP.DeleteMCPIntegration(r.Context(), i.OrganisationID, i.ID); err != nil {
		return err
	}
	noteResource(r, i.ID, "")
	httpx.WriteJSON(w, http.StatusOK, deleted{ID: i.ID, Object: "mcp-integration", Deleted: true})
	return nil
}

// mcpServerInput is the body of POST and PUT /v1/mcp-servers.
type mcpServerInput struct {
	Name          *string `json:"name"`
	Slug          *string `json:"slug"`
	Description   *string `json:"description"`
	IntegrationID *string `json:"mcp_integration_id"`
	// WorkspaceID is read by the control wrapper, which resolves it.
	WorkspaceID *string `json:"workspace_id"`
}

type mcpServerView struct {
	Object string `json:"object"`
	*registry.MCPServer
}

func mcpServerOut(s *registry.MCPServer) mcpServerView {
	return mcpServerView{Object: "mcp-server", MCPServer: s}
}

func (a *API) createMCPServer(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	var in mcpServerInput
	if err := readStrict(w, r, &in); err != nil {
		return err
	}
	if in.Name == nil || strings.TrimSpace(*in.Name) == "" {
		return httpx.BadRequest("missing_required", "name", "name: is required")
	}
	if in.IntegrationID == nil || *in.IntegrationID == "" {
		return httpx.BadRequest("missing_required", "mcp_integration_id", "mcp_integration_id: is required")
	}
	now := a.now().UTC()
	// p.WorkspaceID is the workspace the request named, resolved and
	// checked by the control wrapper, else the key's own or the default.
	s := &registry.MCPServer{
		ID: uuid.NewString(), OrganisationID: p.OrganisationID, WorkspaceID: p.WorkspaceID,
		Metadata:  registry.MCPMetadata{SyncStatus: registry.MCPSyncNever, Icons: []registry.MCPIcon{}},
		CreatedAt: now, UpdatedAt: now,
	}
	if in.Slug != nil {
		s.Slug = *in.Slug
	} else {
		s.Slug = newSlug(*in.Name)
	}
	if err := a.applyMCPServerInput(r.Context(), s, &in); err != nil {
		return err
	}
	if err := a.d.MCP.CreateMCPServer(r.Context(), s); err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, mcpServerOut(s))
	return nil
}

func (a *API) applyMCPServerInput(ctx context.Context, s *registry.MCPServer, in *mcpServerInput) error {
	if in.Name != nil {
		n := strings.TrimSpace(*in.Name)
		if n == "" || len(n) > maxNameLen {
			return httpx.BadRequest("invalid_value", "name", "name: must be 1 to %d characters", maxNameLen)
		}
		s.Name = n
	}
	if !slugPattern.MatchString(s.Slug) {
		return httpx.BadRequest("invalid_value", "slug", "slug: lowercase letters, digits and dashes, at most 255 characters")
	}
	if in.Description != nil {
		if len(*in.Description) > maxMCPDescription {
			return httpx.BadRequest("invalid_value", "description", "description: at most %d bytes", maxMCPDescription)
		}
		s.Description = *in.Description
	}
	if in.IntegrationID != nil {
		i, err := a.sharedMCPIntegration(ctx, s.OrganisationID, s.WorkspaceID, *in.IntegrationID)
		if err != nil {
			return err
		}
		if i.ID != s.IntegrationID && s.IntegrationID != "" {
			// Another server's metadata is not this one's.
			s.Metadata = registry.MCPMetadata{SyncStatus: registry.MCPSyncNever, Icons: []registry.MCPIcon{}}
		}
		s.IntegrationID = i.ID
	}
	return nil
}

// sharedMCPIntegration resolves an integration (slug or id) shared with
// workspaceID. One that does not exist and one not shared get the same
// answer, so that a workspace key learns nothing of the others.
func (a *API) sharedMCPIntegration(ctx context.Context, organisationID, workspaceID, key string) (*registry.MCPIntegration, error) {
	i, err := a.d.MCP.MCPIntegration(ctx, organisationID, key)
	if errors.Is(err, httpx.ErrNotFound) || (err == nil && !i.SharedWith(workspaceID)) {
		return nil, httpx.BadRequest("invalid_value", "mcp_integration_id", "mcp_integration_id: no MCP integration %q is shared with this workspace", key)
	}
	return i, err
}

// lookupMCPServer finds the server of the path; a workspace key sees only
// its workspace's (404 otherwise).
func (a *API) lookupMCPServer(r *http.Request) (*registry.MCPServer, error) {
	p := principal(r)
	s, err := a.d.MCP.MCPServer(r.Context(), p.OrganisationID, r.PathValue("slug"))
	if err != nil {
		return nil, err
	}
	if !actorFrom(r).sees(s.WorkspaceID) {
		return nil, httpx.NotFound(fmt.Sprintf("MCP server %q not found", r.PathValue("slug")))
	}
	return s, nil
}

func (a *API) getMCPServer(w http.ResponseWriter, r *http.Request) error {
	s, err := a.lookupMCPServer(r)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, mcpServerOut(s))
	return nil
}

func (a *API) listMCPServers(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	pg, size, err := page(r)
	if err != nil {
		return err
	}
	servers, total, err := a.d.MCP.ListMCPServers(r.Context(), p.OrganisationID, actorFrom(r).listWorkspace(), pg, size)
	if err != nil {
		return err
	}
	return writeList(w, total, servers, mcpServerOut)
}

func (a *API) updateMCPServer(w http.ResponseWriter, r *http.Request) error {
	s, err := a.lookupMCPServer(r)
	if err != nil {
		return err
	}
	var in mcpServerInput
	if err := readStrict(w, r, &in); err != nil {
		return err
	}
	if in.Slug != nil && *in.Slug != s.Slug {
		return httpx.BadRequest("invalid_value", "slug", "slug: cannot be changed")
	}
	if in.WorkspaceID != nil && principal(r).WorkspaceID != s.WorkspaceID {
		return httpx.BadRequest("invalid_value", "workspace_id", "workspace_id: cannot be changed")
	}
	if err := a.applyMCPServerInput(r.Context(), s, &in); err != nil {
		return err
	}
	if err := a.d.MCP.UpdateMCPServer(r.Context(), s); err != nil {
		return err
	}
	noteResource(r, s.ID, s.WorkspaceID)
	httpx.WriteJSON(w, http.StatusOK, mcpServerOut(s))
	return nil
}

func (a *API) deleteMCPServer(w http.ResponseWriter, r *http.Request) error {
	s, err := a.lookupMCPServer(r)
	if err != nil {
		return err
	}
	if _, err := a.d.MCP.DeleteMCPServer(r.Context(), s.OrganisationID, s.ID); err != nil {
		return err
	}
	noteResource(r, s.ID, s.WorkspaceID)
	httpx.WriteJSON(w, http.StatusOK, deleted{ID: s.ID, Object: "mcp-server", Deleted: true})
	return nil
}

// mcpMetadataView is the answer of GET /v1/mcp-servers/{id}/metadata.
type mcpMetadataView struct {
	Object        string `json:"object"`
	ServerID      string `json:"mcp_server_id"`
	IntegrationID string `json:"mcp_integration_id"`
	registry.MCPMetadata
}

// getMCPServerMetadata connects to the server's MCP endpoint, reads its
// metadata, stores the outcome on the server and its integration, and
// answers it. A server that cannot be reached or does not speak MCP is not
// an error of this endpoint: the answer is 200 with sync_status "failed"
// and sync_error saying why, and the fields of the last good sync, if any,
// are kept.
func (a *API) getMCPServerMetadata(w http.ResponseWriter, r *http.Request) error {
	s, err := a.lookupMCPServer(r)
	if err != nil {
		return err
	}
	if a.d.MCPFetcher == nil {
		return httpx.Internal(errors.New("admin: no MCP fetcher configured"))
	}
	i, err := a.d.MCP.MCPIntegration(r.Context(), s.OrganisationID, s.IntegrationID)
	if err != nil {
		return err
	}
	md, err := a.fetchMCPMetadata(r.Context(), i, s)
	if err != nil {
		md = s.Metadata.Failed(a.now().UTC().Truncate(time.Microsecond), err.Error())
	}
	// The fetch has happened: record it even if the client has gone.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
	defer cancel()
	if err := a.d.MCP.RecordMCPSync(ctx, s.OrganisationID, s.ID, md); err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, mcpMetadataView{Object: "mcp-server-metadata", ServerID: s.ID, IntegrationID: i.ID, MCPMetadata: md})
	return nil
}

// fetchMCPMetadata opens the integration's headers and asks the server.
func (a *API) fetchMCPMetadata(ctx context.Context, i *registry.MCPIntegration, s *registry.MCPServer) (registry.MCPMetadata, error) {
	if !i.SharedWith(s.WorkspaceID) {
		return registry.MCPMetadata{}, fmt.Errorf("MCP integration %q is no longer shared with this server's workspace", i.Slug)
	}
	t := registry.MCPTarget{URL: i.URL, Transport: i.Transport}
	if i.AuthType == registry.MCPAuthHeaders && len(i.SealedHeaders) > 0 {
		pt, err := a.d.Box.Open(i.SealedHeaders, registry.MCPSealAAD(i))
		if err != nil {
			a.d.Logger.Error("MCP integration headers cannot be opened", "integration", i.ID, "err", err)
			return registry.MCPMetadata{}, errors.New("the integration's headers cannot be decrypted with this deployment's encryption key")
		}
		if err := json.Unmarshal(pt, &t.Headers); err != nil {
			return registry.MCPMetadata{}, errors.New("the integration's stored headers are unreadable")
		}
	}
	return a.d.MCPFetcher.Fetch(ctx, t)
}
