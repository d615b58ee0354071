package app

import (
	"github.com/ai-gateway/gateway/internal/admin"
	"github.com/ai-gateway/gateway/internal/mcp"
)

// newMCPFetcher is what the control plane uses to read an MCP server's
// metadata (GET /v1/mcp-servers/{id}/metadata): package mcp, with the
// gateway's version as the client's and the default 10 s bound.
//
// The URL it connects to is one an administrator stored on an MCP
// integration, which may name any host the gateway can reach, the
// loopback and private networks included; only keys allowed to create MCP
// integrations (organisation admins) can choose it.
func newMCPFetcher() admin.MCPFetcher {
	return &mcp.Fetcher{Version: Version, Timeout: mcp.DefaultTimeout}
}
