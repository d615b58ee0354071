package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/tenancy"
)

// inviteRow is an invites row as stored.
type inviteRow struct {
	ID             string        `db:"id"`
	OrganisationID string        `db:"organisation_id"`
	Email          string        `db:"email"`
	Role           string        `db:"role"`
	Workspaces     string        `db:"workspaces"`
	Status         string        `db:"status"`
	InvitedBy      string        `db:"invited_by"`
	ExpiresAt      int64         `db:"expires_at"`
	AcceptedAt     sql.NullInt64 `db:"accepted_at"`
	LastSentAt     int64         `db:"last_sent_at"`
	ResendCount    int           `db:"resend_count"`
	CreatedAt      int64         `db:"created_at"`
	UpdatedAt      int64         `db:"updated_at"`
}

const inviteColumns = `id, organisation_id, email, role, workspaces, status, invited_by, expires_at, accepted_at,
	last_sent_at, resend_count, created_at, updated_at`

func (r *inviteRow) invite() (*tenancy.Invite, error) {
	i := &tenancy.Invite{
		ID: r.ID, OrganisationID: r.OrganisationID, Email: r.Email, Role: r.Role, Status: r.Status, InvitedBy: r.InvitedBy,
		ExpiresAt: fromMicros(r.ExpiresAt), AcceptedAt: fromNullMicros(r.AcceptedAt), LastSentAt: fromMicros(r.LastSentAt),
		ResendCount: r.ResendCount, CreatedAt: fromMicros(r.CreatedAt), UpdatedAt: fromMicros(r.UpdatedAt),
	}
	if err := json.Unmarshal([]byte(r.Workspaces), &i.Workspaces); err != nil {
		return nil, fmt.Errorf("invite %s: workspaces: %w", r.ID, err)
	}
	return i, nil
}

func inviteNotFound(id string) error { return fmt.Errorf("invite %q: %w", id, httpx.ErrNotFound) }

// CreateInvite stores a pending invite, filling ID, status, timestamps and
// LastSentAt. It is a conflict (httpx.ErrConflict) when a user has the
// email already, or a pending invite for it has not expired.
func (s *Store) CreateInvite(ctx context.Context, i *tenancy.Invite) error {
	if i.ID == "" {
		i.ID = newID()
	}
	now := s.stamp()
	i.Status, i.CreatedAt, i.UpdatedAt, i.LastSentAt = tenancy.InvitePending, now, now, now
	if i.Workspaces == nil {
		i.Workspaces = []tenancy.InviteWorkspace{}
	}
	ws, err := json.Marshal(i.Workspaces)
	if err != nil {
		return fmt.Errorf("store: create invite: %w", err)
	}
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: create invite: %w", err)
	}
	defer rollback(tx)
	var n int
	if err := tx.GetContext(ctx, &n, s.q(`SELECT COUNT(*) FROM users WHERE email = ?`), i.Email); err != nil {
		return fmt.Errorf("store: create invite: %w", err)
	}
	if n > 0 {
		return fmt.Errorf("a user with email %q exists: %w", i.Email, httpx.ErrConflict)
	}
	if err := tx.GetContext(ctx, &n, s.q(`SELECT COUNT(*) FROM invites WHERE organisation_id = ? AND email = ? AND status = ? AND expires_at > ?`),
		i.OrganisationID, i.Email, tenancy.InvitePending, micros(now)); err != nil {
		return fmt.Errorf("store: create invite: %w", err)
	}
	if n > 0 {
		return fmt.Errorf("a pending invite for %q exists: %w", i.Email, httpx.ErrConflict)
	}
	_, err = tx.ExecContext(ctx, s.q(`INSERT INTO invites (`+inviteColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		i.ID, i.OrganisationID, i.Email, i.Role, string(ws), i.Status, i.InvitedBy, micros(i.ExpiresAt),
		nullMicros(i.AcceptedAt), micros(i.LastSentAt), i.ResendCount, micros(now), micros(now))
	if err != nil {
		return fmt.Errorf("store: create invite: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: create invite: commit: %w", err)
	}
	return nil
}

