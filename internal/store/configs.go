package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/routing"
)

// Compile-time guard: the data plane reads saved configs from the store.
var _ routing.ConfigStore = (*Store)(nil)

// configRow is a configs row: a saved config at its latest version.
type configRow struct {
	ID             string `db:"id"`
	OrganisationID string `db:"organisation_id"`
	WorkspaceID    string `db:"workspace_id"`
	Slug           string `db:"slug"`
	Name           string `db:"name"`
	Version        int    `db:"version"`
	VersionID      string `db:"version_id"`
	Config         string `db:"config"`
	CreatedAt      int64  `db:"created_at"`
	UpdatedAt      int64  `db:"updated_at"`
}

const configColumns = `id, organisation_id, workspace_id, slug, name, version, version_id, config, created_at, updated_at`

func (r *configRow) config() *routing.StoredConfig {
	return &routing.StoredConfig{
		ID: r.ID, OrganisationID: r.OrganisationID, WorkspaceID: r.WorkspaceID, Slug: r.Slug, Name: r.Name,
		Version: r.Version, VersionID: r.VersionID, Config: []byte(r.Config),
		CreatedAt: fromMicros(r.CreatedAt), UpdatedAt: fromMicros(r.UpdatedAt),
	}
}

func configNotFound(slugOrID string) error {
	return fmt.Errorf("config %q: %w", slugOrID, httpx.ErrNotFound)
}

// CreateConfig stores c as version 1, filling its ID, version id and
// timestamps, and its workspace with the organisation's default workspace
// when c.WorkspaceID is empty. A slug already used in the organisation is a
// conflict (httpx.ErrConflict).
func (s *Store) CreateConfig(ctx context.Context, c *routing.StoredConfig) error {
	if c.Slug == "" {
		return errors.New("store: create config: slug is required")
	}
	if c.ID == "" {
		c.ID = newID()
	}
	c.Version, c.VersionID = 1, newID()
	now := s.stamp()
	c.CreatedAt, c.UpdatedAt = now, now
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: create config: %w", err)
	}
	defer rollback(tx)
	if c.WorkspaceID == "" {
		c.WorkspaceID, err = s.defaultWorkspaceID(ctx, tx, c.OrganisationID)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("default workspace of organisation %q: %w", c.OrganisationID, httpx.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("store: create config: %w", err)
		}
	}
	_, err = tx.ExecContext(ctx, s.q(`INSERT INTO configs (`+configColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		c.ID, c.OrganisationID, c.WorkspaceID, c.Slug, c.Name, c.Version, c.VersionID, string(c.Config), micros(now), micros(now))
	if isUniqueViolation(err) {
		return fmt.Errorf("config slug %q: %w", c.Slug, httpx.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("store: create config: %w", err)
	}
	if err := s.insertConfigVersion(ctx, tx, c); err != nil {
		return fmt.Errorf("store: create config: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: create config: commit: %w", err)
	}
	return nil
}

func (s *Store) insertConfigVersion(ctx context.Context, tx *sqlx.Tx, c *routing.StoredConfig) error {
	_, err := tx.ExecContext(ctx, s.q(`INSERT INTO config_versions (id, config_id, version, name, config, created_at) VALUES (?, ?, ?, ?, ?, ?)`),
		c.VersionID, c.ID, c.Version, c.Name, string(c.Config), micros(c.UpdatedAt))
	return err
}

// Config returns the latest version of the organisation's config named by
// slug or id, or an error wrapping httpx.ErrNotFound. It satisfies
// routing.ConfigStore.
func (s *Store) Config(ctx context.Context, organisationID, slugOrID string) (*routing.StoredConfig, error) {
	c, err := s.config(ctx, s.r, organisationID, slugOrID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, configNotFound(slugOrID)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get config: %w", err)
	}
	return c, nil
}

// config looks a config up by slug or id; a slug match wins over an id
// match. It returns sql.ErrNoRows when neither matches.
func (s *Store) config(ctx context.Context, db sqlx.QueryerContext, organisationID, slugOrID string) (*routing.StoredConfig, error) {
	row, err := bySlugOrID[configRow](ctx, s, db, "configs", configColumns, organisationID, slugOrID)
	if err != nil {
		return nil, err
	}
	return row.config(), nil
}

// ListConfigs returns a page of the organisation's configs at their latest
// versions, newest first, and how many there are in all. An empty
// workspaceID lists every workspace's configs.
func (s *Store) ListConfigs(ctx context.Context, organisationID, workspaceID string, page, pageSize int) ([]*routing.StoredConfig, int, error) {
	where, args := inWorkspace(organisationID, workspaceID)
	var rows []configRow
	total, err := selectPage(ctx, s, &rows, "configs", configColumns, where, args, "created_at DESC, id DESC", page, pageSize)
	if err != nil {
		return nil, 0, fmt.Errorf("store: list configs: %w", err)
	}
	out := make([]*routing.StoredConfig, 0, len(rows))
	for i := range rows {
		out = append(out, rows[i].config())
	}
	return out, total, nil
}

// UpdateConfig saves c.Name and c.Config as a new version of the config
// with c.ID in c.OrganisationID, and sets c's Version, VersionID and
// UpdatedAt. Concurrent updates each get their own version: the version
// counter is bumped by an UPDATE, which locks the row until commit.
func (s *Store) UpdateConfig(ctx context.Context, c *routing.StoredConfig) error {
	now := s.stamp()
	versionID := newID()
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: update config: %w", err)
	}
	defer rollback(tx)
	res, err := tx.ExecContext(ctx, s.q(`UPDATE configs SET version = version + 1, version_id = ?, name = ?, config = ?, updated_at = ?
		WHERE id = ? AND organisation_id = ?`), versionID, c.Name, string(c.Config), micros(now), c.ID, c.OrganisationID)
	if err != nil {
		return fmt.Errorf("store: update config: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("store: update config: %w", err)
	} else if n == 0 {
		return configNotFound(c.ID)
	}
	var version int
	if err := tx.GetContext(ctx, &version, s.q(`SELECT version FROM configs WHERE id = ?`), c.ID); err != nil {
		return fmt.Errorf("store: update config: %w", err)
	}
	c.Version, c.VersionID, c.UpdatedAt = version, versionID, now
	if err := s.insertConfigVersion(ctx, tx, c); err != nil {
		return fmt.Errorf("store: update config: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: update config: commit: %w", err)
	}
	return nil
}

// DeleteConfig deletes the organisation's config named by slug or id with
// all its versions, and returns it (at its latest version), or an error
// wrapping httpx.ErrNotFound.
func (s *Store) DeleteConfig(ctx context.Context, organisationID, slugOrID string) (*routing.StoredConfig, error) {
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store: delete config: %w", err)
	}
	defer rollback(tx)
	c, err := s.config(ctx, tx, organisationID, slugOrID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, configNotFound(slugOrID)
	}
	if err != nil {
		return nil, fmt.Errorf("store: delete config: %w", err)
	}
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM config_versions WHERE config_id = ?`), c.ID); err != nil {
		return nil, fmt.Errorf("store: delete config: %w", err)
	}
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM configs WHERE id = ?`), c.ID); err != nil {
		return nil, fmt.Errorf("store: delete config: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("store: delete config: commit: %w", err)
	}
	return c, nil
}

