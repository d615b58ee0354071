// Package registry holds the record types of the organisation's catalog of
// things the gateway reaches: integrations (stored provider credentials)
// and the workspace providers that use them, gateway deployments, and MCP
// integrations and servers. The store persists them, the control plane
// serves them, and the data plane resolves them.
//
// registry is a leaf: it imports no other internal package.
package registry
