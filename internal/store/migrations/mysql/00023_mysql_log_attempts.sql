-- MySQL/MariaDB only: request_logs.attempts (00022) is MEDIUMTEXT like the
-- table's other free-text columns (see 00003).

-- +goose Up
ALTER TABLE request_logs MODIFY attempts MEDIUMTEXT;

-- +goose Down
ALTER TABLE request_logs MODIFY attempts TEXT;
