package store

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/ai-gateway/gateway/internal/auth"
	"github.com/ai-gateway/gateway/internal/httpx"
)

// virtualKeyRow is a virtual_keys row as stored. SealedKey is standard
// base64, since the schema keeps binary values in TEXT (see the migration).
type virtualKeyRow struct {
	ID             string         `db:"id"`
	OrganisationID string         `db:"organisation_id"`
	WorkspaceID    string         `db:"workspace_id"`
	Slug           string         `db:"slug"`
	Name           string         `db:"name"`
	Note           string         `db:"note"`
	Provider       string         `db:"provider"`
	SealedKey      string         `db:"sealed_key"`
	CustomHost     string         `db:"custom_host"`
	Options        sql.NullString `db:"options"`
	UsageLimits    sql.NullString `db:"usage_limits"`
	RateLimits     sql.NullString `db:"rate_limits"`
	Status         string         `db:"status"`
	ExpiresAt      sql.NullInt64  `db:"expires_at"`
	CreatedAt      int64          `db:"created_at"`
	UpdatedAt      int64          `db:"updated_at"`
}

const virtualKeyColumns = `id, organisation_id, workspace_id, slug, name, note, provider, sealed_key,
	custom_host, options, usage_limits, rate_limits, status, expires_at, created_at, updated_at`

func (r *virtualKeyRow) virtualKey() (*auth.VirtualKey, error) {
	v := &auth.VirtualKey{
		ID:             r.ID,
		Slug:           r.Slug,
		OrganisationID: r.OrganisationID,
		WorkspaceID:    r.WorkspaceID,
		Name:           r.Name,
		Note:           r.Note,
		Provider:       r.Provider,
		CustomHost:     r.CustomHost,
		Status:         r.Status,
		ExpiresAt:      fromNullMicros(r.ExpiresAt),
		CreatedAt:      fromMicros(r.CreatedAt),
		UpdatedAt:      fromMicros(r.UpdatedAt),
	}
	if r.SealedKey != "" {
		b, err := base64.StdEncoding.DecodeString(r.SealedKey)
		if err != nil {
			return nil, fmt.Errorf("virtual key %s: sealed key: %w", r.ID, err)
		}
		v.SealedKey = b
	}
	if r.Options.Valid {
		if err := json.Unmarshal([]byte(r.Options.String), &v.Options); err != nil {
			return nil, fmt.Errorf("virtual key %s: options: %w", r.ID, err)
		}
	}
	if r.UsageLimits.Valid {
		v.UsageLimits = json.RawMessage(r.UsageLimits.String)
	}
	if r.RateLimits.Valid {
		v.RateLimits = json.RawMessage(r.RateLimits.String)
	}
	return v, nil
}

// virtualKeyArgs returns v's mutable columns in the order slug, name, note,
// provider, sealed_key, custom_host, options, usage_limits, rate_limits,
// status, expires_at.
func virtualKeyArgs(v *auth.VirtualKey) ([]any, error) {
	var options sql.NullString
	if len(v.Options) > 0 {
		b, err := json.Marshal(v.Options)
		if err != nil {
			return nil, err
		}
		options = sql.NullString{String: string(b), Valid: true}
	}
	return []any{
		v.Slug, v.Name, v.Note, v.Provider, base64.StdEncoding.EncodeToString(v.SealedKey), v.CustomHost,
		options, nullJSON(v.UsageLimits), nullJSON(v.RateLimits), v.Status, nullMicros(v.ExpiresAt),
	}, nil
}

// nullJSON maps an empty raw JSON value to NULL.
func nullJSON(b json.RawMessage) sql.NullString {
	return sql.NullString{String: string(b), Valid: len(b) > 0}
}

// slugConflict is the client-safe error for a taken slug.
func slugConflict(slug string) error {
	return fmt.Errorf("virtual key slug %q: %w", slug, httpx.ErrConflict)
}

// virtualKeyNotFound is the client-safe error for an unknown virtual key.
func virtualKeyNotFound(slugOrID string) error {
	return fmt.Errorf("virtual key %q: %w", slugOrID, httpx.ErrNotFound)
}

