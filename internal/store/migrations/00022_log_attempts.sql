-- +goose Up
-- Every call a request made to providers (retries, fallbacks, targets
-- skipped for an open circuit), as a JSON array: target path, provider,
-- retry, status, latency, error. NULL for requests without attempts.
ALTER TABLE request_logs ADD COLUMN attempts TEXT;

-- +goose Down
ALTER TABLE request_logs DROP COLUMN attempts;
