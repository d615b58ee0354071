package store

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/registry"
)

// mcpIntegrationRow is an mcp_integrations row as stored (see 00050).
type mcpIntegrationRow struct {
	ID             string         `db:"id"`
	OrganisationID string         `db:"organisation_id"`
	Slug           string         `db:"slug"`
	Name           string         `db:"name"`
	Description    string         `db:"description"`
	URL            string         `db:"url"`
	Transport      string         `db:"transport"`
	AuthType       string         `db:"auth_type"`
	SealedHeaders  string         `db:"sealed_headers"`
	HeaderNames    sql.NullString `db:"header_names"`
	AllWorkspaces  int            `db:"all_workspaces"`
	WorkspaceIDs   sql.NullString `db:"workspace_ids"`
	Tags           sql.NullString `db:"tags"`
	Metadata       sql.NullString `db:"metadata"`
	CreatedAt      int64          `db:"created_at"`
	UpdatedAt      int64          `db:"updated_at"`
}

const mcpIntegrationColumns = `id, organisation_id, slug, name, description, url, transport, auth_type,
	sealed_headers, header_names, all_workspaces, workspace_ids, tags, metadata, created_at, updated_at`

// mcpServerRow is an mcp_servers row as stored.
type mcpServerRow struct {
	ID             string         `db:"id"`
	OrganisationID string         `db:"organisation_id"`
	WorkspaceID    string         `db:"workspace_id"`
	Slug           string         `db:"slug"`
	Name           string         `db:"name"`
	Description    string         `db:"description"`
	IntegrationID  string         `db:"mcp_integration_id"`
	Metadata       sql.NullString `db:"metadata"`
	CreatedAt      int64          `db:"created_at"`
	UpdatedAt      int64          `db:"updated_at"`
}

const mcpServerColumns = `id, organisation_id, workspace_id, slug, name, description, mcp_integration_id,
	metadata, created_at, updated_at`

func (r *mcpIntegrationRow) slugValue() string { return r.Slug }
func (r *mcpServerRow) slugValue() string      { return r.Slug }

func (r *mcpIntegrationRow) integration() (*registry.MCPIntegration, error) {
	i := &registry.MCPIntegration{
		ID: r.ID, OrganisationID: r.OrganisationID, Slug: r.Slug, Name: r.Name, Description: r.Description,
		URL: r.URL, Transport: r.Transport, AuthType: r.AuthType, AllWorkspaces: r.AllWorkspaces != 0,
		HeaderNames: []string{}, WorkspaceIDs: []string{},
		CreatedAt: fromMicros(r.CreatedAt), UpdatedAt: fromMicros(r.UpdatedAt),
	}
	if r.SealedHeaders != "" {
		b, err := base64.StdEncoding.DecodeString(r.SealedHeaders)
		if err != nil {
			return nil, fmt.Errorf("mcp integration %s: sealed headers: %w", r.ID, err)
		}
		i.SealedHeaders = b
	}
	for name, c := range map[string]struct {
		col sql.NullString
		dst any
	}{
		"header_names": {r.HeaderNames, &i.HeaderNames}, "workspace_ids": {r.WorkspaceIDs, &i.WorkspaceIDs},
		"tags": {r.Tags, &i.Tags},
	} {
		if !c.col.Valid {
			continue
		}
		if err := json.Unmarshal([]byte(c.col.String), c.dst); err != nil {
			return nil, fmt.Errorf("mcp integration %s: %s: %w", r.ID, name, err)
		}
	}
	md, err := readMCPMetadata(r.Metadata)
	if err != nil {
		return nil, fmt.Errorf("mcp integration %s: %w", r.ID, err)
	}
	i.Metadata = md
	return i, nil
}

func (r *mcpServerRow) server() (*registry.MCPServer, error) {
	md, err := readMCPMetadata(r.Metadata)
	if err != nil {
		return nil, fmt.Errorf("mcp server %s: %w", r.ID, err)
	}
	return &registry.MCPServer{
		ID: r.ID, OrganisationID: r.OrganisationID, WorkspaceID: r.WorkspaceID, Slug: r.Slug, Name: r.Name,
		Description: r.Description, IntegrationID: r.IntegrationID, Metadata: md,
		CreatedAt: fromMicros(r.CreatedAt), UpdatedAt: fromMicros(r.UpdatedAt),
	}, nil
}

