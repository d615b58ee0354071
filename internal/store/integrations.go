package store

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/jmoiron/sqlx"

	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/registry"
)

// Integrations and providers (API.md §6). An integration's model
// allow-list, workspace sharing and tags live in tables of their own
// (migration 00030) and are written in the same transaction as the row.

// integrationRow is an integrations row as stored; SealedKey is standard
// base64, as for virtual keys.
type integrationRow struct {
	ID             string         `db:"id"`
	OrganisationID string         `db:"organisation_id"`
	Slug           string         `db:"slug"`
	Name           string         `db:"name"`
	Description    string         `db:"description"`
	AIProvider     string         `db:"ai_provider"`
	SealedKey      string         `db:"sealed_key"`
	CustomHost     string         `db:"custom_host"`
	Options        sql.NullString `db:"options"`
	Tags           sql.NullString `db:"tags"`
	RateLimits     sql.NullString `db:"rate_limits"`
	UsageLimits    sql.NullString `db:"usage_limits"`
	Status         string         `db:"status"`
	GlobalAccess   int            `db:"global_access"`
	CreatedAt      int64          `db:"created_at"`
	UpdatedAt      int64          `db:"updated_at"`
}

const integrationColumns = `id, organisation_id, slug, name, description, ai_provider, sealed_key, custom_host,
	options, tags, rate_limits, usage_limits, status, global_access, created_at, updated_at`

func (r *integrationRow) slugValue() string { return r.Slug }

func (r *integrationRow) integration() (*registry.Integration, error) {
	in := &registry.Integration{
		ID: r.ID, OrganisationID: r.OrganisationID, Slug: r.Slug, Name: r.Name, Description: r.Description,
		AIProvider: r.AIProvider, CustomHost: r.CustomHost, Status: r.Status,
		Access:    registry.WorkspaceAccess{Global: r.GlobalAccess != 0},
		CreatedAt: fromMicros(r.CreatedAt), UpdatedAt: fromMicros(r.UpdatedAt),
	}
	if r.SealedKey != "" {
		b, err := base64.StdEncoding.DecodeString(r.SealedKey)
		if err != nil {
			return nil, fmt.Errorf("integration %s: sealed key: %w", r.ID, err)
		}
		in.SealedKey = b
	}
	if err := decodeMap(r.Options, &in.Options); err != nil {
		return nil, fmt.Errorf("integration %s: options: %w", r.ID, err)
	}
	if err := decodeMap(r.Tags, &in.Tags); err != nil {
		return nil, fmt.Errorf("integration %s: tags: %w", r.ID, err)
	}
	in.RateLimits = rawOrNil(r.RateLimits)
	in.UsageLimits = rawOrNil(r.UsageLimits)
	return in, nil
}

// providerRow is a providers row as stored.
type providerRow struct {
	ID             string         `db:"id"`
	OrganisationID string         `db:"organisation_id"`
	WorkspaceID    string         `db:"workspace_id"`
	IntegrationID  string         `db:"integration_id"`
	Slug           string         `db:"slug"`
	Name           string         `db:"name"`
	Note           string         `db:"note"`
	Tags           sql.NullString `db:"tags"`
	RateLimits     sql.NullString `db:"rate_limits"`
	UsageLimits    sql.NullString `db:"usage_limits"`
	Status         string         `db:"status"`
	CreatedAt      int64          `db:"created_at"`
	UpdatedAt      int64          `db:"updated_at"`
}

const providerColumns = `id, organisation_id, workspace_id, integration_id, slug, name, note, tags,
	rate_limits, usage_limits, status, created_at, updated_at`

func (r *providerRow) provider() (*registry.Provider, error) {
	p := &registry.Provider{
		ID: r.ID, OrganisationID: r.OrganisationID, WorkspaceID: r.WorkspaceID, IntegrationID: r.IntegrationID,
		Slug: r.Slug, Name: r.Name, Note: r.Note, Status: r.Status,
		RateLimits: rawOrNil(r.RateLimits), UsageLimits: rawOrNil(r.UsageLimits),
		CreatedAt: fromMicros(r.CreatedAt), UpdatedAt: fromMicros(r.UpdatedAt),
	}
	if err := decodeMap(r.Tags, &p.Tags); err != nil {
		return nil, fmt.Errorf("provider %s: tags: %w", r.ID, err)
	}
	return p, nil
}

