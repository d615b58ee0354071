-- MySQL/MariaDB only: the tables of 00050 get the binary, NO PAD utf8mb4
-- collation that 00003 gave the others (see there for why), so that slugs
-- compare byte for byte as on SQLite and PostgreSQL; and their metadata
-- columns become MEDIUMTEXT, since a server's icons may be data URIs
-- larger than TEXT's 64 KiB (package mcp bounds them well below 16 MiB).

-- +goose Up
SET @gateway_collation = (SELECT COLLATION_NAME FROM information_schema.COLLATIONS
    WHERE COLLATION_NAME IN ('utf8mb4_nopad_bin', 'utf8mb4_0900_bin', 'utf8mb4_bin')
    ORDER BY FIELD(COLLATION_NAME, 'utf8mb4_nopad_bin', 'utf8mb4_0900_bin', 'utf8mb4_bin') LIMIT 1);
SET @gateway_sql = CONCAT('ALTER TABLE mcp_integrations CONVERT TO CHARACTER SET utf8mb4 COLLATE ', @gateway_collation);
PREPARE gateway_stmt FROM @gateway_sql;
EXECUTE gateway_stmt;
DEALLOCATE PREPARE gateway_stmt;
SET @gateway_sql = CONCAT('ALTER TABLE mcp_servers CONVERT TO CHARACTER SET utf8mb4 COLLATE ', @gateway_collation);
PREPARE gateway_stmt FROM @gateway_sql;
EXECUTE gateway_stmt;
DEALLOCATE PREPARE gateway_stmt;
ALTER TABLE mcp_integrations MODIFY metadata MEDIUMTEXT;
ALTER TABLE mcp_servers MODIFY metadata MEDIUMTEXT;

-- +goose Down
ALTER TABLE mcp_integrations MODIFY metadata TEXT;
ALTER TABLE mcp_servers MODIFY metadata TEXT;
