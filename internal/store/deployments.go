package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/registry"
)

// deploymentRow is a deployments row. workspace_ids and limits are JSON
// text; config is "" for none.
type deploymentRow struct {
	ID             string `db:"id"`
	OrganisationID string `db:"organisation_id"`
	Slug           string `db:"slug"`
	Name           string `db:"name"`
	Description    string `db:"description"`
	Type           string `db:"type"`
	ConfigRef      string `db:"config_ref"`
	Config         string `db:"config"`
	WorkspaceIDs   string `db:"workspace_ids"`
	Limits         string `db:"limits"`
	CreatedAt      int64  `db:"created_at"`
	UpdatedAt      int64  `db:"updated_at"`
}

const deploymentColumns = `id, organisation_id, slug, name, description, type, config_ref, config, workspace_ids, limits, created_at, updated_at`

func (r *deploymentRow) slugValue() string { return r.Slug }

func (r *deploymentRow) deployment() (*registry.Deployment, error) {
	d := &registry.Deployment{
		ID: r.ID, OrganisationID: r.OrganisationID, Slug: r.Slug, Name: r.Name, Description: r.Description,
		Type: r.Type, ConfigRef: r.ConfigRef, CreatedAt: fromMicros(r.CreatedAt), UpdatedAt: fromMicros(r.UpdatedAt),
	}
	if r.Config != "" {
		d.Config = []byte(r.Config)
	}
	if err := json.Unmarshal([]byte(r.WorkspaceIDs), &d.WorkspaceIDs); err != nil {
		return nil, fmt.Errorf("deployment %s: workspace_ids: %w", r.ID, err)
	}
	if err := json.Unmarshal([]byte(r.Limits), &d.Limits); err != nil {
		return nil, fmt.Errorf("deployment %s: limits: %w", r.ID, err)
	}
	return d, nil
}

// deploymentText encodes the JSON columns of d.
func deploymentText(d *registry.Deployment) (workspaceIDs, limits string, err error) {
	ids := d.WorkspaceIDs
	if ids == nil {
		ids = []string{}
	}
	w, err := json.Marshal(ids)
	if err != nil {
		return "", "", err
	}
	l, err := json.Marshal(d.Limits)
	if err != nil {
		return "", "", err
	}
	return string(w), string(l), nil
}

func deploymentNotFound(slugOrID string) error {
	return fmt.Errorf("deployment %q: %w", slugOrID, httpx.ErrNotFound)
}

func deploymentSlugTaken(slug string) error {
	return fmt.Errorf("deployment slug %q is already used in this organisation: %w", slug, httpx.ErrConflict)
}

