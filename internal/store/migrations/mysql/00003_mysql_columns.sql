-- MySQL/MariaDB only: this directory is merged with the portable migrations
-- for that dialect, so its versions are never used by a portable file (see
-- migrations.go).
--
-- 1. Every table gets utf8mb4 with a binary collation, whatever the
--    database's default. The defaults of MySQL and MariaDB are case- and
--    accent-insensitive: "Team" and "team" would be one slug, one metadata
--    filter value and one primary key of request_log_metadata, so a record
--    with both keys would fail its whole batch. SQLite and PostgreSQL
--    compare bytes; so does MySQL with a binary collation. The collation is
--    also NO PAD where the server has one (utf8mb4_nopad_bin on MariaDB,
--    utf8mb4_0900_bin on MySQL 8), because utf8mb4_bin still ignores
--    trailing spaces ("a" = "a "). Only MySQL 5.7 lacks both and falls back
--    to utf8mb4_bin. The name is chosen at run time, hence the prepared
--    statements.
-- 2. MySQL's TEXT holds only 65,535 bytes, less than the 64 KiB body the
--    gateway stores once multi-byte characters count. The free-text columns
--    of request_logs become MEDIUMTEXT (16 MiB); the store clips to that.
--
-- MySQL will not change the collation of a column that a foreign key links,
-- so the foreign keys are dropped first and recreated, as 00001 made them,
-- at the end. MySQL support starts with this migration, so the tables are
-- still empty when it runs and none of this rebuilds any data.

-- +goose Up
ALTER TABLE workspaces DROP FOREIGN KEY fk_workspaces_org;
ALTER TABLE users DROP FOREIGN KEY fk_users_org;
ALTER TABLE workspace_members DROP FOREIGN KEY fk_workspace_members_ws, DROP FOREIGN KEY fk_workspace_members_user;
ALTER TABLE api_keys DROP FOREIGN KEY fk_api_keys_org, DROP FOREIGN KEY fk_api_keys_ws, DROP FOREIGN KEY fk_api_keys_user;
ALTER TABLE virtual_keys DROP FOREIGN KEY fk_virtual_keys_org, DROP FOREIGN KEY fk_virtual_keys_ws;
ALTER TABLE request_log_metadata DROP FOREIGN KEY fk_request_log_metadata_log;

SET @gateway_collation = (SELECT COLLATION_NAME FROM information_schema.COLLATIONS
    WHERE COLLATION_NAME IN ('utf8mb4_nopad_bin', 'utf8mb4_0900_bin', 'utf8mb4_bin')
    ORDER BY FIELD(COLLATION_NAME, 'utf8mb4_nopad_bin', 'utf8mb4_0900_bin', 'utf8mb4_bin') LIMIT 1);
