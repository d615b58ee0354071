-- Saved routing configs (API.md §4, §6 "Configs"). Portable SQL under the
-- rules of 00001.
--
-- configs holds one row per config with its latest version; every version,
-- the latest included, is a row of config_versions (PUT makes a new one,
-- GET /v1/configs/{slug}/versions lists them). DELETE removes a config and
-- its versions (hard delete): requests naming it then fail as for an
-- unknown config, and its slug may be taken again.
--
-- No foreign keys, as in 00010: on MySQL a foreign key needs the same
-- collation on both sides, which a new table only gets from the MySQL
-- follow-up (00021) that runs after this one. The store deletes a config's
-- versions with it.

-- +goose Up
CREATE TABLE configs (
    id              VARCHAR(36)  NOT NULL PRIMARY KEY,
    organisation_id VARCHAR(36)  NOT NULL,
    workspace_id    VARCHAR(36)  NOT NULL,
    slug            VARCHAR(255) NOT NULL,
    name            VARCHAR(255) NOT NULL,
    version         INTEGER      NOT NULL,
    version_id      VARCHAR(36)  NOT NULL,
    config          TEXT         NOT NULL,
    created_at      BIGINT       NOT NULL,
    updated_at      BIGINT       NOT NULL
);
CREATE UNIQUE INDEX ux_configs_org_slug ON configs (organisation_id, slug);
CREATE INDEX ix_configs_org_created ON configs (organisation_id, created_at);
CREATE INDEX ix_configs_ws_created ON configs (workspace_id, created_at);

CREATE TABLE config_versions (
    id         VARCHAR(36)  NOT NULL PRIMARY KEY,
    config_id  VARCHAR(36)  NOT NULL,
    version    INTEGER      NOT NULL,
    name       VARCHAR(255) NOT NULL,
    config     TEXT         NOT NULL,
    created_at BIGINT       NOT NULL
);
CREATE UNIQUE INDEX ux_config_versions_config_version ON config_versions (config_id, version);

-- +goose Down
DROP TABLE config_versions;
DROP TABLE configs;
