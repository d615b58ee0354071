package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ai-gateway/gateway/internal/auth"
	"github.com/ai-gateway/gateway/internal/httpx"
)

// nullStrings encodes an optional list of strings as a JSON array; nil is
// NULL.
func nullStrings(v []string) (sql.NullString, error) {
	if v == nil {
		return sql.NullString{}, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return sql.NullString{}, err
	}
	return sql.NullString{String: string(b), Valid: true}, nil
}

func apiKeyNotFound(id string) error { return fmt.Errorf("api key %q: %w", id, httpx.ErrNotFound) }

// apiKeyByPreviousHash finds the key that had hash before a rotation whose
// transition has not ended; sql.ErrNoRows otherwise.
func (s *Store) apiKeyByPreviousHash(ctx context.Context, hash string) (*auth.APIKey, error) {
	var rot struct {
		KeyID     string `db:"api_key_id"`
		ExpiresAt int64  `db:"expires_at"`
	}
	err := s.r.GetContext(ctx, &rot, s.q(`SELECT api_key_id, expires_at FROM api_key_rotations WHERE key_hash = ?`), hash)
	if err != nil {
		return nil, err
	}
	var row apiKeyRow
	if err := s.r.GetContext(ctx, &row, s.q(`SELECT `+apiKeyColumns+` FROM api_keys WHERE id = ?`), rot.KeyID); err != nil {
		return nil, err
	}
	k, err := row.apiKey()
	if err != nil {
		return nil, err
	}
	until := fromMicros(rot.ExpiresAt)
	if k.ExpiresAt == nil || until.Before(*k.ExpiresAt) {
		k.ExpiresAt = &until
	}
	return k, nil
}

// APIKey returns the organisation's key with id, or an error wrapping
// httpx.ErrNotFound.
func (s *Store) APIKey(ctx context.Context, organisationID, id string) (*auth.APIKey, error) {
	var row apiKeyRow
	err := s.r.GetContext(ctx, &row, s.q(`SELECT `+apiKeyColumns+` FROM api_keys WHERE id = ? AND organisation_id = ?`), id, organisationID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apiKeyNotFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get api key: %w", err)
	}
	return row.apiKey()
}

// ListAPIKeys returns a page of the organisation's keys matching f, newest
// first, and how many match in all.
func (s *Store) ListAPIKeys(ctx context.Context, f auth.APIKeyFilter) ([]*auth.APIKey, int, error) {
	where := `organisation_id = ?`
	args := []any{f.OrganisationID}
	for _, c := range []struct{ col, v string }{
		{"workspace_id", f.WorkspaceID}, {"user_id", f.UserID}, {"type", f.Type}, {"status", f.Status},
	} {
		if c.v != "" {
			where += ` AND ` + c.col + ` = ?`
			args = append(args, c.v)
		}
	}
	var rows []apiKeyRow
	total, err := selectPage(ctx, s, &rows, "api_keys", apiKeyColumns, where, args, "created_at DESC, id DESC", f.Page, f.PageSize)
	if err != nil {
		return nil, 0, fmt.Errorf("store: list api keys: %w", err)
	}
	out, err := convertRows(rows, (*apiKeyRow).apiKey)
	if err != nil {
		return nil, 0, fmt.Errorf("store: list api keys: %w", err)
	}
	return out, total, nil
}

// CountUserAPIKeys returns how many active keys userID holds in the
// workspace.
func (s *Store) CountUserAPIKeys(ctx context.Context, workspaceID, userID string) (int, error) {
	var n int
	err := s.r.GetContext(ctx, &n, s.q(`SELECT COUNT(*) FROM api_keys WHERE workspace_id = ? AND user_id = ? AND status = ?`),
		workspaceID, userID, auth.StatusActive)
	if err != nil {
		return 0, fmt.Errorf("store: count api keys: %w", err)
	}
	return n, nil
}

