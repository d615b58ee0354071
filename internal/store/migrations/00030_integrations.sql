-- Integrations (organisation-level stored provider credentials) and the
-- workspace providers that use them (API.md §6 "Integrations, providers").
-- Portable SQL under the rules of 00001; no foreign keys, as in 00010 (the
-- MySQL follow-up 00031 sets the collation after this runs). The store
-- keeps the child tables consistent with their integration.
--
-- integration_models is an integration's model allow-list and
-- integration_workspaces the workspaces it is shared with when
-- integrations.global_access is 0. catalog_tags holds the custom tags of
-- integrations and providers (the rows' tags column keeps a JSON copy for
-- reading) so that list calls can filter on them with plain SQL.

-- +goose Up
CREATE TABLE integrations (
    id              VARCHAR(36)  NOT NULL PRIMARY KEY,
    organisation_id VARCHAR(36)  NOT NULL,
    slug            VARCHAR(255) NOT NULL,
    name            VARCHAR(255) NOT NULL,
    description     TEXT         NOT NULL,
    ai_provider     VARCHAR(64)  NOT NULL,
    sealed_key      TEXT         NOT NULL,
    custom_host     TEXT         NOT NULL,
    options         TEXT,
    tags            TEXT,
    rate_limits     TEXT,
    usage_limits    TEXT,
    status          VARCHAR(32)  NOT NULL,
    global_access   INTEGER      NOT NULL,
    created_at      BIGINT       NOT NULL,
    updated_at      BIGINT       NOT NULL
);
CREATE UNIQUE INDEX ux_integrations_org_slug ON integrations (organisation_id, slug);
CREATE INDEX ix_integrations_org_created ON integrations (organisation_id, created_at);

CREATE TABLE integration_models (
    integration_id VARCHAR(36)  NOT NULL,
    model          VARCHAR(255) NOT NULL,
    enabled        INTEGER      NOT NULL,
    sort_order     INTEGER      NOT NULL,
    PRIMARY KEY (integration_id, model)
);

CREATE TABLE integration_workspaces (
    integration_id VARCHAR(36) NOT NULL,
    workspace_id   VARCHAR(36) NOT NULL,
    PRIMARY KEY (integration_id, workspace_id)
);
CREATE INDEX ix_integration_workspaces_ws ON integration_workspaces (workspace_id);

CREATE TABLE providers (
    id              VARCHAR(36)  NOT NULL PRIMARY KEY,
    organisation_id VARCHAR(36)  NOT NULL,
    workspace_id    VARCHAR(36)  NOT NULL,
    integration_id  VARCHAR(36)  NOT NULL,
    slug            VARCHAR(255) NOT NULL,
    name            VARCHAR(255) NOT NULL,
    note            TEXT         NOT NULL,
    tags            TEXT,
    rate_limits     TEXT,
    usage_limits    TEXT,
    status          VARCHAR(32)  NOT NULL,
    created_at      BIGINT       NOT NULL,
    updated_at      BIGINT       NOT NULL
);
CREATE UNIQUE INDEX ux_providers_ws_slug ON providers (workspace_id, slug);
CREATE INDEX ix_providers_org_created ON providers (organisation_id, created_at);
CREATE INDEX ix_providers_integration ON providers (integration_id);

CREATE TABLE catalog_tags (
    resource_id VARCHAR(36)  NOT NULL,
    tag_key     VARCHAR(128) NOT NULL,
    tag_value   VARCHAR(255) NOT NULL,
    PRIMARY KEY (resource_id, tag_key)
);
CREATE INDEX ix_catalog_tags_pair ON catalog_tags (tag_key, tag_value);

-- +goose Down
DROP TABLE catalog_tags;
DROP TABLE providers;
DROP TABLE integration_workspaces;
DROP TABLE integration_models;
DROP TABLE integrations;
