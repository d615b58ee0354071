-- The control plane: organisation and workspace settings, API-key limits,
-- defaults and rotation, invites and the audit log (SPEC.md
-- "Administration"; API.md §6). Portable SQL under the rules of 00001.
--
-- The new tables have no foreign keys: on MySQL a foreign key needs
-- the same collation on both sides, which a new table only gets from the
-- MySQL follow-up migration that runs after this one; and an audit record
-- must outlive whatever it names. The store keeps invites and rotations
-- consistent itself.

-- +goose Up
ALTER TABLE organisations ADD COLUMN settings TEXT;

ALTER TABLE workspaces ADD COLUMN description TEXT;
ALTER TABLE workspaces ADD COLUMN settings TEXT;
ALTER TABLE workspaces ADD COLUMN usage_limits TEXT;
ALTER TABLE workspaces ADD COLUMN rate_limits TEXT;

ALTER TABLE api_keys ADD COLUMN rate_limits TEXT;
ALTER TABLE api_keys ADD COLUMN usage_limits TEXT;
ALTER TABLE api_keys ADD COLUMN alert_emails TEXT;

-- api_key_rotations keeps the hash a rotated key had, which still
-- authenticates as that key until expires_at (API.md §2 "Expiry and
-- rotation"). It is a table of its own, not columns of api_keys, because an
-- index on an added column cannot be dropped portably (SQLite refuses to
-- drop an indexed column; MySQL's DROP INDEX names the table).
CREATE TABLE api_key_rotations (
    key_hash        VARCHAR(128) NOT NULL PRIMARY KEY,
    api_key_id      VARCHAR(36)  NOT NULL,
    expires_at      BIGINT       NOT NULL,
    created_at      BIGINT       NOT NULL
);
CREATE INDEX ix_api_key_rotations_key ON api_key_rotations (api_key_id);

CREATE TABLE invites (
    id              VARCHAR(36)  NOT NULL PRIMARY KEY,
    organisation_id VARCHAR(36)  NOT NULL,
    email           VARCHAR(255) NOT NULL,
    role            VARCHAR(32)  NOT NULL,
    workspaces      TEXT         NOT NULL,
    status          VARCHAR(32)  NOT NULL,
    invited_by      VARCHAR(36)  NOT NULL,
    expires_at      BIGINT       NOT NULL,
    accepted_at     BIGINT,
    last_sent_at    BIGINT       NOT NULL,
    resend_count    INTEGER      NOT NULL,
    created_at      BIGINT       NOT NULL,
    updated_at      BIGINT       NOT NULL
);
CREATE INDEX ix_invites_org_created ON invites (organisation_id, created_at);
CREATE INDEX ix_invites_email ON invites (email, status);

CREATE TABLE audit_logs (
    id              VARCHAR(36)  NOT NULL PRIMARY KEY,
    organisation_id VARCHAR(36)  NOT NULL,
    created_at      BIGINT       NOT NULL,
    actor_type      VARCHAR(32)  NOT NULL,
    actor_id        VARCHAR(36)  NOT NULL,
    api_key_id      VARCHAR(36)  NOT NULL,
    method          VARCHAR(16)  NOT NULL,
    uri             TEXT         NOT NULL,
    action          VARCHAR(64)  NOT NULL,
    resource_type   VARCHAR(64)  NOT NULL,
    resource_id     VARCHAR(255) NOT NULL,
    workspace_id    VARCHAR(36)  NOT NULL,
    status_code     INTEGER      NOT NULL,
    client_ip       VARCHAR(64)  NOT NULL,
    request_id      VARCHAR(64)  NOT NULL,
    request_body    TEXT         NOT NULL
);
CREATE INDEX ix_audit_logs_org_created ON audit_logs (organisation_id, created_at);
CREATE INDEX ix_audit_logs_actor ON audit_logs (actor_id, created_at);

-- +goose Down
DROP TABLE audit_logs;
DROP TABLE invites;
DROP TABLE api_key_rotations;
ALTER TABLE api_keys DROP COLUMN alert_emails;
ALTER TABLE api_keys DROP COLUMN usage_limits;
ALTER TABLE api_keys DROP COLUMN rate_limits;
ALTER TABLE workspaces DROP COLUMN rate_limits;
ALTER TABLE workspaces DROP COLUMN usage_limits;
ALTER TABLE workspaces DROP COLUMN settings;
ALTER TABLE workspaces DROP COLUMN description;
ALTER TABLE organisations DROP COLUMN settings;
