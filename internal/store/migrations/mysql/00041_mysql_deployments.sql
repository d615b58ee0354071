-- MySQL/MariaDB only: deployments (00040) gets the binary, NO PAD utf8mb4
-- collation that 00003 gave the other tables (slugs compare byte for byte,
-- as on SQLite and PostgreSQL), and its inline config MEDIUMTEXT: sealed
-- and base64-encoded, a large config outgrows TEXT's 65,535 bytes.

-- +goose Up
SET @gateway_collation = (SELECT COLLATION_NAME FROM information_schema.COLLATIONS
    WHERE COLLATION_NAME IN ('utf8mb4_nopad_bin', 'utf8mb4_0900_bin', 'utf8mb4_bin')
    ORDER BY FIELD(COLLATION_NAME, 'utf8mb4_nopad_bin', 'utf8mb4_0900_bin', 'utf8mb4_bin') LIMIT 1);
SET @gateway_sql = CONCAT('ALTER TABLE deployments CONVERT TO CHARACTER SET utf8mb4 COLLATE ', @gateway_collation);
PREPARE gateway_stmt FROM @gateway_sql;
EXECUTE gateway_stmt;
DEALLOCATE PREPARE gateway_stmt;
ALTER TABLE deployments MODIFY config MEDIUMTEXT NOT NULL;

-- +goose Down
SELECT 1;
