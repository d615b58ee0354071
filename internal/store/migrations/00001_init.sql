-- The first schema of the gateway: tenancy, keys and request logs.
--
-- Written once for SQLite, PostgreSQL and MySQL/MariaDB, so only types and
-- syntax all three accept appear here:
--   * ids are UUID strings made in Go: VARCHAR(36);
--   * timestamps are BIGINT unix microseconds, UTC;
--   * booleans are INTEGER 0/1;
--   * JSON is TEXT (no JSON operators in queries);
--   * binary values (virtual_keys.sealed_key) are TEXT holding standard base64,
--     because BLOB (SQLite, MySQL) and BYTEA (PostgreSQL) have no common name;
--   * every column that is indexed is a VARCHAR, because MySQL cannot index
--     TEXT without a prefix length; the store clips request-log values to
--     these widths so that no dialect rejects a batch;
--   * foreign keys are table constraints, because MySQL ignores the inline
--     column REFERENCES form;
--   * "key" is a reserved word in MySQL, hence meta_key / meta_value.

-- +goose Up
CREATE TABLE organisations (
    id         VARCHAR(36)  NOT NULL PRIMARY KEY,
    name       VARCHAR(255) NOT NULL,
    created_at BIGINT       NOT NULL,
    updated_at BIGINT       NOT NULL
);