// CreateVirtualKey stores v, filling its ID, timestamps and status
// ("active") when empty, and its workspace with the organisation's default
// workspace when v.WorkspaceID is empty. A slug already used in the
// organisation is a conflict (httpx.ErrConflict).
func (s *Store) CreateVirtualKey(ctx context.Context, v *auth.VirtualKey) error {
	if v.Slug == "" {
		return errors.New("store: create virtual key: slug is required")
	}
	if v.ID == "" {
		v.ID = newID()
	}
	if v.Status == "" {
		v.Status = auth.StatusActive
	}
	now := s.stamp()
	if v.CreatedAt.IsZero() {
		v.CreatedAt = now
	}
	if v.UpdatedAt.IsZero() {
		v.UpdatedAt = v.CreatedAt
	}
	args, err := virtualKeyArgs(v)
	if err != nil {
		return fmt.Errorf("store: create virtual key: %w", err)
	}

	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: create virtual key: %w", err)
	}
	defer rollback(tx)
	if v.WorkspaceID == "" {
		v.WorkspaceID, err = s.defaultWorkspaceID(ctx, tx, v.OrganisationID)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("default workspace of organisation %q: %w", v.OrganisationID, httpx.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("store: create virtual key: %w", err)
		}
	}
	args = append([]any{v.ID, v.OrganisationID, v.WorkspaceID}, args...)
	args = append(args, micros(v.CreatedAt), micros(v.UpdatedAt))
	_, err = tx.ExecContext(ctx, s.q(`INSERT INTO virtual_keys (`+virtualKeyColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`), args...)
	if isUniqueViolation(err) {
		return slugConflict(v.Slug)
	}
	if err != nil {
		return fmt.Errorf("store: create virtual key: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: create virtual key: commit: %w", err)
	}
	return nil
}

// VirtualKey returns the organisation's virtual key by slug or id, or an
// error wrapping httpx.ErrNotFound.
func (s *Store) VirtualKey(ctx context.Context, organisationID, slugOrID string) (*auth.VirtualKey, error) {
	v, err := s.virtualKey(ctx, s.r, organisationID, slugOrID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, virtualKeyNotFound(slugOrID)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get virtual key: %w", err)
	}
	return v, nil
}

// VirtualKeyBySlug is VirtualKey under the name auth.KeyStore asks for.
func (s *Store) VirtualKeyBySlug(ctx context.Context, organisationID, slugOrID string) (*auth.VirtualKey, error) {
	return s.VirtualKey(ctx, organisationID, slugOrID)
}

// virtualKey looks a key up by slug or id; a slug match wins over an id
// match. It returns sql.ErrNoRows when neither matches.
func (s *Store) virtualKey(ctx context.Context, db sqlx.QueryerContext, organisationID, slugOrID string) (*auth.VirtualKey, error) {
	row, err := bySlugOrID[virtualKeyRow](ctx, s, db, "virtual_keys", virtualKeyColumns, organisationID, slugOrID)
	if err != nil {
		return nil, err
	}
	return row.virtualKey()
}

// ListVirtualKeys returns a page of the organisation's virtual keys, newest
// first, and how many there are in all. An empty workspaceID lists every
// workspace's keys.
func (s *Store) ListVirtualKeys(ctx context.Context, organisationID, workspaceID string, page, pageSize int) ([]*auth.VirtualKey, int, error) {
	where, args := inWorkspace(organisationID, workspaceID)
	var rows []virtualKeyRow
	total, err := selectPage(ctx, s, &rows, "virtual_keys", virtualKeyColumns, where, args, "created_at DESC, id DESC", page, pageSize)
	if err != nil {
		return nil, 0, fmt.Errorf("store: list virtual keys: %w", err)
	}
	out, err := convertRows(rows, (*virtualKeyRow).virtualKey)
	if err != nil {
		return nil, 0, fmt.Errorf("store: list virtual keys: %w", err)
	}
	return out, total, nil
}

// UpdateVirtualKey writes every mutable field of v (workspace, slug, name,
// note, provider, sealed key, custom host, options, limits, status, expiry)
// to the row with v.ID in v.OrganisationID, and sets v.UpdatedAt. Callers
// load the key, change it and save it whole: an empty SealedKey is stored
// as empty.
func (s *Store) UpdateVirtualKey(ctx context.Context, v *auth.VirtualKey) error {
	args, err := virtualKeyArgs(v)
	if err != nil {
		return fmt.Errorf("store: update virtual key: %w", err)
	}
	updated := s.stamp()
	args = append([]any{v.WorkspaceID}, args...)
	args = append(args, micros(updated), v.ID, v.OrganisationID)
	res, err := s.w.ExecContext(ctx, s.q(`UPDATE virtual_keys SET workspace_id = ?, slug = ?, name = ?, note = ?,
		provider = ?, sealed_key = ?, custom_host = ?, options = ?, usage_limits = ?, rate_limits = ?,
		status = ?, expires_at = ?, updated_at = ?
		WHERE id = ? AND organisation_id = ?`), args...)
	if isUniqueViolation(err) {
		return slugConflict(v.Slug)
	}
	if err != nil {
		return fmt.Errorf("store: update virtual key: %w", err)
	}
	// MySQL counts only changed rows; updated_at changes on every call, so
	// zero means no such row on every dialect.
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("store: update virtual key: %w", err)
	}
	if n == 0 {
		return virtualKeyNotFound(v.ID)
	}
	v.UpdatedAt = updated
	return nil
}

// DeleteVirtualKey deletes the organisation's virtual key named by slug or
// id and returns it, or an error wrapping httpx.ErrNotFound.
func (s *Store) DeleteVirtualKey(ctx context.Context, organisationID, slugOrID string) (*auth.VirtualKey, error) {
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store: delete virtual key: %w", err)
	}
	defer rollback(tx)
	v, err := s.virtualKey(ctx, tx, organisationID, slugOrID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, virtualKeyNotFound(slugOrID)
	}
	if err != nil {
		return nil, fmt.Errorf("store: delete virtual key: %w", err)
	}
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM virtual_keys WHERE id = ?`), v.ID); err != nil {
		return nil, fmt.Errorf("store: delete virtual key: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("store: delete virtual key: commit: %w", err)
	}
	return v, nil
}