// Invite returns the organisation's invite id, or an error wrapping
// httpx.ErrNotFound.
func (s *Store) Invite(ctx context.Context, organisationID, id string) (*tenancy.Invite, error) {
	i, err := s.invite(ctx, s.r, organisationID, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, inviteNotFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get invite: %w", err)
	}
	return i, nil
}

func (s *Store) invite(ctx context.Context, db sqlx.QueryerContext, organisationID, id string) (*tenancy.Invite, error) {
	var row inviteRow
	if err := sqlx.GetContext(ctx, db, &row, s.q(`SELECT `+inviteColumns+` FROM invites WHERE id = ? AND organisation_id = ?`), id, organisationID); err != nil {
		return nil, err
	}
	return row.invite()
}

// ListInvites returns a page of the organisation's invites matching f,
// newest first, and how many match. f.Status is compared with the status
// at now (tenancy.Invite.EffectiveStatus).
func (s *Store) ListInvites(ctx context.Context, organisationID string, f tenancy.InviteFilter, now time.Time, page, pageSize int) ([]*tenancy.Invite, int, error) {
	where := `organisation_id = ?`
	args := []any{organisationID}
	at := micros(now.UTC())
	switch f.Status {
	case "":
	case tenancy.InvitePending:
		where += ` AND status = ? AND expires_at > ?`
		args = append(args, tenancy.InvitePending, at)
	case tenancy.InviteExpired:
		where += ` AND (status = ? OR (status = ? AND expires_at <= ?))`
		args = append(args, tenancy.InviteExpired, tenancy.InvitePending, at)
	default:
		where += ` AND status = ?`
		args = append(args, f.Status)
	}
	if f.Email != "" {
		where += ` AND email = ?`
		args = append(args, f.Email)
	}
	var rows []inviteRow
	total, err := selectPage(ctx, s, &rows, "invites", inviteColumns, where, args, "created_at DESC, id DESC", page, pageSize)
	if err != nil {
		return nil, 0, fmt.Errorf("store: list invites: %w", err)
	}
	out, err := convertRows(rows, (*inviteRow).invite)
	if err != nil {
		return nil, 0, fmt.Errorf("store: list invites: %w", err)
	}
	return out, total, nil
}

// ResendInvite makes a pending or expired invite pending again until
// expiresAt, counting the resend. Other states wrap httpx.ErrConflict.
func (s *Store) ResendInvite(ctx context.Context, organisationID, id string, expiresAt time.Time) (*tenancy.Invite, error) {
	now := s.stamp()
	res, err := s.w.ExecContext(ctx, s.q(`UPDATE invites SET status = ?, expires_at = ?, last_sent_at = ?, resend_count = resend_count + 1,
		updated_at = ? WHERE id = ? AND organisation_id = ? AND status IN (?, ?)`),
		tenancy.InvitePending, micros(expiresAt.UTC()), micros(now), micros(now), id, organisationID,
		tenancy.InvitePending, tenancy.InviteExpired)
	if err != nil {
		return nil, fmt.Errorf("store: resend invite: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return nil, fmt.Errorf("store: resend invite: %w", err)
	}
	i, err := s.Invite(ctx, organisationID, id)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("invite %q is %s and cannot be resent: %w", id, i.Status, httpx.ErrConflict)
	}
	return i, nil
}

// CancelInvite moves a pending invite (expired or not) to cancelled. Other
// states wrap httpx.ErrConflict.
func (s *Store) CancelInvite(ctx context.Context, organisationID, id string) (*tenancy.Invite, error) {
	now := s.stamp()
	res, err := s.w.ExecContext(ctx, s.q(`UPDATE invites SET status = ?, updated_at = ? WHERE id = ? AND organisation_id = ? AND status = ?`),
		tenancy.InviteCancelled, micros(now), id, organisationID, tenancy.InvitePending)
	if err != nil {
		return nil, fmt.Errorf("store: cancel invite: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return nil, fmt.Errorf("store: cancel invite: %w", err)
	}
	i, err := s.Invite(ctx, organisationID, id)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("invite %q is %s and cannot be cancelled: %w", id, i.Status, httpx.ErrConflict)
	}
	return i, nil
}

