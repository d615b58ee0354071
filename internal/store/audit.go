package store

import (
	"context"
	"fmt"

	"github.com/ai-gateway/gateway/internal/audit"
)

// auditRow is an audit_logs row as stored.
type auditRow struct {
	ID             string `db:"id"`
	OrganisationID string `db:"organisation_id"`
	CreatedAt      int64  `db:"created_at"`
	ActorType      string `db:"actor_type"`
	ActorID        string `db:"actor_id"`
	APIKeyID       string `db:"api_key_id"`
	Method         string `db:"method"`
	URI            string `db:"uri"`
	Action         string `db:"action"`
	ResourceType   string `db:"resource_type"`
	ResourceID     string `db:"resource_id"`
	WorkspaceID    string `db:"workspace_id"`
	StatusCode     int    `db:"status_code"`
	ClientIP       string `db:"client_ip"`
	RequestID      string `db:"request_id"`
	RequestBody    string `db:"request_body"`
}

const auditColumns = `id, organisation_id, created_at, actor_type, actor_id, api_key_id, method, uri, action,
	resource_type, resource_id, workspace_id, status_code, client_ip, request_id, request_body`

// Widths of the audit_logs VARCHAR columns (see the migration).
const (
	widthAuditType   = 32
	widthAuditAction = 64
	widthAuditIP     = 64
)

// InsertAuditRecord stores one audit record, filling its ID and Timestamp
// when empty. Values are cleaned and clipped like request-log values, so
// that no client input fails the insert on any dialect.
func (s *Store) InsertAuditRecord(ctx context.Context, r *audit.Record) error {
	if r.ID == "" {
		r.ID = newID()
	}
	if r.Timestamp.IsZero() {
		r.Timestamp = s.stamp()
	}
	body := clipBytes(cleanText(r.RequestBody), audit.MaxBody+64)
	_, err := s.w.ExecContext(ctx, s.q(`INSERT INTO audit_logs (`+auditColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		r.ID, short(r.OrganisationID, widthID), micros(r.Timestamp), short(r.ActorType, widthAuditType), short(r.ActorID, widthID),
		short(r.APIKeyID, widthID), short(r.Method, widthMethod), clipBytes(cleanText(r.URI), 8192),
		short(r.Action, widthAuditAction), short(r.ResourceType, widthAuditAction), short(r.ResourceID, widthShort),
		short(r.WorkspaceID, widthID), r.StatusCode, short(r.ClientIP, widthAuditIP), short(r.RequestID, widthAuditAction), body)
	if err != nil {
		return fmt.Errorf("store: insert audit record: %w", err)
	}
	return nil
}

// ListAuditRecords returns a page of the records matching f, newest first,
// and how many match.
func (s *Store) ListAuditRecords(ctx context.Context, f audit.Filter) ([]*audit.Record, int, error) {
	where := `organisation_id = ?`
	args := []any{f.OrganisationID}
	if !f.From.IsZero() {
		where += ` AND created_at >= ?`
		args = append(args, micros(f.From))
	}
	if !f.To.IsZero() {
		where += ` AND created_at <= ?`
		args = append(args, micros(f.To))
	}
	for _, c := range []struct {
		col, v string
		width  int
	}{
		{"method", f.Method, widthMethod}, {"actor_type", f.ActorType, widthAuditType}, {"actor_id", f.ActorID, widthID},
		{"resource_type", f.ResourceType, widthAuditAction}, {"resource_id", f.ResourceID, widthShort},
		{"action", f.Action, widthAuditAction}, {"workspace_id", f.WorkspaceID, widthID},
	} {
		if c.v != "" {
			where += ` AND ` + c.col + ` = ?`
			args = append(args, short(c.v, c.width))
		}
	}
	if f.StatusCode != 0 {
		where += ` AND status_code = ?`
		args = append(args, f.StatusCode)
	}
	var rows []auditRow
	total, err := selectPage(ctx, s, &rows, "audit_logs", auditColumns, where, args, "created_at DESC, id DESC", f.Page, f.PageSize)
	if err != nil {
		return nil, 0, fmt.Errorf("store: list audit records: %w", err)
	}
	out := make([]*audit.Record, 0, len(rows))
	for _, r := range rows {
		out = append(out, &audit.Record{
			ID: r.ID, OrganisationID: r.OrganisationID, Timestamp: fromMicros(r.CreatedAt), ActorType: r.ActorType,
			ActorID: r.ActorID, APIKeyID: r.APIKeyID, Method: r.Method, URI: r.URI, Action: r.Action,
			ResourceType: r.ResourceType, ResourceID: r.ResourceID, WorkspaceID: r.WorkspaceID, StatusCode: r.StatusCode,
			ClientIP: r.ClientIP, RequestID: r.RequestID, RequestBody: r.RequestBody,
		})
	}
	return out, total, nil
}
