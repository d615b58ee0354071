-- Gateway deployments (API.md §6 "Deployments"). Portable SQL under the
-- rules of 00001.
--
-- config_ref names a saved config by slug; config holds an inline config
-- (sealed by the control plane; "" for none). workspace_ids is a JSON array
-- of workspace ids ("[]": every workspace) and limits a JSON object with
-- rate_limits and usage_limits. No foreign keys, as in 00010.

-- +goose Up
CREATE TABLE deployments (
    id              VARCHAR(36)  NOT NULL PRIMARY KEY,
    organisation_id VARCHAR(36)  NOT NULL,
    slug            VARCHAR(255) NOT NULL,
    name            VARCHAR(255) NOT NULL,
    description     TEXT         NOT NULL,
    type            VARCHAR(32)  NOT NULL,
    config_ref      VARCHAR(255) NOT NULL,
    config          TEXT         NOT NULL,
    workspace_ids   TEXT         NOT NULL,
    limits          TEXT         NOT NULL,
    created_at      BIGINT       NOT NULL,
    updated_at      BIGINT       NOT NULL
);
CREATE UNIQUE INDEX ux_deployments_org_slug ON deployments (organisation_id, slug);
CREATE INDEX ix_deployments_org_created ON deployments (organisation_id, created_at);

-- +goose Down
DROP TABLE deployments;