// readMCPMetadata decodes a metadata column; NULL is "never synced".
func readMCPMetadata(col sql.NullString) (registry.MCPMetadata, error) {
	md := registry.MCPMetadata{SyncStatus: registry.MCPSyncNever, Icons: []registry.MCPIcon{}}
	if !col.Valid {
		return md, nil
	}
	if err := json.Unmarshal([]byte(col.String), &md); err != nil {
		return md, fmt.Errorf("metadata: %w", err)
	}
	if md.Icons == nil {
		md.Icons = []registry.MCPIcon{}
	}
	if md.LastSyncedAt != nil {
		t := md.LastSyncedAt.UTC()
		md.LastSyncedAt = &t
	}
	return md, nil
}

// writeMCPMetadata encodes md; a never-synced record is NULL.
func writeMCPMetadata(md registry.MCPMetadata) (sql.NullString, error) {
	if md.SyncStatus == "" || md.SyncStatus == registry.MCPSyncNever {
		return sql.NullString{}, nil
	}
	b, err := json.Marshal(md)
	if err != nil {
		return sql.NullString{}, err
	}
	return sql.NullString{String: string(b), Valid: true}, nil
}

// mcpJSONColumn encodes v as a JSON TEXT column; nil and empty values are NULL.
func mcpJSONColumn[T any](v []T) (sql.NullString, error) {
	if len(v) == 0 {
		return sql.NullString{}, nil
	}
	b, err := json.Marshal(v)
	return sql.NullString{String: string(b), Valid: err == nil}, err
}

// mcpIntegrationArgs returns i's mutable columns in the order slug, name,
// description, url, transport, auth_type, sealed_headers, header_names,
// all_workspaces, workspace_ids, tags, metadata.
func mcpIntegrationArgs(i *registry.MCPIntegration) ([]any, error) {
	names, err := mcpJSONColumn(i.HeaderNames)
	if err != nil {
		return nil, err
	}
	ws, err := mcpJSONColumn(i.WorkspaceIDs)
	if err != nil {
		return nil, err
	}
	var tags sql.NullString
	if len(i.Tags) > 0 {
		b, err := json.Marshal(i.Tags)
		if err != nil {
			return nil, err
		}
		tags = sql.NullString{String: string(b), Valid: true}
	}
	md, err := writeMCPMetadata(i.Metadata)
	if err != nil {
		return nil, err
	}
	all := 0
	if i.AllWorkspaces {
		all = 1
	}
	return []any{
		i.Slug, i.Name, i.Description, i.URL, i.Transport, i.AuthType, base64.StdEncoding.EncodeToString(i.SealedHeaders),
		names, all, ws, tags, md,
	}, nil
}

func mcpIntegrationNotFound(slugOrID string) error {
	return fmt.Errorf("MCP integration %q: %w", slugOrID, httpx.ErrNotFound)
}

func mcpServerNotFound(slugOrID string) error {
	return fmt.Errorf("MCP server %q: %w", slugOrID, httpx.ErrNotFound)
}

