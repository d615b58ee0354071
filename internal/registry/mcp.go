package registry

import "time"

// MCP transports an integration's server speaks (API.md §6 "MCP").
const (
	// MCPTransportHTTP is the streamable HTTP transport of the MCP
	// specification, the default.
	MCPTransportHTTP = "http"
	// MCPTransportSSE is the older HTTP+SSE transport (2024-11-05).
	MCPTransportSSE = "sse"
)

// How the gateway authenticates to an integration's server.
const (
	MCPAuthNone    = "none"
	MCPAuthHeaders = "headers"
)

// Sync statuses of MCP metadata.
const (
	// MCPSyncNever: the metadata was never fetched.
	MCPSyncNever = "never"
	// MCPSyncSynced: the last fetch succeeded.
	MCPSyncSynced = "synced"
	// MCPSyncFailed: the last fetch failed; SyncError says why, and the
	// fields of the last successful fetch, if any, are kept.
	MCPSyncFailed = "failed"
)

// MCPIntegration is an organisation-level MCP server endpoint: where the
// server is, how to reach it and which workspaces may use it. The header
// values it sends are sealed in SealedHeaders and never leave the gateway.
type MCPIntegration struct {
	ID             string `json:"id"`
	OrganisationID string `json:"organisation_id"`
	Slug           string `json:"slug"`
	Name           string `json:"name"`
	Description    string `json:"description"`
	// URL is the MCP server's endpoint (http or https).
	URL       string `json:"url"`
	Transport string `json:"transport"`
	AuthType  string `json:"auth_type"`
	// HeaderNames are the names of the sealed headers, sorted; the values
	// are in SealedHeaders only.
	HeaderNames   []string `json:"header_names"`
	SealedHeaders []byte   `json:"-"`
	// AllWorkspaces shares the integration with every workspace of the
	// organisation; otherwise WorkspaceIDs lists those it is shared with.
	AllWorkspaces bool              `json:"all_workspaces"`
	WorkspaceIDs  []string          `json:"workspace_ids"`
	Tags          map[string]string `json:"tags,omitempty"`
	// Metadata is the last metadata fetched through any of its servers.
	Metadata  MCPMetadata `json:"metadata"`
	CreatedAt time.Time   `json:"created_at"`
	UpdatedAt time.Time   `json:"last_updated_at"`
}

// SharedWith reports whether workspaceID may use the integration.
func (i *MCPIntegration) SharedWith(workspaceID string) bool {
	if i.AllWorkspaces {
		return true
	}
	for _, id := range i.WorkspaceIDs {
		if id == workspaceID {
			return true
		}
	}
	return false
}

// MCPSealAAD binds an integration's sealed headers to its row, so that a
// sealed value copied to another row does not open.
func MCPSealAAD(i *MCPIntegration) []byte { return []byte("mcp-integration:" + i.ID) }

// MCPServer is a workspace's use of an MCP integration.
type MCPServer struct {
	ID             string `json:"id"`
	OrganisationID string `json:"organisation_id"`
	WorkspaceID    string `json:"workspace_id"`
	Slug           string `json:"slug"`
	Name           string `json:"name"`
	Description    string `json:"description"`
	// IntegrationID is the id of the MCP integration it uses.
	IntegrationID string `json:"mcp_integration_id"`
	// Metadata is what the last fetch of GET /v1/mcp-servers/{id}/metadata
	// found.
	Metadata  MCPMetadata `json:"metadata"`
	CreatedAt time.Time   `json:"created_at"`
	UpdatedAt time.Time   `json:"last_updated_at"`
}

// MCPMetadata is what an MCP server says about itself when a client
// initialises a session, and how the last attempt to ask went.
type MCPMetadata struct {
	Title           string             `json:"title"`
	Description     string             `json:"description"`
	Icons           []MCPIcon          `json:"icons"`
	ServerName      string             `json:"server_name"`
	ServerVersion   string             `json:"server_version"`
	ProtocolVersion string             `json:"protocol_version"`
	Capabilities    MCPCapabilityFlags `json:"capability_flags"`
	SyncStatus      string             `json:"sync_status"`
	LastSyncedAt    *time.Time         `json:"last_synced_at"`
	SyncError       string             `json:"sync_error"`
}

// MCPIcon is an icon an MCP server declares for itself.
type MCPIcon struct {
	Src      string   `json:"src"`
	MIMEType string   `json:"mime_type,omitempty"`
	Sizes    []string `json:"sizes,omitempty"`
	Theme    string   `json:"theme,omitempty"`
}

// MCPCapabilityFlags are the capabilities an MCP server declared.
type MCPCapabilityFlags struct {
	Tools                bool `json:"tools"`
	ToolsListChanged     bool `json:"tools_list_changed"`
	Prompts              bool `json:"prompts"`
	PromptsListChanged   bool `json:"prompts_list_changed"`
	Resources            bool `json:"resources"`
	ResourcesSubscribe   bool `json:"resources_subscribe"`
	ResourcesListChanged bool `json:"resources_list_changed"`
	Logging              bool `json:"logging"`
	Completions          bool `json:"completions"`
	Experimental         bool `json:"experimental"`
}

// MCPTarget is what it takes to reach an integration's server.
type MCPTarget struct {
	URL       string
	Transport string
	// Headers are sent with every request to the server's origin.
	Headers map[string]string
}

// Failed returns prev, the metadata stored before an attempt, marked as a
// failed sync at when with reason: the fields of the last good fetch are
// kept so that lists still show what the server was.
func (prev MCPMetadata) Failed(when time.Time, reason string) MCPMetadata {
	prev.SyncStatus = MCPSyncFailed
	prev.LastSyncedAt = &when
	prev.SyncError = reason
	return prev
}
