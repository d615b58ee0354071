-- MySQL/MariaDB only: the tables of 00010 get the binary, NO PAD utf8mb4
-- collation that 00003 gave the others (see there for why), whatever the
-- database's default. The columns 00010 added to existing tables already
-- have it, as the table default.

-- +goose Up
SET @gateway_collation = (SELECT COLLATION_NAME FROM information_schema.COLLATIONS
    WHERE COLLATION_NAME IN ('utf8mb4_nopad_bin', 'utf8mb4_0900_bin', 'utf8mb4_bin')
    ORDER BY FIELD(COLLATION_NAME, 'utf8mb4_nopad_bin', 'utf8mb4_0900_bin', 'utf8mb4_bin') LIMIT 1);
SET @gateway_sql = CONCAT('ALTER TABLE invites CONVERT TO CHARACTER SET utf8mb4 COLLATE ', @gateway_collation);
PREPARE gateway_stmt FROM @gateway_sql;
EXECUTE gateway_stmt;
DEALLOCATE PREPARE gateway_stmt;
SET @gateway_sql = CONCAT('ALTER TABLE audit_logs CONVERT TO CHARACTER SET utf8mb4 COLLATE ', @gateway_collation);
PREPARE gateway_stmt FROM @gateway_sql;
EXECUTE gateway_stmt;
DEALLOCATE PREPARE gateway_stmt;
SET @gateway_sql = CONCAT('ALTER TABLE api_key_rotations CONVERT TO CHARACTER SET utf8mb4 COLLATE ', @gateway_collation);
PREPARE gateway_stmt FROM @gateway_sql;
EXECUTE gateway_stmt;
DEALLOCATE PREPARE gateway_stmt;

-- +goose Down
-- The collation stays, as in 00003.
SELECT 1;