func decodeMap(s sql.NullString, m *map[string]string) error {
	if !s.Valid || s.String == "" {
		return nil
	}
	return json.Unmarshal([]byte(s.String), m)
}

func rawOrNil(s sql.NullString) json.RawMessage {
	if !s.Valid || s.String == "" {
		return nil
	}
	return json.RawMessage(s.String)
}

// nullMap stores an empty map as NULL.
func nullMap(m map[string]string) (sql.NullString, error) {
	if len(m) == 0 {
		return sql.NullString{}, nil
	}
	b, err := json.Marshal(m)
	return sql.NullString{String: string(b), Valid: true}, err
}

func integrationNotFound(slugOrID string) error {
	return fmt.Errorf("integration %q: %w", slugOrID, httpx.ErrNotFound)
}

func providerNotFound(slugOrID string) error {
	return fmt.Errorf("provider %q: %w", slugOrID, httpx.ErrNotFound)
}

// CreateIntegration stores in, filling its ID, status ("active") and
// timestamps when empty. A new integration is shared as in.Access says
// (the control plane creates them shared with every workspace). A slug
// already used in the organisation is a conflict (httpx.ErrConflict).
func (s *Store) CreateIntegration(ctx context.Context, in *registry.Integration) error {
	if in.Slug == "" {
		return errors.New("store: create integration: slug is required")
	}
	if in.ID == "" {
		in.ID = newID()
	}
	if in.Status == "" {
		in.Status = registry.StatusActive
	}
	now := s.stamp()
	if in.CreatedAt.IsZero() {
		in.CreatedAt = now
	}
	if in.UpdatedAt.IsZero() {
		in.UpdatedAt = in.CreatedAt
	}
	options, err := nullMap(in.Options)
	if err != nil {
		return fmt.Errorf("store: create integration: %w", err)
	}
	tags, err := nullMap(in.Tags)
	if err != nil {
		return fmt.Errorf("store: create integration: %w", err)
	}
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: create integration: %w", err)
	}
	defer rollback(tx)
	_, err = tx.ExecContext(ctx, s.q(`INSERT INTO integrations (`+integrationColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		in.ID, in.OrganisationID, in.Slug, in.Name, in.Description, in.AIProvider,
		base64.StdEncoding.EncodeToString(in.SealedKey), in.CustomHost, options, tags,
		nullJSON(in.RateLimits), nullJSON(in.UsageLimits), in.Status, boolInt(in.Access.Global),
		micros(in.CreatedAt), micros(in.UpdatedAt))
	if isUniqueViolation(err) {
		return fmt.Errorf("integration slug %q: %w", in.Slug, httpx.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("store: create integration: %w", err)
	}
	if err := s.writeTags(ctx, tx, in.ID, in.Tags); err != nil {
		return fmt.Errorf("store: create integration: %w", err)
	}
	if err := s.writeModels(ctx, tx, in.ID, in.Models); err != nil {
		return fmt.Errorf("store: create integration: %w", err)
	}
	if err := s.writeAccess(ctx, tx, in.ID, in.Access.WorkspaceIDs); err != nil {
		return fmt.Errorf("store: create integration: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: create integration: commit: %w", err)
	}
	return nil
}

// writeTags replaces the tag rows of resource id.
func (s *Store) writeTags(ctx context.Context, tx *sqlx.Tx, id string, tags map[string]string) error {
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM catalog_tags WHERE resource_id = ?`), id); err != nil {
		return err
	}
	for k, v := range tags {
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO catalog_tags (resource_id, tag_key, tag_value) VALUES (?, ?, ?)`), id, k, v); err != nil {
			return fmt.Errorf("tag %q: %w", k, err)
		}
	}
	return nil
}

// writeModels replaces an integration's model allow-list, keeping its
// order.
func (s *Store) writeModels(ctx context.Context, tx *sqlx.Tx, id string, models []registry.IntegrationModel) error {
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM integration_models WHERE integration_id = ?`), id); err != nil {
		return err
	}
	for i, m := range models {
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO integration_models (integration_id, model, enabled, sort_order) VALUES (?, ?, ?, ?)`),
			id, m.Slug, boolInt(m.Enabled), i); err != nil {
			if isUniqueViolation(err) {
				return fmt.Errorf("model %q listed twice: %w", m.Slug, httpx.ErrConflict)
			}
			return fmt.Errorf("model %q: %w", m.Slug, err)
		}
	}
	return nil
}