// CreateDeployment stores d, filling its ID (when empty) and timestamps. A
// slug already used in the organisation is a conflict (httpx.ErrConflict).
func (s *Store) CreateDeployment(ctx context.Context, d *registry.Deployment) error {
	if d.Slug == "" {
		return errors.New("store: create deployment: slug is required")
	}
	if d.ID == "" {
		d.ID = newID()
	}
	ws, lim, err := deploymentText(d)
	if err != nil {
		return fmt.Errorf("store: create deployment: %w", err)
	}
	now := s.stamp()
	d.CreatedAt, d.UpdatedAt = now, now
	_, err = s.w.ExecContext(ctx, s.q(`INSERT INTO deployments (`+deploymentColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		d.ID, d.OrganisationID, d.Slug, d.Name, d.Description, d.Type, d.ConfigRef, string(d.Config), ws, lim, micros(now), micros(now))
	if isUniqueViolation(err) {
		return deploymentSlugTaken(d.Slug)
	}
	if err != nil {
		return fmt.Errorf("store: create deployment: %w", err)
	}
	return nil
}

// Deployment returns the organisation's deployment named by slug or id, or
// an error wrapping httpx.ErrNotFound.
func (s *Store) Deployment(ctx context.Context, organisationID, slugOrID string) (*registry.Deployment, error) {
	d, err := s.deployment(ctx, s.r, organisationID, slugOrID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, deploymentNotFound(slugOrID)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get deployment: %w", err)
	}
	return d, nil
}

func (s *Store) deployment(ctx context.Context, db sqlx.QueryerContext, organisationID, slugOrID string) (*registry.Deployment, error) {
	row, err := bySlugOrID[deploymentRow](ctx, s, db, "deployments", deploymentColumns, organisationID, slugOrID)
	if err != nil {
		return nil, err
	}
	return row.deployment()
}

// ListDeployments returns a page of the organisation's deployments
// matching f, newest first, and how many match in all.
func (s *Store) ListDeployments(ctx context.Context, organisationID string, f registry.DeploymentFilter, page, pageSize int) ([]*registry.Deployment, int, error) {
	where := []string{`organisation_id = ?`}
	args := []any{organisationID}
	if f.Type != "" {
		where = append(where, `type = ?`)
		args = append(args, f.Type)
	}
	if f.WorkspaceID != "" {
		// workspace_ids is a JSON array of ids, written only by
		// deploymentText: "[]" or ids quoted and comma-separated. Ids are
		// UUIDs, which hold no LIKE wildcard.
		where = append(where, `(workspace_ids = '[]' OR workspace_ids LIKE ?)`)
		args = append(args, `%"`+f.WorkspaceID+`"%`)
	}
	var rows []deploymentRow
	total, err := selectPage(ctx, s, &rows, "deployments", deploymentColumns, strings.Join(where, " AND "), args, "created_at DESC, id DESC", page, pageSize)
	if err != nil {
		return nil, 0, fmt.Errorf("store: list deployments: %w", err)
	}
	out, err := convertRows(rows, (*deploymentRow).deployment)
	if err != nil {
		return nil, 0, fmt.Errorf("store: list deployments: %w", err)
	}
	return out, total, nil
}

// UpdateDeployment saves every field of the deployment with d.ID in
// d.OrganisationID but its creation time, and sets d.UpdatedAt. A slug
// taken by another deployment is a conflict.
func (s *Store) UpdateDeployment(ctx context.Context, d *registry.Deployment) error {
	ws, lim, err := deploymentText(d)
	if err != nil {
		return fmt.Errorf("store: update deployment: %w", err)
	}
	now := s.stamp()
	res, err := s.w.ExecContext(ctx, s.q(`UPDATE deployments SET slug = ?, name = ?, description = ?, type = ?, config_ref = ?,
		config = ?, workspace_ids = ?, limits = ?, updated_at = ? WHERE id = ? AND organisation_id = ?`),
		d.Slug, d.Name, d.Description, d.Type, d.ConfigRef, string(d.Config), ws, lim, micros(now), d.ID, d.OrganisationID)
	if isUniqueViolation(err) {
		return deploymentSlugTaken(d.Slug)
	}
	if err != nil {
		return fmt.Errorf("store: update deployment: %w", err)
	}
	// MySQL counts matched rows (clientFoundRows) or changed ones; an
	// update always changes updated_at unless two land in one
	// microsecond, so look the row up rather than trust zero.
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("store: update deployment: %w", err)
	} else if n == 0 {
		_, err := s.deployment(ctx, s.w, d.OrganisationID, d.ID)
		if errors.Is(err, sql.ErrNoRows) {
			return deploymentNotFound(d.ID)
		}
		if err != nil {
			return fmt.Errorf("store: update deployment: %w", err)
		}
	}
	d.UpdatedAt = now
	return nil
}

// DeleteDeployment deletes the organisation's deployment named by slug or
// id and returns it, or an error wrapping httpx.ErrNotFound.
func (s *Store) DeleteDeployment(ctx context.Context, organisationID, slugOrID string) (*registry.Deployment, error) {
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store: delete deployment: %w", err)
	}
	defer rollback(tx)
	d, err := s.deployment(ctx, tx, organisationID, slugOrID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, deploymentNotFound(slugOrID)
	}
	if err != nil {
		return nil, fmt.Errorf("store: delete deployment: %w", err)
	}
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM deployments WHERE id = ?`), d.ID); err != nil {
		return nil, fmt.Errorf("store: delete deployment: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("store: delete deployment: commit: %w", err)
	}
	return d, nil
}
