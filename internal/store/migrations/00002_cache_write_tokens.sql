-- +goose Up
-- Prompt tokens written to a provider's prompt cache (Anthropic, Bedrock),
-- which are billed differently from plain input.
ALTER TABLE request_logs ADD COLUMN cache_write_tokens BIGINT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE request_logs DROP COLUMN cache_write_tokens;