// writeAccess replaces the workspaces an integration is shared with.
func (s *Store) writeAccess(ctx context.Context, tx *sqlx.Tx, id string, workspaceIDs []string) error {
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM integration_workspaces WHERE integration_id = ?`), id); err != nil {
		return err
	}
	for _, ws := range workspaceIDs {
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO integration_workspaces (integration_id, workspace_id) VALUES (?, ?)`), id, ws); err != nil {
			if isUniqueViolation(err) {
				continue
			}
			return fmt.Errorf("workspace %q: %w", ws, err)
		}
	}
	return nil
}

// Integration returns the organisation's integration by slug or id, with
// its model allow-list and workspace sharing, or an error wrapping
// httpx.ErrNotFound.
func (s *Store) Integration(ctx context.Context, organisationID, slugOrID string) (*registry.Integration, error) {
	in, err := s.integration(ctx, s.r, organisationID, slugOrID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, integrationNotFound(slugOrID)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get integration: %w", err)
	}
	return in, nil
}

func (s *Store) integration(ctx context.Context, db sqlx.QueryerContext, organisationID, slugOrID string) (*registry.Integration, error) {
	row, err := bySlugOrID[integrationRow](ctx, s, db, "integrations", integrationColumns, organisationID, slugOrID)
	if err != nil {
		return nil, err
	}
	in, err := row.integration()
	if err != nil {
		return nil, err
	}
	if err := s.loadIntegrationDetails(ctx, db, in); err != nil {
		return nil, err
	}
	return in, nil
}

// loadIntegrationDetails reads an integration's allow-list and sharing.
func (s *Store) loadIntegrationDetails(ctx context.Context, db sqlx.QueryerContext, in *registry.Integration) error {
	var models []struct {
		Model   string `db:"model"`
		Enabled int    `db:"enabled"`
	}
	if err := sqlx.SelectContext(ctx, db, &models, s.q(`SELECT model, enabled FROM integration_models
		WHERE integration_id = ? ORDER BY sort_order`), in.ID); err != nil {
		return fmt.Errorf("integration %s: models: %w", in.ID, err)
	}
	for _, m := range models {
		in.Models = append(in.Models, registry.IntegrationModel{Slug: m.Model, Enabled: m.Enabled != 0})
	}
	if err := sqlx.SelectContext(ctx, db, &in.Access.WorkspaceIDs, s.q(`SELECT workspace_id FROM integration_workspaces
		WHERE integration_id = ? ORDER BY workspace_id`), in.ID); err != nil {
		return fmt.Errorf("integration %s: workspaces: %w", in.ID, err)
	}
	return nil
}

// tagWhere adds one condition per tag pair: the row's id must have that
// tag. Pairs are added in key order, so the query text is stable.
func tagWhere(where string, args []any, tags map[string]string) (string, []any) {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		where += ` AND id IN (SELECT resource_id FROM catalog_tags WHERE tag_key = ? AND tag_value = ?)`
		args = append(args, k, tags[k])
	}
	return where, args
}

// ListIntegrations returns a page of the organisation's integrations,
// newest first, and how many match in all. f.WorkspaceID narrows to those
// shared with that workspace; f.Tags to those carrying every pair.
func (s *Store) ListIntegrations(ctx context.Context, f registry.Filter) ([]*registry.Integration, int, error) {
	where := `organisation_id = ?`
	args := []any{f.OrganisationID}
	if f.WorkspaceID != "" {
		where += ` AND (global_access = 1 OR id IN (SELECT integration_id FROM integration_workspaces WHERE workspace_id = ?))`
		args = append(args, f.WorkspaceID)
	}
	where, args = tagWhere(where, args, f.Tags)
	var rows []integrationRow
	total, err := selectPage(ctx, s, &rows, "integrations", integrationColumns, where, args, "created_at DESC, id DESC", f.Page, f.PageSize)
	if err != nil {
		return nil, 0, fmt.Errorf("store: list integrations: %w", err)
	}
	out := make([]*registry.Integration, 0, len(rows))
	for i := range rows {
		in, err := rows[i].integration()
		if err == nil {
			err = s.loadIntegrationDetails(ctx, s.r, in)
		}
		if err != nil {
			return nil, 0, fmt.Errorf("store: list integrations: %w", err)
		}
		out = append(out, in)
	}
	return out, total, nil
}