SET @gateway_sql = CONCAT('ALTER TABLE organisations CONVERT TO CHARACTER SET utf8mb4 COLLATE ', @gateway_collation);
PREPARE gateway_stmt FROM @gateway_sql;
EXECUTE gateway_stmt;
DEALLOCATE PREPARE gateway_stmt;
SET @gateway_sql = CONCAT('ALTER TABLE workspaces CONVERT TO CHARACTER SET utf8mb4 COLLATE ', @gateway_collation);
PREPARE gateway_stmt FROM @gateway_sql;
EXECUTE gateway_stmt;
DEALLOCATE PREPARE gateway_stmt;
SET @gateway_sql = CONCAT('ALTER TABLE users CONVERT TO CHARACTER SET utf8mb4 COLLATE ', @gateway_collation);
PREPARE gateway_stmt FROM @gateway_sql;
EXECUTE gateway_stmt;
DEALLOCATE PREPARE gateway_stmt;
SET @gateway_sql = CONCAT('ALTER TABLE workspace_members CONVERT TO CHARACTER SET utf8mb4 COLLATE ', @gateway_collation);
PREPARE gateway_stmt FROM @gateway_sql;
EXECUTE gateway_stmt;
DEALLOCATE PREPARE gateway_stmt;
SET @gateway_sql = CONCAT('ALTER TABLE api_keys CONVERT TO CHARACTER SET utf8mb4 COLLATE ', @gateway_collation);
PREPARE gateway_stmt FROM @gateway_sql;
EXECUTE gateway_stmt;
DEALLOCATE PREPARE gateway_stmt;
SET @gateway_sql = CONCAT('ALTER TABLE virtual_keys CONVERT TO CHARACTER SET utf8mb4 COLLATE ', @gateway_collation);
PREPARE gateway_stmt FROM @gateway_sql;
EXECUTE gateway_stmt;
DEALLOCATE PREPARE gateway_stmt;
SET @gateway_sql = CONCAT('ALTER TABLE request_logs CONVERT TO CHARACTER SET utf8mb4 COLLATE ', @gateway_collation);
PREPARE gateway_stmt FROM @gateway_sql;
EXECUTE gateway_stmt;
DEALLOCATE PREPARE gateway_stmt;
SET @gateway_sql = CONCAT('ALTER TABLE request_log_metadata CONVERT TO CHARACTER SET utf8mb4 COLLATE ', @gateway_collation);
PREPARE gateway_stmt FROM @gateway_sql;
EXECUTE gateway_stmt;
DEALLOCATE PREPARE gateway_stmt;

ALTER TABLE request_logs
    MODIFY config        MEDIUMTEXT NOT NULL,
    MODIFY span_name     MEDIUMTEXT NOT NULL,
    MODIFY metadata      MEDIUMTEXT NOT NULL,
    MODIFY request_path  MEDIUMTEXT NOT NULL,
    MODIFY error_message MEDIUMTEXT NOT NULL,
    MODIFY request_body  MEDIUMTEXT NOT NULL,
    MODIFY response_body MEDIUMTEXT NOT NULL;

ALTER TABLE workspaces
    ADD CONSTRAINT fk_workspaces_org FOREIGN KEY (organisation_id) REFERENCES organisations (id) ON DELETE CASCADE;
ALTER TABLE users
    ADD CONSTRAINT fk_users_org FOREIGN KEY (organisation_id) REFERENCES organisations (id) ON DELETE CASCADE;
ALTER TABLE workspace_members
    ADD CONSTRAINT fk_workspace_members_ws FOREIGN KEY (workspace_id) REFERENCES workspaces (id) ON DELETE CASCADE,
    ADD CONSTRAINT fk_workspace_members_user FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE;
ALTER TABLE api_keys
    ADD CONSTRAINT fk_api_keys_org FOREIGN KEY (organisation_id) REFERENCES organisations (id) ON DELETE CASCADE,
    ADD CONSTRAINT fk_api_keys_ws FOREIGN KEY (workspace_id) REFERENCES workspaces (id) ON DELETE CASCADE,
    ADD CONSTRAINT fk_api_keys_user FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE;
ALTER TABLE virtual_keys
    ADD CONSTRAINT fk_virtual_keys_org FOREIGN KEY (organisation_id) REFERENCES organisations (id) ON DELETE CASCADE,
    ADD CONSTRAINT fk_virtual_keys_ws FOREIGN KEY (workspace_id) REFERENCES workspaces (id) ON DELETE CASCADE;
ALTER TABLE request_log_metadata
    ADD CONSTRAINT fk_request_log_metadata_log FOREIGN KEY (log_id) REFERENCES request_logs (id) ON DELETE CASCADE;

-- +goose Down
-- The collation stays: the previous one is not known, and byte comparison
-- is what the store assumes on every dialect.
ALTER TABLE request_logs
    MODIFY config        TEXT NOT NULL,
    MODIFY span_name     TEXT NOT NULL,
    MODIFY metadata      TEXT NOT NULL,
    MODIFY request_path  TEXT NOT NULL,
    MODIFY error_message TEXT NOT NULL,
    MODIFY request_body  TEXT NOT NULL,
    MODIFY response_body TEXT NOT NULL;