// CreateMCPIntegration stores i, filling its ID and timestamps when empty.
// A slug already used in the organisation is a conflict
// (httpx.ErrConflict). i.SealedHeaders must already be sealed for i.ID.
func (s *Store) CreateMCPIntegration(ctx context.Context, i *registry.MCPIntegration) error {
	if i.Slug == "" {
		return errors.New("store: create MCP integration: slug is required")
	}
	if i.ID == "" {
		i.ID = newID()
	}
	now := s.stamp()
	if i.CreatedAt.IsZero() {
		i.CreatedAt = now
	}
	if i.UpdatedAt.IsZero() {
		i.UpdatedAt = i.CreatedAt
	}
	args, err := mcpIntegrationArgs(i)
	if err != nil {
		return fmt.Errorf("store: create MCP integration: %w", err)
	}
	args = append([]any{i.ID, i.OrganisationID}, args...)
	args = append(args, micros(i.CreatedAt), micros(i.UpdatedAt))
	_, err = s.w.ExecContext(ctx, s.q(`INSERT INTO mcp_integrations (`+mcpIntegrationColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`), args...)
	if isUniqueViolation(err) {
		return fmt.Errorf("MCP integration slug %q: %w", i.Slug, httpx.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("store: create MCP integration: %w", err)
	}
	return nil
}

// MCPIntegration returns the organisation's MCP integration by slug or id,
// or an error wrapping httpx.ErrNotFound.
func (s *Store) MCPIntegration(ctx context.Context, organisationID, slugOrID string) (*registry.MCPIntegration, error) {
	i, err := s.mcpIntegration(ctx, s.r, organisationID, slugOrID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, mcpIntegrationNotFound(slugOrID)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get MCP integration: %w", err)
	}
	return i, nil
}

func (s *Store) mcpIntegration(ctx context.Context, db sqlx.QueryerContext, organisationID, slugOrID string) (*registry.MCPIntegration, error) {
	row, err := bySlugOrID[mcpIntegrationRow](ctx, s, db, "mcp_integrations", mcpIntegrationColumns, organisationID, slugOrID)
	if err != nil {
		return nil, err
	}
	return row.integration()
}

// ListMCPIntegrations returns a page of the organisation's MCP
// integrations, newest first, and how many there are. A non-empty
// workspaceID narrows the list to those shared with that workspace.
func (s *Store) ListMCPIntegrations(ctx context.Context, organisationID, workspaceID string, page, pageSize int) ([]*registry.MCPIntegration, int, error) {
	where := `organisation_id = ?`
	args := []any{organisationID}
	if workspaceID != "" {
		// workspace_ids is a JSON array of UUIDs, which hold no LIKE
		// wildcards; the quotes make the match exact.
		where += ` AND (all_workspaces = 1 OR workspace_ids LIKE ?)`
		args = append(args, `%"`+workspaceID+`"%`)
	}
	var rows []mcpIntegrationRow
	total, err := selectPage(ctx, s, &rows, "mcp_integrations", mcpIntegrationColumns, where, args, "created_at DESC, id DESC", page, pageSize)
	if err != nil {
		return nil, 0, fmt.Errorf("store: list MCP integrations: %w", err)
	}
	out, err := convertRows(rows, (*mcpIntegrationRow).integration)
	if err != nil {
		return nil, 0, fmt.Errorf("store: list MCP integrations: %w", err)
	}
	return out, total, nil
}

// UpdateMCPIntegration writes every mutable field of i (metadata included)
// to the row with i.ID in i.OrganisationID and sets i.UpdatedAt.
func (s *Store) UpdateMCPIntegration(ctx context.Context, i *registry.MCPIntegration) error {
	args, err := mcpIntegrationArgs(i)
	if err != nil {
		return fmt.Errorf("store: update MCP integration: %w", err)
	}
	updated := s.stamp()
	args = append(args, micros(updated), i.ID, i.OrganisationID)
	res, err := s.w.ExecContext(ctx, s.q(`UPDATE mcp_integrations SET slug = ?, name = ?, description = ?, url = ?,
		transport = ?, auth_type = ?, sealed_headers = ?, header_names = ?, all_workspaces = ?, workspace_ids = ?,
		tags = ?, metadata = ?, updated_at = ?
		WHERE id = ? AND organisation_id = ?`), args...)
	if isUniqueViolation(err) {
		return fmt.Errorf("MCP integration slug %q: %w", i.Slug, httpx.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("store: update MCP integration: %w", err)
	}
	if err := mcpOneRow(res, mcpIntegrationNotFound(i.ID)); err != nil {
		return fmt.Errorf("store: update MCP integration: %w", err)
	}
	i.UpdatedAt = updated
	return nil
}

// mcpOneRow returns notFound when res affected no row. updated_at changes on
// every update, so MySQL's count of changed rows is zero only when there
// is no such row.
func mcpOneRow(res sql.Result, notFound error) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound
	}
	return nil
}

// DeleteMCPIntegration deletes the organisation's MCP integration named by
// slug or id and returns it. It is a conflict (httpx.ErrConflict) while
// MCP servers use it, and httpx.ErrNotFound when there is none.
func (s *Store) DeleteMCPIntegration(ctx context.Context, organisationID, slugOrID string) (*registry.MCPIntegration, error) {
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store: delete MCP integration: %w", err)
	}
	defer rollback(tx)
	i, err := s.mcpIntegration(ctx, tx, organisationID, slugOrID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, mcpIntegrationNotFound(slugOrID)
	}
	if err != nil {
		return nil, fmt.Errorf("store: delete MCP integration: %w", err)
	}
	var n int
	if err := tx.GetContext(ctx, &n, s.q(`SELECT COUNT(*) FROM mcp_servers WHERE mcp_integration_id = ?`), i.ID); err != nil {
		return nil, fmt.Errorf("store: delete MCP integration: %w", err)
	}
	if n > 0 {
		return nil, fmt.Errorf("MCP integration %q is used by %d MCP server(s); delete them first: %w", i.Slug, n, httpx.ErrConflict)
	}
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM mcp_integrations WHERE id = ?`), i.ID); err != nil {
		return nil, fmt.Errorf("store: delete MCP integration: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("store: delete MCP integration: commit: %w", err)
	}
	return i, nil
}

// CreateMCPServer stores v, filling its ID and timestamps when empty, and
// its workspace with the organisation's default one when empty. A slug
// already used in the organisation is a conflict.
func (s *Store) CreateMCPServer(ctx context.Context, v *registry.MCPServer) error {
	if v.Slug == "" {
		return errors.New("store: create MCP server: slug is required")
	}
	if v.ID == "" {
		v.ID = newID()
	}
	now := s.stamp()
	if v.CreatedAt.IsZero() {
		v.CreatedAt = now
	}
	if v.UpdatedAt.IsZero() {
		v.UpdatedAt = v.CreatedAt
	}
	md, err := writeMCPMetadata(v.Metadata)
	if err != nil {
		return fmt.Errorf("store: create MCP server: %w", err)
	}
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: create MCP server: %w", err)
	}
	defer rollback(tx)
	if v.WorkspaceID == "" {
		v.WorkspaceID, err = s.defaultWorkspaceID(ctx, tx, v.OrganisationID)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("default workspace of organisation %q: %w", v.OrganisationID, httpx.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("store: create MCP server: %w", err)
		}
	}
	_, err = tx.ExecContext(ctx, s.q(`INSERT INTO mcp_servers (`+mcpServerColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		v.ID, v.OrganisationID, v.WorkspaceID, v.Slug, v.Name, v.Description, v.IntegrationID, md,
		micros(v.CreatedAt), micros(v.UpdatedAt))
	if isUniqueViolation(err) {
		return fmt.Errorf("MCP server slug %q: %w", v.Slug, httpx.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("store: create MCP server: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: create MCP server: commit: %w", err)
	}
	return nil
}

// MCPServer returns the organisation's MCP server by slug or id, or an
// error wrapping httpx.ErrNotFound.
func (s *Store) MCPServer(ctx context.Context, organisationID, slugOrID string) (*registry.MCPServer, error) {
	v, err := s.mcpServer(ctx, s.r, organisationID, slugOrID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, mcpServerNotFound(slugOrID)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get MCP server: %w", err)
	}
	return v, nil
}

func (s *Store) mcpServer(ctx context.Context, db sqlx.QueryerContext, organisationID, slugOrID string) (*registry.MCPServer, error) {
	row, err := bySlugOrID[mcpServerRow](ctx, s, db, "mcp_servers", mcpServerColumns, organisationID, slugOrID)
	if err != nil {
		return nil, err
	}
	return row.server()
}

// ListMCPServers returns a page of the organisation's MCP servers, newest
// first, and how many there are. An empty workspaceID lists every
// workspace's servers.
func (s *Store) ListMCPServers(ctx context.Context, organisationID, workspaceID string, page, pageSize int) ([]*registry.MCPServer, int, error) {
	where, args := inWorkspace(organisationID, workspaceID)
	var rows []mcpServerRow
	total, err := selectPage(ctx, s, &rows, "mcp_servers", mcpServerColumns, where, args, "created_at DESC, id DESC", page, pageSize)
	if err != nil {
		return nil, 0, fmt.Errorf("store: list MCP servers: %w", err)
	}
	out, err := convertRows(rows, (*mcpServerRow).server)
	if err != nil {
		return nil, 0, fmt.Errorf("store: list MCP servers: %w", err)
	}
	return out, total, nil
}

// UpdateMCPServer writes v's name, description, integration and metadata
// to the row with v.ID in v.OrganisationID and sets v.UpdatedAt. The slug
// and workspace stay.
func (s *Store) UpdateMCPServer(ctx context.Context, v *registry.MCPServer) error {
	md, err := writeMCPMetadata(v.Metadata)
	if err != nil {
		return fmt.Errorf("store: update MCP server: %w", err)
	}
	updated := s.stamp()
	res, err := s.w.ExecContext(ctx, s.q(`UPDATE mcp_servers SET name = ?, description = ?, mcp_integration_id = ?,
		metadata = ?, updated_at = ? WHERE id = ? AND organisation_id = ?`),
		v.Name, v.Description, v.IntegrationID, md, micros(updated), v.ID, v.OrganisationID)
	if err != nil {
		return fmt.Errorf("store: update MCP server: %w", err)
	}
	if err := mcpOneRow(res, mcpServerNotFound(v.ID)); err != nil {
		return fmt.Errorf("store: update MCP server: %w", err)
	}
	v.UpdatedAt = updated
	return nil
}

// DeleteMCPServer deletes the organisation's MCP server named by slug or
// id and returns it, or an error wrapping httpx.ErrNotFound.
func (s *Store) DeleteMCPServer(ctx context.Context, organisationID, slugOrID string) (*registry.MCPServer, error) {
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store: delete MCP server: %w", err)
	}
	defer rollback(tx)
	v, err := s.mcpServer(ctx, tx, organisationID, slugOrID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, mcpServerNotFound(slugOrID)
	}
	if err != nil {
		return nil, fmt.Errorf("store: delete MCP server: %w", err)
	}
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM mcp_servers WHERE id = ?`), v.ID); err != nil {
		return nil, fmt.Errorf("store: delete MCP server: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("store: delete MCP server: commit: %w", err)
	}
	return v, nil
}

// RecordMCPSync stores md, the outcome of a metadata fetch, on the
// organisation's MCP server serverID and on the integration it uses, without
// touching their updated_at (a sync is not an edit). It returns
// httpx.ErrNotFound when the server is gone.
func (s *Store) RecordMCPSync(ctx context.Context, organisationID, serverID string, md registry.MCPMetadata) error {
	col, err := writeMCPMetadata(md)
	if err != nil {
		return fmt.Errorf("store: record MCP sync: %w", err)
	}
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: record MCP sync: %w", err)
	}
	defer rollback(tx)
	var integrationID []string
	if err := tx.SelectContext(ctx, &integrationID, s.q(`SELECT mcp_integration_id FROM mcp_servers
		WHERE id = ? AND organisation_id = ?`), serverID, organisationID); err != nil {
		return fmt.Errorf("store: record MCP sync: %w", err)
	}
	if len(integrationID) == 0 {
		return mcpServerNotFound(serverID)
	}
	if _, err := tx.ExecContext(ctx, s.q(`UPDATE mcp_servers SET metadata = ? WHERE id = ?`), col, serverID); err != nil {
		return fmt.Errorf("store: record MCP sync: %w", err)
	}
	if _, err := tx.ExecContext(ctx, s.q(`UPDATE mcp_integrations SET metadata = ? WHERE id = ? AND organisation_id = ?`),
		col, integrationID[0], organisationID); err != nil {
		return fmt.Errorf("store: record MCP sync: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: record MCP sync: commit: %w", err)
	}
	return nil
}