// UpdateIntegration writes every field of in (slug, name, description,
// provider, sealed key, custom host, options, tags, limits, status) to the
// row with in.ID, and sets in.UpdatedAt. The allow-list and sharing have
// their own calls.
func (s *Store) UpdateIntegration(ctx context.Context, in *registry.Integration) error {
	options, err := nullMap(in.Options)
	if err != nil {
		return fmt.Errorf("store: update integration: %w", err)
	}
	tags, err := nullMap(in.Tags)
	if err != nil {
		return fmt.Errorf("store: update integration: %w", err)
	}
	updated := s.stamp()
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: update integration: %w", err)
	}
	defer rollback(tx)
	res, err := tx.ExecContext(ctx, s.q(`UPDATE integrations SET slug = ?, name = ?, description = ?, ai_provider = ?,
		sealed_key = ?, custom_host = ?, options = ?, tags = ?, rate_limits = ?, usage_limits = ?, status = ?, updated_at = ?
		WHERE id = ? AND organisation_id = ?`),
		in.Slug, in.Name, in.Description, in.AIProvider, base64.StdEncoding.EncodeToString(in.SealedKey), in.CustomHost,
		options, tags, nullJSON(in.RateLimits), nullJSON(in.UsageLimits), in.Status, micros(updated), in.ID, in.OrganisationID)
	if isUniqueViolation(err) {
		return fmt.Errorf("integration slug %q: %w", in.Slug, httpx.ErrConflict)
	}
	if err := touched(res, err, integrationNotFound(in.ID)); err != nil {
		return fmt.Errorf("store: update integration: %w", err)
	}
	if err := s.writeTags(ctx, tx, in.ID, in.Tags); err != nil {
		return fmt.Errorf("store: update integration: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: update integration: commit: %w", err)
	}
	in.UpdatedAt = updated
	return nil
}

// touched turns an UPDATE's result into notFound when it changed no row.
// updated_at changes on every call, so zero rows means no such row on
// every dialect (MySQL counts only changed rows).
func touched(res sql.Result, err error, notFound error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound
	}
	return nil
}

// SetIntegrationModels replaces the model allow-list of the integration
// with id and returns it as stored.
func (s *Store) SetIntegrationModels(ctx context.Context, organisationID, id string, models []registry.IntegrationModel) (*registry.Integration, error) {
	return s.changeIntegration(ctx, organisationID, id, func(tx *sqlx.Tx) error {
		return s.writeModels(ctx, tx, id, models)
	})
}

