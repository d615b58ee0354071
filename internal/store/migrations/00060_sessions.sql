-- Console sessions of single sign-on (README "SSO"). Portable SQL under the
-- rules of 00001.
--
-- A session is created when a user logs in through the OIDC issuer. Only
-- the SHA-256 hash of its token is kept, like an API key's; a revoked
-- session (logout) keeps its row until it expires, so that the revocation
-- is not forgotten while the token would still be live; expired rows are
-- deleted at later logins. No foreign keys, as in 00010: the verifier
-- refuses a session whose user has been deleted.

-- +goose Up
CREATE TABLE sessions (
    id              VARCHAR(36)  NOT NULL PRIMARY KEY,
    organisation_id VARCHAR(36)  NOT NULL,
    user_id         VARCHAR(36)  NOT NULL,
    token_hash      VARCHAR(128) NOT NULL,
    created_at      BIGINT       NOT NULL,
    expires_at      BIGINT       NOT NULL,
    revoked_at      BIGINT
);
CREATE UNIQUE INDEX ux_sessions_token ON sessions (token_hash);
CREATE INDEX ix_sessions_user ON sessions (user_id);
CREATE INDEX ix_sessions_expires ON sessions (expires_at);

-- +goose Down
DROP TABLE sessions;