// configVersionRow is a config_versions row.
type configVersionRow struct {
	ID        string `db:"id"`
	Version   int    `db:"version"`
	Name      string `db:"name"`
	Config    string `db:"config"`
	CreatedAt int64  `db:"created_at"`
}

// ConfigVersions returns a page of the versions of the organisation's
// config named by slug or id, newest first, and how many there are. Each
// carries the config's id, slug and workspace with that version's name,
// body, number, id and time (UpdatedAt).
func (s *Store) ConfigVersions(ctx context.Context, organisationID, slugOrID string, page, pageSize int) ([]*routing.StoredConfig, int, error) {
	c, err := s.config(ctx, s.r, organisationID, slugOrID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, 0, configNotFound(slugOrID)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("store: config versions: %w", err)
	}
	var total int
	if err := s.r.GetContext(ctx, &total, s.q(`SELECT COUNT(*) FROM config_versions WHERE config_id = ?`), c.ID); err != nil {
		return nil, 0, fmt.Errorf("store: config versions: %w", err)
	}
	limit, offset := pageBounds(page, pageSize)
	var rows []configVersionRow
	err = s.r.SelectContext(ctx, &rows, s.q(`SELECT id, version, name, config, created_at FROM config_versions
		WHERE config_id = ? ORDER BY version DESC LIMIT ? OFFSET ?`), c.ID, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("store: config versions: %w", err)
	}
	out := make([]*routing.StoredConfig, 0, len(rows))
	for _, r := range rows {
		v := *c
		v.Version, v.VersionID, v.Name, v.Config, v.UpdatedAt = r.Version, r.ID, r.Name, []byte(r.Config), fromMicros(r.CreatedAt)
		out = append(out, &v)
	}
	return out, total, nil
}
