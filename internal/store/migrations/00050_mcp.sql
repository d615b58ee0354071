-- MCP integrations and servers (API.md §6 "MCP"). Portable SQL under the
-- rules of 00001.
--
-- mcp_integrations are organisation-level: an MCP server's endpoint, its
-- transport, the headers sent to it (sealed with the encryption key, bound
-- to the row id, base64 in sealed_headers; their names in clear in
-- header_names), and the workspaces it is shared with (all_workspaces, or
-- the JSON array workspace_ids). mcp_servers are a workspace's use of one.
--
-- metadata holds, as JSON, what the last fetch of the server's metadata
-- found (GET /v1/mcp-servers/{id}/metadata); NULL means never fetched.
-- An integration keeps the last metadata fetched through any of its
-- servers.
--
-- No foreign keys, as in 00010 (collations on MySQL): the store refuses to
-- delete an integration that servers still use.

-- +goose Up
CREATE TABLE mcp_integrations (
    id              VARCHAR(36)  NOT NULL PRIMARY KEY,
    organisation_id VARCHAR(36)  NOT NULL,
    slug            VARCHAR(255) NOT NULL,
    name            VARCHAR(255) NOT NULL,
    description     TEXT         NOT NULL,
    url             TEXT         NOT NULL,
    transport       VARCHAR(16)  NOT NULL,
    auth_type       VARCHAR(16)  NOT NULL,
    sealed_headers  TEXT         NOT NULL,
    header_names    TEXT,
    all_workspaces  INTEGER      NOT NULL,
    workspace_ids   TEXT,
    tags            TEXT,
    metadata        TEXT,
    created_at      BIGINT       NOT NULL,
    updated_at      BIGINT       NOT NULL
);
CREATE UNIQUE INDEX ux_mcp_integrations_org_slug ON mcp_integrations (organisation_id, slug);
CREATE INDEX ix_mcp_integrations_org_created ON mcp_integrations (organisation_id, created_at);

CREATE TABLE mcp_servers (
    id                 VARCHAR(36)  NOT NULL PRIMARY KEY,
    organisation_id    VARCHAR(36)  NOT NULL,
    workspace_id       VARCHAR(36)  NOT NULL,
    slug               VARCHAR(255) NOT NULL,
    name               VARCHAR(255) NOT NULL,
    description        TEXT         NOT NULL,
    mcp_integration_id VARCHAR(36)  NOT NULL,
    metadata           TEXT,
    created_at         BIGINT       NOT NULL,
    updated_at         BIGINT       NOT NULL
);
CREATE UNIQUE INDEX ux_mcp_servers_org_slug ON mcp_servers (organisation_id, slug);
CREATE INDEX ix_mcp_servers_org_created ON mcp_servers (organisation_id, created_at);
CREATE INDEX ix_mcp_servers_ws_created ON mcp_servers (workspace_id, created_at);
CREATE INDEX ix_mcp_servers_integration ON mcp_servers (mcp_integration_id);

-- +goose Down
DROP TABLE mcp_servers;
DROP TABLE mcp_integrations;