// SetIntegrationAccess replaces the workspaces the integration with id is
// shared with and returns it as stored.
func (s *Store) SetIntegrationAccess(ctx context.Context, organisationID, id string, access registry.WorkspaceAccess) (*registry.Integration, error) {
	return s.changeIntegration(ctx, organisationID, id, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE integrations SET global_access = ? WHERE id = ?`), boolInt(access.Global), id); err != nil {
			return err
		}
		return s.writeAccess(ctx, tx, id, access.WorkspaceIDs)
	})
}

// changeIntegration runs change in a transaction that also advances the
// integration's updated_at, and reads the integration back.
func (s *Store) changeIntegration(ctx context.Context, organisationID, id string, change func(tx *sqlx.Tx) error) (*registry.Integration, error) {
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store: update integration: %w", err)
	}
	defer rollback(tx)
	res, err := tx.ExecContext(ctx, s.q(`UPDATE integrations SET updated_at = ? WHERE id = ? AND organisation_id = ?`),
		micros(s.stamp()), id, organisationID)
	if err := touched(res, err, integrationNotFound(id)); err != nil {
		return nil, fmt.Errorf("store: update integration: %w", err)
	}
	if err := change(tx); err != nil {
		return nil, fmt.Errorf("store: update integration: %w", err)
	}
	in, err := s.integration(ctx, tx, organisationID, id)
	if err != nil {
		return nil, fmt.Errorf("store: update integration: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("store: update integration: commit: %w", err)
	}
	return in, nil
}

// DeleteIntegration deletes the organisation's integration named by slug
// or id, with its allow-list, sharing and tags, and returns it. An
// integration that providers still use is not deleted: the error wraps
// httpx.ErrConflict, so that no route loses its credential unnoticed.
func (s *Store) DeleteIntegration(ctx context.Context, organisationID, slugOrID string) (*registry.Integration, error) {
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store: delete integration: %w", err)
	}
	defer rollback(tx)
	in, err := s.integration(ctx, tx, organisationID, slugOrID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, integrationNotFound(slugOrID)
	}
	if err != nil {
		return nil, fmt.Errorf("store: delete integration: %w", err)
	}
	var users int
	if err := tx.GetContext(ctx, &users, s.q(`SELECT COUNT(*) FROM providers WHERE integration_id = ?`), in.ID); err != nil {
		return nil, fmt.Errorf("store: delete integration: %w", err)
	}
	if users > 0 {
		return nil, fmt.Errorf("integration %q is used by %d provider(s); delete them first: %w", in.Slug, users, httpx.ErrConflict)
	}
	for _, q := range []string{
		`DELETE FROM integration_models WHERE integration_id = ?`,
		`DELETE FROM integration_workspaces WHERE integration_id = ?`,
		`DELETE FROM catalog_tags WHERE resource_id = ?`,
		`DELETE FROM integrations WHERE id = ?`,
	} {
		if _, err := tx.ExecContext(ctx, s.q(q), in.ID); err != nil {
			return nil, fmt.Errorf("store: delete integration: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("store: delete integration: commit: %w", err)
	}
	return in, nil
}

// CreateProvider stores p, filling its ID, status and timestamps when
// empty. p.WorkspaceID and p.IntegrationID must be set (the control plane
// checks that the integration is shared with the workspace). A slug
// already used in the workspace is a conflict.
func (s *Store) CreateProvider(ctx context.Context, p *registry.Provider) error {
	if p.Slug == "" || p.WorkspaceID == "" || p.IntegrationID == "" {
		return errors.New("store: create provider: slug, workspace and integration are required")
	}
	if p.ID == "" {
		p.ID = newID()
	}
	if p.Status == "" {
		p.Status = registry.StatusActive
	}
	now := s.stamp()
	if p.CreatedAt.IsZero() {
		p.CreatedAt = now
	}
	if p.UpdatedAt.IsZero() {
		p.UpdatedAt = p.CreatedAt
	}
	tags, err := nullMap(p.Tags)
	if err != nil {
		return fmt.Errorf("store: create provider: %w", err)
	}
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: create provider: %w", err)
	}
	defer rollback(tx)
	_, err = tx.ExecContext(ctx, s.q(`INSERT INTO providers (`+providerColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		p.ID, p.OrganisationID, p.WorkspaceID, p.IntegrationID, p.Slug, p.Name, p.Note, tags,
		nullJSON(p.RateLimits), nullJSON(p.UsageLimits), p.Status, micros(p.CreatedAt), micros(p.UpdatedAt))
	if isUniqueViolation(err) {
		return fmt.Errorf("provider slug %q in this workspace: %w", p.Slug, httpx.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("store: create provider: %w", err)
	}
	if err := s.writeTags(ctx, tx, p.ID, p.Tags); err != nil {
		return fmt.Errorf("store: create provider: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: create provider: commit: %w", err)
	}
	return nil
}

// Provider returns the organisation's provider whose id is slugOrID, or
// whose slug is slugOrID in workspaceID (provider slugs are unique per
// workspace); a slug match wins. The error wraps httpx.ErrNotFound when
// neither matches.
func (s *Store) Provider(ctx context.Context, organisationID, workspaceID, slugOrID string) (*registry.Provider, error) {
	p, err := s.provider(ctx, s.r, organisationID, workspaceID, slugOrID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, providerNotFound(slugOrID)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get provider: %w", err)
	}
	return p, nil
}

func (s *Store) provider(ctx context.Context, db sqlx.QueryerContext, organisationID, workspaceID, slugOrID string) (*registry.Provider, error) {
	var rows []providerRow
	err := sqlx.SelectContext(ctx, db, &rows, s.q(`SELECT `+providerColumns+` FROM providers
		WHERE organisation_id = ? AND ((workspace_id = ? AND slug = ?) OR id = ?) LIMIT 2`),
		organisationID, workspaceID, slugOrID, slugOrID)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, sql.ErrNoRows
	}
	pick := &rows[0]
	for i := range rows {
		if rows[i].Slug == slugOrID && rows[i].WorkspaceID == workspaceID {
			pick = &rows[i]
		}
	}
	return pick.provider()
}

// ProviderBySlug returns the active-or-not provider the data plane names
// with @slug: the one with that slug in the organisation's workspace whose
// id or slug is workspace. It is what auth.ProviderStore asks for.
func (s *Store) ProviderBySlug(ctx context.Context, organisationID, workspace, slug string) (*registry.Provider, error) {
	var row providerRow
	err := s.r.GetContext(ctx, &row, s.q(`SELECT `+providerColumns+` FROM providers
		WHERE organisation_id = ? AND slug = ? AND workspace_id IN
			(SELECT id FROM workspaces WHERE organisation_id = ? AND (id = ? OR slug = ?))
		LIMIT 1`), organisationID, slug, organisationID, workspace, workspace)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, providerNotFound(slug)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get provider: %w", err)
	}
	return row.provider()
}

// ListProviders returns a page of the organisation's providers, newest
// first, and how many match in all; f.WorkspaceID narrows to one
// workspace, f.Tags to those carrying every pair.
func (s *Store) ListProviders(ctx context.Context, f registry.Filter) ([]*registry.Provider, int, error) {
	where, args := inWorkspace(f.OrganisationID, f.WorkspaceID)
	where, args = tagWhere(where, args, f.Tags)
	var rows []providerRow
	total, err := selectPage(ctx, s, &rows, "providers", providerColumns, where, args, "created_at DESC, id DESC", f.Page, f.PageSize)
	if err != nil {
		return nil, 0, fmt.Errorf("store: list providers: %w", err)
	}
	out, err := convertRows(rows, (*providerRow).provider)
	if err != nil {
		return nil, 0, fmt.Errorf("store: list providers: %w", err)
	}
	return out, total, nil
}

// UpdateProvider writes p's mutable fields (integration, name, note, tags,
// limits, status) to the row with p.ID, and sets p.UpdatedAt. The slug and
// workspace do not change.
func (s *Store) UpdateProvider(ctx context.Context, p *registry.Provider) error {
	tags, err := nullMap(p.Tags)
	if err != nil {
		return fmt.Errorf("store: update provider: %w", err)
	}
	updated := s.stamp()
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: update provider: %w", err)
	}
	defer rollback(tx)
	res, err := tx.ExecContext(ctx, s.q(`UPDATE providers SET integration_id = ?, name = ?, note = ?, tags = ?,
		rate_limits = ?, usage_limits = ?, status = ?, updated_at = ?
		WHERE id = ? AND organisation_id = ?`),
		p.IntegrationID, p.Name, p.Note, tags, nullJSON(p.RateLimits), nullJSON(p.UsageLimits), p.Status, micros(updated),
		p.ID, p.OrganisationID)
	if err := touched(res, err, providerNotFound(p.ID)); err != nil {
		return fmt.Errorf("store: update provider: %w", err)
	}
	if err := s.writeTags(ctx, tx, p.ID, p.Tags); err != nil {
		return fmt.Errorf("store: update provider: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: update provider: commit: %w", err)
	}
	p.UpdatedAt = updated
	return nil
}

// DeleteProvider deletes the provider with id in the organisation, with
// its tags, and returns it.
func (s *Store) DeleteProvider(ctx context.Context, organisationID, id string) (*registry.Provider, error) {
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store: delete provider: %w", err)
	}
	defer rollback(tx)
	var row providerRow
	err = tx.GetContext(ctx, &row, s.q(`SELECT `+providerColumns+` FROM providers WHERE organisation_id = ? AND id = ?`), organisationID, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, providerNotFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("store: delete provider: %w", err)
	}
	p, err := row.provider()
	if err != nil {
		return nil, fmt.Errorf("store: delete provider: %w", err)
	}
	for _, q := range []string{`DELETE FROM catalog_tags WHERE resource_id = ?`, `DELETE FROM providers WHERE id = ?`} {
		if _, err := tx.ExecContext(ctx, s.q(q), p.ID); err != nil {
			return nil, fmt.Errorf("store: delete provider: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("store: delete provider: commit: %w", err)
	}
	return p, nil
}
