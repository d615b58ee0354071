-- MySQL/MariaDB only: the tables of 00030 get the binary, NO PAD utf8mb4
-- collation that 00003 gave the others (see there for why), whatever the
-- database's default: slugs, model ids and tags compare byte for byte, as
-- on SQLite and PostgreSQL.

-- +goose Up
SET @gateway_collation = (SELECT COLLATION_NAME FROM information_schema.COLLATIONS
    WHERE COLLATION_NAME IN ('utf8mb4_nopad_bin', 'utf8mb4_0900_bin', 'utf8mb4_bin')
    ORDER BY FIELD(COLLATION_NAME, 'utf8mb4_nopad_bin', 'utf8mb4_0900_bin', 'utf8mb4_bin') LIMIT 1);
SET @gateway_sql = CONCAT('ALTER TABLE integrations CONVERT TO CHARACTER SET utf8mb4 COLLATE ', @gateway_collation);
PREPARE gateway_stmt FROM @gateway_sql;
EXECUTE gateway_stmt;
DEALLOCATE PREPARE gateway_stmt;
SET @gateway_sql = CONCAT('ALTER TABLE integration_models CONVERT TO CHARACTER SET utf8mb4 COLLATE ', @gateway_collation);
PREPARE gateway_stmt FROM @gateway_sql;
EXECUTE gateway_stmt;
DEALLOCATE PREPARE gateway_stmt;
SET @gateway_sql = CONCAT('ALTER TABLE integration_workspaces CONVERT TO CHARACTER SET utf8mb4 COLLATE ', @gateway_collation);
PREPARE gateway_stmt FROM @gateway_sql;
EXECUTE gateway_stmt;
DEALLOCATE PREPARE gateway_stmt;
SET @gateway_sql = CONCAT('ALTER TABLE providers CONVERT TO CHARACTER SET utf8mb4 COLLATE ', @gateway_collation);
PREPARE gateway_stmt FROM @gateway_sql;
EXECUTE gateway_stmt;
DEALLOCATE PREPARE gateway_stmt;
SET @gateway_sql = CONCAT('ALTER TABLE catalog_tags CONVERT TO CHARACTER SET utf8mb4 COLLATE ', @gateway_collation);
PREPARE gateway_stmt FROM @gateway_sql;
EXECUTE gateway_stmt;
DEALLOCATE PREPARE gateway_stmt;

-- +goose Down
SELECT 1;