// UpdateAPIKey writes the mutable fields of k (name, description, scopes,
// status, defaults, limits, alert emails, expiry) to the organisation's key
// k.ID and sets k.UpdatedAt. Type, workspace, user and hash do not change
// here.
func (s *Store) UpdateAPIKey(ctx context.Context, k *auth.APIKey) error {
	scopes := k.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	scopesJSON, err := json.Marshal(scopes)
	if err != nil {
		return fmt.Errorf("store: update api key: %w", err)
	}
	emails, err := nullStrings(k.AlertEmails)
	if err != nil {
		return fmt.Errorf("store: update api key: %w", err)
	}
	updated := s.stamp()
	res, err := s.w.ExecContext(ctx, s.q(`UPDATE api_keys SET name = ?, description = ?, scopes = ?, status = ?,
		defaults = ?, rate_limits = ?, usage_limits = ?, alert_emails = ?, expires_at = ?, updated_at = ?
		WHERE id = ? AND organisation_id = ?`),
		k.Name, k.Description, string(scopesJSON), k.Status, nullJSON(k.Defaults), nullJSON(k.RateLimits),
		nullJSON(k.UsageLimits), emails, nullMicros(k.ExpiresAt), micros(updated), k.ID, k.OrganisationID)
	if err != nil {
		return fmt.Errorf("store: update api key: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("store: update api key: %w", err)
	} else if n == 0 {
		return apiKeyNotFound(k.ID)
	}
	k.UpdatedAt = updated
	return nil
}

// DeleteAPIKey deletes the organisation's key with id, and the hashes it had
// before rotations, and returns it.
func (s *Store) DeleteAPIKey(ctx context.Context, organisationID, id string) (*auth.APIKey, error) {
	k, err := s.APIKey(ctx, organisationID, id)
	if err != nil {
		return nil, err
	}
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store: delete api key: %w", err)
	}
	defer rollback(tx)
	res, err := tx.ExecContext(ctx, s.q(`DELETE FROM api_keys WHERE id = ? AND organisation_id = ?`), id, organisationID)
	if err != nil {
		return nil, fmt.Errorf("store: delete api key: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return nil, fmt.Errorf("store: delete api key: %w", err)
	} else if n == 0 {
		return nil, apiKeyNotFound(id)
	}
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM api_key_rotations WHERE api_key_id = ?`), id); err != nil {
		return nil, fmt.Errorf("store: delete api key: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("store: delete api key: commit: %w", err)
	}
	return k, nil
}

// RotateAPIKey gives the organisation's key id the new hash and mask. When
// oldValidUntil is not nil the old hash keeps authenticating as the key
// until then (APIKeyByHash); otherwise it stops at once. Two rotations of
// one key at once: the second fails with httpx.ErrConflict.
func (s *Store) RotateAPIKey(ctx context.Context, organisationID, id, hash, mask string, oldValidUntil *time.Time) (*auth.APIKey, error) {
	k, err := s.APIKey(ctx, organisationID, id)
	if err != nil {
		return nil, err
	}
	now := s.stamp()
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store: rotate api key: %w", err)
	}
	defer rollback(tx)
	res, err := tx.ExecContext(ctx, s.q(`UPDATE api_keys SET key_hash = ?, key_mask = ?, updated_at = ?
		WHERE id = ? AND organisation_id = ? AND key_hash = ?`), hash, mask, micros(now), id, organisationID, k.Hash)
	if isUniqueViolation(err) {
		return nil, fmt.Errorf("api key hash: %w", httpx.ErrConflict)
	}
	if err != nil {
		return nil, fmt.Errorf("store: rotate api key: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return nil, fmt.Errorf("store: rotate api key: %w", err)
	} else if n == 0 {
		return nil, fmt.Errorf("api key %q is being rotated concurrently: %w", id, httpx.ErrConflict)
	}
	if oldValidUntil != nil && oldValidUntil.After(now) {
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO api_key_rotations (key_hash, api_key_id, expires_at, created_at) VALUES (?, ?, ?, ?)`),
			k.Hash, id, micros(*oldValidUntil), micros(now)); err != nil {
			return nil, fmt.Errorf("store: rotate api key: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("store: rotate api key: commit: %w", err)
	}
	k.Hash, k.Mask, k.UpdatedAt = hash, mask, now
	return k, nil
}

// ExpireAPIKeys moves every active key whose expiry is at or before now to
// expired (SPEC.md "States and transitions") and forgets the pre-rotation
// hashes whose transition has ended. It returns how many keys it expired.
func (s *Store) ExpireAPIKeys(ctx context.Context, now time.Time) (int, error) {
	at := micros(now.UTC())
	res, err := s.w.ExecContext(ctx, s.q(`UPDATE api_keys SET status = ?, updated_at = ?
		WHERE status = ? AND expires_at IS NOT NULL AND expires_at <= ?`),
		auth.StatusExpired, micros(s.stamp()), auth.StatusActive, at)
	if err != nil {
		return 0, fmt.Errorf("store: expire api keys: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("store: expire api keys: %w", err)
	}
	if _, err := s.w.ExecContext(ctx, s.q(`DELETE FROM api_key_rotations WHERE expires_at <= ?`), at); err != nil {
		return int(n), fmt.Errorf("store: expire api key rotations: %w", err)
	}
	return int(n), nil
}