// DeleteInvite removes the organisation's invite id and returns it.
func (s *Store) DeleteInvite(ctx context.Context, organisationID, id string) (*tenancy.Invite, error) {
	i, err := s.Invite(ctx, organisationID, id)
	if err != nil {
		return nil, err
	}
	if _, err := s.w.ExecContext(ctx, s.q(`DELETE FROM invites WHERE id = ? AND organisation_id = ?`), id, organisationID); err != nil {
		return nil, fmt.Errorf("store: delete invite: %w", err)
	}
	return i, nil
}

// AcceptInvite provisions the user that the pending, unexpired invite for
// email stands for (SPEC.md "States and transitions": a first-time user
// logs in): the user with the invite's organisation role, a member of each
// invited workspace that still exists, and the invite accepted, in one
// transaction. Without such an invite it wraps httpx.ErrNotFound.
func (s *Store) AcceptInvite(ctx context.Context, email, name string, now time.Time) (*tenancy.User, error) {
	at := micros(now.UTC())
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store: accept invite: %w", err)
	}
	defer rollback(tx)
	var row inviteRow
	err = tx.GetContext(ctx, &row, s.q(`SELECT `+inviteColumns+` FROM invites WHERE email = ? AND status = ? AND expires_at > ?
		ORDER BY created_at DESC, id DESC LIMIT 1`), email, tenancy.InvitePending, at)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("pending invite for %q: %w", email, httpx.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: accept invite: %w", err)
	}
	inv, err := row.invite()
	if err != nil {
		return nil, fmt.Errorf("store: accept invite: %w", err)
	}
	u := &tenancy.User{OrganisationID: inv.OrganisationID, Email: inv.Email, Name: name, Role: inv.Role}
	if err := s.insertUser(ctx, tx, u); err != nil {
		if errors.Is(err, httpx.ErrConflict) {
			return nil, err
		}
		return nil, fmt.Errorf("store: accept invite: %w", err)
	}
	for _, w := range inv.Workspaces {
		var n int
		if err := tx.GetContext(ctx, &n, s.q(`SELECT COUNT(*) FROM workspaces WHERE id = ? AND organisation_id = ?`), w.ID, inv.OrganisationID); err != nil {
			return nil, fmt.Errorf("store: accept invite: %w", err)
		}
		if n == 0 {
			continue // deleted since the invite was made
		}
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO workspace_members (workspace_id, user_id, role, created_at) VALUES (?, ?, ?, ?)`),
			w.ID, u.ID, w.Role, at); err != nil {
			return nil, fmt.Errorf("store: accept invite: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, s.q(`UPDATE invites SET status = ?, accepted_at = ?, updated_at = ? WHERE id = ?`),
		tenancy.InviteAccepted, at, at, inv.ID); err != nil {
		return nil, fmt.Errorf("store: accept invite: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("store: accept invite: commit: %w", err)
	}
	return u, nil
}

// ExpireInvites moves pending invites whose expiry is at or before now to
// expired, and returns how many.
func (s *Store) ExpireInvites(ctx context.Context, now time.Time) (int, error) {
	res, err := s.w.ExecContext(ctx, s.q(`UPDATE invites SET status = ?, updated_at = ? WHERE status = ? AND expires_at <= ?`),
		tenancy.InviteExpired, micros(s.stamp()), tenancy.InvitePending, micros(now.UTC()))
	if err != nil {
		return 0, fmt.Errorf("store: expire invites: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("store: expire invites: %w", err)
	}
	return int(n), nil
}