CREATE TABLE workspaces (
    id              VARCHAR(36)  NOT NULL PRIMARY KEY,
    organisation_id VARCHAR(36)  NOT NULL,
    slug            VARCHAR(255) NOT NULL,
    name            VARCHAR(255) NOT NULL,
    is_default      INTEGER      NOT NULL,
    created_at      BIGINT       NOT NULL,
    updated_at      BIGINT       NOT NULL,
    CONSTRAINT fk_workspaces_org FOREIGN KEY (organisation_id) REFERENCES organisations (id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX ux_workspaces_slug ON workspaces (slug);
CREATE INDEX ix_workspaces_org ON workspaces (organisation_id, is_default);

CREATE TABLE users (
    id              VARCHAR(36)  NOT NULL PRIMARY KEY,
    organisation_id VARCHAR(36)  NOT NULL,
    email           VARCHAR(255) NOT NULL,
    name            VARCHAR(255) NOT NULL,
    role            VARCHAR(32)  NOT NULL,
    created_at      BIGINT       NOT NULL,
    updated_at      BIGINT       NOT NULL,
    CONSTRAINT fk_users_org FOREIGN KEY (organisation_id) REFERENCES organisations (id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX ux_users_email ON users (email);
CREATE INDEX ix_users_org ON users (organisation_id, role);

CREATE TABLE workspace_members (
    workspace_id VARCHAR(36) NOT NULL,
    user_id      VARCHAR(36) NOT NULL,
    role         VARCHAR(32) NOT NULL,
    created_at   BIGINT      NOT NULL,
    PRIMARY KEY (workspace_id, user_id),
    CONSTRAINT fk_workspace_members_ws FOREIGN KEY (workspace_id) REFERENCES workspaces (id) ON DELETE CASCADE,
    CONSTRAINT fk_workspace_members_user FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
);
CREATE INDEX ix_workspace_members_user ON workspace_members (user_id);

CREATE TABLE api_keys (
    id              VARCHAR(36)  NOT NULL PRIMARY KEY,
    organisation_id VARCHAR(36)  NOT NULL,
    workspace_id    VARCHAR(36),
    user_id         VARCHAR(36),
    name            VARCHAR(255) NOT NULL,
    description     TEXT         NOT NULL,
    type            VARCHAR(32)  NOT NULL,
    subtype         VARCHAR(32)  NOT NULL,
    key_hash        VARCHAR(128) NOT NULL,
    key_mask        VARCHAR(64)  NOT NULL,
    scopes          TEXT         NOT NULL,
    status          VARCHAR(32)  NOT NULL,
    defaults        TEXT,
    expires_at      BIGINT,
    created_at      BIGINT       NOT NULL,
    updated_at      BIGINT       NOT NULL,
    CONSTRAINT fk_api_keys_org FOREIGN KEY (organisation_id) REFERENCES organisations (id) ON DELETE CASCADE,
    CONSTRAINT fk_api_keys_ws FOREIGN KEY (workspace_id) REFERENCES workspaces (id) ON DELETE CASCADE,
    CONSTRAINT fk_api_keys_user FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX ux_api_keys_key_hash ON api_keys (key_hash);
CREATE INDEX ix_api_keys_org_created ON api_keys (organisation_id, created_at);
CREATE INDEX ix_api_keys_ws ON api_keys (workspace_id);
CREATE INDEX ix_api_keys_user ON api_keys (user_id);

CREATE TABLE virtual_keys (
    id              VARCHAR(36)  NOT NULL PRIMARY KEY,
    organisation_id VARCHAR(36)  NOT NULL,
    workspace_id    VARCHAR(36)  NOT NULL,
    slug            VARCHAR(255) NOT NULL,
    name            VARCHAR(255) NOT NULL,
    note            TEXT         NOT NULL,
    provider        VARCHAR(255) NOT NULL,
    -- sealed_key is the AES-256-GCM ciphertext in standard base64.
    sealed_key      TEXT         NOT NULL,
    custom_host     TEXT         NOT NULL,
    options         TEXT,
    usage_limits    TEXT,
    rate_limits     TEXT,
    status          VARCHAR(32)  NOT NULL,
    expires_at      BIGINT,
    created_at      BIGINT       NOT NULL,
    updated_at      BIGINT       NOT NULL,
    CONSTRAINT fk_virtual_keys_org FOREIGN KEY (organisation_id) REFERENCES organisations (id) ON DELETE CASCADE,
    CONSTRAINT fk_virtual_keys_ws FOREIGN KEY (workspace_id) REFERENCES workspaces (id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX ux_virtual_keys_org_slug ON virtual_keys (organisation_id, slug);
CREATE INDEX ix_virtual_keys_org_created ON virtual_keys (organisation_id, created_at);
CREATE INDEX ix_virtual_keys_ws_created ON virtual_keys (workspace_id, created_at);

-- request_logs has no foreign keys: the log writer must never fail a batch
-- because of the control plane (a deleted workspace, an external record).
CREATE TABLE request_logs (
    id                     VARCHAR(36)  NOT NULL PRIMARY KEY,
    organisation_id        VARCHAR(36)  NOT NULL,
    workspace_id           VARCHAR(36)  NOT NULL,
    api_key_id             VARCHAR(36)  NOT NULL,
    virtual_key            VARCHAR(255) NOT NULL,
    config                 TEXT         NOT NULL,
    trace_id               VARCHAR(255) NOT NULL,
    span_id                VARCHAR(255) NOT NULL,
    parent_span_id         VARCHAR(255) NOT NULL,
    span_name              TEXT         NOT NULL,
    metadata               TEXT         NOT NULL,
    provider               VARCHAR(255) NOT NULL,
    model                  VARCHAR(255) NOT NULL,
    model_served           VARCHAR(255) NOT NULL,
    request_path           TEXT         NOT NULL,
    method                 VARCHAR(16)  NOT NULL,
    status_code            INTEGER      NOT NULL,
    is_success             INTEGER      NOT NULL,
    is_streaming           INTEGER      NOT NULL,
    error_message          TEXT         NOT NULL,
    latency_us             BIGINT       NOT NULL,
    upstream_latency_us    BIGINT       NOT NULL,
    overhead_us            BIGINT       NOT NULL,
    ttft_us                BIGINT       NOT NULL,
    prompt_tokens          BIGINT       NOT NULL,
    completion_tokens      BIGINT       NOT NULL,
    total_tokens           BIGINT       NOT NULL,
    cached_tokens          BIGINT       NOT NULL,
    reasoning_tokens       BIGINT       NOT NULL,
    cost                   DOUBLE PRECISION NOT NULL,
    cache_status           VARCHAR(32)  NOT NULL,
    retry_count            INTEGER      NOT NULL,
    last_used_option_index VARCHAR(255) NOT NULL,
    request_body           TEXT         NOT NULL,
    response_body          TEXT         NOT NULL,
    created_at             BIGINT       NOT NULL
);
CREATE INDEX ix_request_logs_org_created ON request_logs (organisation_id, created_at);
CREATE INDEX ix_request_logs_trace ON request_logs (trace_id);
CREATE INDEX ix_request_logs_ws_created ON request_logs (workspace_id, created_at);

-- request_log_metadata repeats request_logs.metadata as rows so that the
-- metadata filters of GET /v1/logs are plain SQL on every dialect. The widths
-- keep the (meta_key, meta_value) index within MySQL's 3072-byte limit.
CREATE TABLE request_log_metadata (
    log_id     VARCHAR(36)  NOT NULL,
    meta_key   VARCHAR(255) NOT NULL,
    meta_value VARCHAR(512) NOT NULL,
    PRIMARY KEY (log_id, meta_key),
    CONSTRAINT fk_request_log_metadata_log FOREIGN KEY (log_id) REFERENCES request_logs (id) ON DELETE CASCADE
);
CREATE INDEX ix_request_log_metadata_kv ON request_log_metadata (meta_key, meta_value);

-- +goose Down
DROP TABLE request_log_metadata;
DROP TABLE request_logs;
DROP TABLE virtual_keys;
DROP TABLE api_keys;
DROP TABLE workspace_members;
DROP TABLE users;
DROP TABLE workspaces;
DROP TABLE organisations;
