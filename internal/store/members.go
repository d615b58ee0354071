package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/tenancy"
)

// memberRow is a workspace_members row joined with its user.
type memberRow struct {
	WorkspaceID string `db:"workspace_id"`
	UserID      string `db:"user_id"`
	Role        string `db:"role"`
	Email       string `db:"email"`
	Name        string `db:"name"`
	OrgRole     string `db:"org_role"`
	CreatedAt   int64  `db:"created_at"`
}

const memberSelect = `SELECT m.workspace_id, m.user_id, m.role, u.email, u.name, u.role AS org_role, m.created_at
	FROM workspace_members m JOIN users u ON u.id = m.user_id`

func (r *memberRow) member() *tenancy.Member {
	return &tenancy.Member{
		WorkspaceID: r.WorkspaceID, UserID: r.UserID, Role: r.Role, Email: r.Email, Name: r.Name, OrgRole: r.OrgRole,
		CreatedAt: fromMicros(r.CreatedAt),
	}
}

func memberNotFound(userID string) error {
	return fmt.Errorf("member %q of the workspace: %w", userID, httpx.ErrNotFound)
}

// AddMember makes the user a member of the workspace with role. The caller
// checks that both belong to one organisation. An existing membership wraps
// httpx.ErrConflict.
func (s *Store) AddMember(ctx context.Context, workspaceID, userID, role string) (*tenancy.Member, error) {
	_, err := s.w.ExecContext(ctx, s.q(`INSERT INTO workspace_members (workspace_id, user_id, role, created_at) VALUES (?, ?, ?, ?)`),
		workspaceID, userID, role, micros(s.stamp()))
	if isUniqueViolation(err) {
		return nil, fmt.Errorf("user %q is already a member of the workspace: %w", userID, httpx.ErrConflict)
	}
	if err != nil {
		return nil, fmt.Errorf("store: add member: %w", err)
	}
	return s.Member(ctx, workspaceID, userID)
}

// Member returns the user's membership of the workspace, or an error
// wrapping httpx.ErrNotFound.
func (s *Store) Member(ctx context.Context, workspaceID, userID string) (*tenancy.Member, error) {
	var row memberRow
	err := s.r.GetContext(ctx, &row, s.q(memberSelect+` WHERE m.workspace_id = ? AND m.user_id = ?`), workspaceID, userID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, memberNotFound(userID)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get member: %w", err)
	}
	return row.member(), nil
}

// ListMembers returns a page of the workspace's members, oldest first, and
// how many there are.
func (s *Store) ListMembers(ctx context.Context, workspaceID string, page, pageSize int) ([]*tenancy.Member, int, error) {
	var total int
	if err := s.r.GetContext(ctx, &total, s.q(`SELECT COUNT(*) FROM workspace_members WHERE workspace_id = ?`), workspaceID); err != nil {
		return nil, 0, fmt.Errorf("store: list members: %w", err)
	}
	limit, offset := pageBounds(page, pageSize)
	var rows []memberRow
	if err := s.r.SelectContext(ctx, &rows, s.q(memberSelect+` WHERE m.workspace_id = ?
		ORDER BY m.created_at, m.user_id LIMIT ? OFFSET ?`), workspaceID, limit, offset); err != nil {
		return nil, 0, fmt.Errorf("store: list members: %w", err)
	}
	out := make([]*tenancy.Member, 0, len(rows))
	for i := range rows {
		out = append(out, rows[i].member())
	}
	return out, total, nil
}

// UpdateMemberRole changes the user's role in the workspace.
func (s *Store) UpdateMemberRole(ctx context.Context, workspaceID, userID, role string) (*tenancy.Member, error) {
	res, err := s.w.ExecContext(ctx, s.q(`UPDATE workspace_members SET role = ? WHERE workspace_id = ? AND user_id = ?`), role, workspaceID, userID)
	if err != nil {
		return nil, fmt.Errorf("store: update member: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return nil, fmt.Errorf("store: update member: %w", err)
	} else if n == 0 {
		return nil, memberNotFound(userID)
	}
	return s.Member(ctx, workspaceID, userID)
}

// RemoveMember ends the user's membership of the workspace and deletes the
// user's API keys of that workspace, which would otherwise outlive the
// access they stand for. It returns the former membership.
func (s *Store) RemoveMember(ctx context.Context, workspaceID, userID string) (*tenancy.Member, error) {
	m, err := s.Member(ctx, workspaceID, userID)
	if err != nil {
		return nil, err
	}
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store: remove member: %w", err)
	}
	defer rollback(tx)
	for _, q := range []string{
		`DELETE FROM api_key_rotations WHERE api_key_id IN (SELECT id FROM api_keys WHERE workspace_id = ? AND user_id = ?)`,
		`DELETE FROM api_keys WHERE workspace_id = ? AND user_id = ?`,
		`DELETE FROM workspace_members WHERE workspace_id = ? AND user_id = ?`,
	} {
		if _, err := tx.ExecContext(ctx, s.q(q), workspaceID, userID); err != nil {
			return nil, fmt.Errorf("store: remove member: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("store: remove member: commit: %w", err)
	}
	return m, nil
}
