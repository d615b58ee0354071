package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/ai-gateway/gateway/internal/auth"
	"github.com/ai-gateway/gateway/internal/httpx"
)

// apiKeyRow is an api_keys row as stored.
type apiKeyRow struct {
	ID             string         `db:"id"`
	OrganisationID string         `db:"organisation_id"`
	WorkspaceID    sql.NullString `db:"workspace_id"`
	UserID         sql.NullString `db:"user_id"`
	Name           string         `db:"name"`
	Description    string         `db:"description"`
	Type           string         `db:"type"`
	Subtype        string         `db:"subtype"`
	Hash           string         `db:"key_hash"`
	Mask           string         `db:"key_mask"`
	Scopes         string         `db:"scopes"`
	Status         string         `db:"status"`
	Defaults       sql.NullString `db:"defaults"`
	ExpiresAt      sql.NullInt64  `db:"expires_at"`
	CreatedAt      int64          `db:"created_at"`
	UpdatedAt      int64          `db:"updated_at"`
	RateLimits     sql.NullString `db:"rate_limits"`
	UsageLimits    sql.NullString `db:"usage_limits"`
	AlertEmails    sql.NullString `db:"alert_emails"`
}

const apiKeyColumns = `id, organisation_id, workspace_id, user_id, name, description, type, subtype,
	key_hash, key_mask, scopes, status, defaults, expires_at, created_at, updated_at,
	rate_limits, usage_limits, alert_emails`

func (r *apiKeyRow) apiKey() (*auth.APIKey, error) {
	k := &auth.APIKey{
		ID:             r.ID,
		OrganisationID: r.OrganisationID,
		WorkspaceID:    r.WorkspaceID.String,
		UserID:         r.UserID.String,
		Name:           r.Name,
		Description:    r.Description,
		Type:           r.Type,
		Subtype:        r.Subtype,
		Hash:           r.Hash,
		Mask:           r.Mask,
		Status:         r.Status,
		ExpiresAt:      fromNullMicros(r.ExpiresAt),
		CreatedAt:      fromMicros(r.CreatedAt),
		UpdatedAt:      fromMicros(r.UpdatedAt),
	}
	if err := json.Unmarshal([]byte(r.Scopes), &k.Scopes); err != nil {
		return nil, fmt.Errorf("api key %s: scopes: %w", r.ID, err)
	}
	if r.Defaults.Valid {
		k.Defaults = json.RawMessage(r.Defaults.String)
	}
	if r.RateLimits.Valid {
		k.RateLimits = json.RawMessage(r.RateLimits.String)
	}
	if r.UsageLimits.Valid {
		k.UsageLimits = json.RawMessage(r.UsageLimits.String)
	}
	if r.AlertEmails.Valid {
		if err := json.Unmarshal([]byte(r.AlertEmails.String), &k.AlertEmails); err != nil {
			return nil, fmt.Errorf("api key %s: alert emails: %w", r.ID, err)
		}
	}
	return k, nil
}

// CreateAPIKey stores k, filling its ID and timestamps when empty. A key
// whose hash is already stored is a conflict (httpx.ErrConflict).
func (s *Store) CreateAPIKey(ctx context.Context, k *auth.APIKey) error {
	if err := s.insertAPIKey(ctx, s.w, k); err != nil {
		return fmt.Errorf("store: create api key: %w", err)
	}
	return nil
}

func (s *Store) insertAPIKey(ctx context.Context, db sqlx.ExtContext, k *auth.APIKey) error {
	if k.ID == "" {
		k.ID = newID()
	}
	now := s.stamp()
	if k.CreatedAt.IsZero() {
		k.CreatedAt = now
	}
	if k.UpdatedAt.IsZero() {
		k.UpdatedAt = k.CreatedAt
	}
	scopes := k.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	scopesJSON, err := json.Marshal(scopes)
	if err != nil {
		return err
	}
	emails, err := nullStrings(k.AlertEmails)
	if err != nil {
		return err
	}
	_, err = db.ExecContext(ctx, s.q(`INSERT INTO api_keys (`+apiKeyColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		k.ID, k.OrganisationID, nullString(k.WorkspaceID), nullString(k.UserID), k.Name, k.Description,
		k.Type, k.Subtype, k.Hash, k.Mask, string(scopesJSON), k.Status, nullJSON(k.Defaults),
		nullMicros(k.ExpiresAt), micros(k.CreatedAt), micros(k.UpdatedAt),
		nullJSON(k.RateLimits), nullJSON(k.UsageLimits), emails)
	if isUniqueViolation(err) {
		// The hash is the only unique column a caller controls; an id
		// collision means the caller reused an id.
		return fmt.Errorf("api key: %w", httpx.ErrConflict)
	}
	return err
}

// APIKeyByHash returns the key whose SHA-256 hex hash is hash, or an error
// wrapping httpx.ErrNotFound. A hash that a key had before a rotation
// finds that key while the rotation's transition lasts, with ExpiresAt no
// later than the transition's end, so that the caller rejects it after.
func (s *Store) APIKeyByHash(ctx context.Context, hash string) (*auth.APIKey, error) {
	k, err := s.apiKeyByHash(ctx, s.r, hash)
	if errors.Is(err, sql.ErrNoRows) {
		k, err = s.apiKeyByPreviousHash(ctx, hash)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("api key: %w", httpx.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: api key by hash: %w", err)
	}
	return k, nil
}

// apiKeyByHash returns sql.ErrNoRows when no key has hash.
func (s *Store) apiKeyByHash(ctx context.Context, db sqlx.QueryerContext, hash string) (*auth.APIKey, error) {
	var row apiKeyRow
	if err := sqlx.GetContext(ctx, db, &row, s.q(`SELECT `+apiKeyColumns+` FROM api_keys WHERE key_hash = ?`), hash); err != nil {
		return nil, err
	}
	return row.apiKey()
}

// DefaultWorkspaceID returns the organisation's default workspace, or an
// error wrapping httpx.ErrNotFound.
func (s *Store) DefaultWorkspaceID(ctx context.Context, organisationID string) (string, error) {
	id, err := s.defaultWorkspaceID(ctx, s.r, organisationID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("default workspace of organisation %q: %w", organisationID, httpx.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("store: default workspace: %w", err)
	}
	return id, nil
}

func (s *Store) defaultWorkspaceID(ctx context.Context, db sqlx.QueryerContext, organisationID string) (string, error) {
	var id string
	err := sqlx.GetContext(ctx, db, &id, s.q(
		`SELECT id FROM workspaces WHERE organisation_id = ? AND is_default = 1 ORDER BY created_at, id LIMIT 1`),
		organisationID)
	return id, err
}
