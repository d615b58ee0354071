package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/tenancy"
)

// Organisation returns the organisation with id, or an error wrapping
// httpx.ErrNotFound.
func (s *Store) Organisation(ctx context.Context, id string) (*tenancy.Organisation, error) {
	var row struct {
		ID        string         `db:"id"`
		Name      string         `db:"name"`
		Settings  sql.NullString `db:"settings"`
		CreatedAt int64          `db:"created_at"`
		UpdatedAt int64          `db:"updated_at"`
	}
	err := s.r.GetContext(ctx, &row, s.q(`SELECT id, name, settings, created_at, updated_at FROM organisations WHERE id = ?`), id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("organisation %q: %w", id, httpx.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get organisation: %w", err)
	}
	o := &tenancy.Organisation{ID: row.ID, Name: row.Name, CreatedAt: fromMicros(row.CreatedAt), UpdatedAt: fromMicros(row.UpdatedAt)}
	if row.Settings.Valid {
		if err := json.Unmarshal([]byte(row.Settings.String), &o.Settings); err != nil {
			return nil, fmt.Errorf("store: organisation %s: settings: %w", id, err)
		}
	}
	return o, nil
}

// UpdateOrganisation writes the organisation's name and settings.
func (s *Store) UpdateOrganisation(ctx context.Context, o *tenancy.Organisation) error {
	settings, err := json.Marshal(o.Settings)
	if err != nil {
		return fmt.Errorf("store: update organisation: %w", err)
	}
	updated := s.stamp()
	res, err := s.w.ExecContext(ctx, s.q(`UPDATE organisations SET name = ?, settings = ?, updated_at = ? WHERE id = ?`),
		o.Name, string(settings), micros(updated), o.ID)
	if err != nil {
		return fmt.Errorf("store: update organisation: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("store: update organisation: %w", err)
	} else if n == 0 {
		return fmt.Errorf("organisation %q: %w", o.ID, httpx.ErrNotFound)
	}
	o.UpdatedAt = updated
	return nil
}

// workspaceRow is a workspaces row as stored.
type workspaceRow struct {
	ID             string         `db:"id"`
	OrganisationID string         `db:"organisation_id"`
	Slug           string         `db:"slug"`
	Name           string         `db:"name"`
	Description    sql.NullString `db:"description"`
	IsDefault      int            `db:"is_default"`
	Settings       sql.NullString `db:"settings"`
	UsageLimits    sql.NullString `db:"usage_limits"`
	RateLimits     sql.NullString `db:"rate_limits"`
	CreatedAt      int64          `db:"created_at"`
	UpdatedAt      int64          `db:"updated_at"`
}

const workspaceColumns = `id, organisation_id, slug, name, description, is_default, settings, usage_limits, rate_limits, created_at, updated_at`

func (r *workspaceRow) workspace() (*tenancy.Workspace, error) {
	w := &tenancy.Workspace{
		ID: r.ID, OrganisationID: r.OrganisationID, Slug: r.Slug, Name: r.Name, Description: r.Description.String,
		IsDefault: r.IsDefault != 0, CreatedAt: fromMicros(r.CreatedAt), UpdatedAt: fromMicros(r.UpdatedAt),
	}
	if r.Settings.Valid {
		if err := json.Unmarshal([]byte(r.Settings.String), &w.Settings); err != nil {
			return nil, fmt.Errorf("workspace %s: settings: %w", r.ID, err)
		}
	}
	if r.UsageLimits.Valid {
		w.UsageLimits = json.RawMessage(r.UsageLimits.String)
	}
	if r.RateLimits.Valid {
		w.RateLimits = json.RawMessage(r.RateLimits.String)
	}
	return w, nil
}

func workspaceNotFound(idOrSlug string) error {
	return fmt.Errorf("workspace %q: %w", idOrSlug, httpx.ErrNotFound)
}

func workspaceSlugTaken(slug string) error {
	return fmt.Errorf("workspace slug %q is taken: %w", slug, httpx.ErrConflict)
}

// InsertWorkspace stores a new, non-default workspace, filling its ID and
// timestamps. A taken slug wraps httpx.ErrConflict.
func (s *Store) InsertWorkspace(ctx context.Context, w *tenancy.Workspace) error {
	if w.ID == "" {
		w.ID = newID()
	}
	now := s.stamp()
	w.CreatedAt, w.UpdatedAt, w.IsDefault = now, now, false
	settings, err := json.Marshal(w.Settings)
	if err != nil {
		return fmt.Errorf("store: create workspace: %w", err)
	}
	_, err = s.w.ExecContext(ctx, s.q(`INSERT INTO workspaces (`+workspaceColumns+`) VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?)`),
		w.ID, w.OrganisationID, w.Slug, w.Name, w.Description, string(settings), nullJSON(w.UsageLimits), nullJSON(w.RateLimits),
		micros(now), micros(now))
	if isUniqueViolation(err) {
		return workspaceSlugTaken(w.Slug)
	}
	if err != nil {
		return fmt.Errorf("store: create workspace: %w", err)
	}
	return nil
}

// Workspace returns the organisation's workspace by id or slug (a slug
// match wins), or an error wrapping httpx.ErrNotFound.
func (s *Store) Workspace(ctx context.Context, organisationID, idOrSlug string) (*tenancy.Workspace, error) {
	w, err := s.workspace(ctx, s.r, organisationID, idOrSlug)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, workspaceNotFound(idOrSlug)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get workspace: %w", err)
	}
	return w, nil
}

func (s *Store) workspace(ctx context.Context, db sqlx.QueryerContext, organisationID, idOrSlug string) (*tenancy.Workspace, error) {
	row, err := bySlugOrID[workspaceRow](ctx, s, db, "workspaces", workspaceColumns, organisationID, idOrSlug)
	if err != nil {
		return nil, err
	}
	return row.workspace()
}

// ListWorkspaces returns a page of the organisation's workspaces, oldest
// first (the default workspace leads), and how many there are. A non-empty
// only restricts the list to that workspace id.
func (s *Store) ListWorkspaces(ctx context.Context, organisationID, only string, page, pageSize int) ([]*tenancy.Workspace, int, error) {
	where := `organisation_id = ?`
	args := []any{organisationID}
	if only != "" {
		where += ` AND id = ?`
		args = append(args, only)
	}
	var rows []workspaceRow
	total, err := selectPage(ctx, s, &rows, "workspaces", workspaceColumns, where, args, "is_default DESC, created_at, id", page, pageSize)
	if err != nil {
		return nil, 0, fmt.Errorf("store: list workspaces: %w", err)
	}
	out, err := convertRows(rows, (*workspaceRow).workspace)
	if err != nil {
		return nil, 0, fmt.Errorf("store: list workspaces: %w", err)
	}
	return out, total, nil
}

// UpdateWorkspace writes the workspace's slug, name, description, settings
// and limits, and sets w.UpdatedAt.
func (s *Store) UpdateWorkspace(ctx context.Context, w *tenancy.Workspace) error {
	settings, err := json.Marshal(w.Settings)
	if err != nil {
		return fmt.Errorf("store: update workspace: %w", err)
	}
	updated := s.stamp()
	res, err := s.w.ExecContext(ctx, s.q(`UPDATE workspaces SET slug = ?, name = ?, description = ?, settings = ?,
		usage_limits = ?, rate_limits = ?, updated_at = ? WHERE id = ? AND organisation_id = ?`),
		w.Slug, w.Name, w.Description, string(settings), nullJSON(w.UsageLimits), nullJSON(w.RateLimits), micros(updated),
		w.ID, w.OrganisationID)
	if isUniqueViolation(err) {
		return workspaceSlugTaken(w.Slug)
	}
	if err != nil {
		return fmt.Errorf("store: update workspace: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("store: update workspace: %w", err)
	} else if n == 0 {
		return workspaceNotFound(w.ID)
	}
	w.UpdatedAt = updated
	return nil
}

// DeleteWorkspace deletes the organisation's non-default workspace id with
// its members, API keys and virtual keys (the schema's cascades), and
// returns it. The default workspace is never deleted: asking for it is
// httpx.ErrConflict.
func (s *Store) DeleteWorkspace(ctx context.Context, organisationID, id string) (*tenancy.Workspace, error) {
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store: delete workspace: %w", err)
	}
	defer rollback(tx)
	var row workspaceRow
	err = tx.GetContext(ctx, &row, s.q(`SELECT `+workspaceColumns+` FROM workspaces WHERE id = ? AND organisation_id = ?`), id, organisationID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, workspaceNotFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("store: delete workspace: %w", err)
	}
	if row.IsDefault != 0 {
		return nil, fmt.Errorf("the default workspace cannot be deleted: %w", httpx.ErrConflict)
	}
	// The rotations of the workspace's keys go first: they have no foreign
	// key to cascade along.
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM api_key_rotations WHERE api_key_id IN (SELECT id FROM api_keys WHERE workspace_id = ?)`), id); err != nil {
		return nil, fmt.Errorf("store: delete workspace: %w", err)
	}
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM workspaces WHERE id = ?`), id); err != nil {
		return nil, fmt.Errorf("store: delete workspace: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("store: delete workspace: commit: %w", err)
	}
	return row.workspace()
}
