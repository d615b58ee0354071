package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/tenancy"
)

// Session is a console session of single sign-on as stored: only the
// SHA-256 hash of its token is kept. Its fields match sso.Session, so one
// converts to the other.
type Session struct {
	ID             string
	OrganisationID string
	UserID         string
	TokenHash      string
	CreatedAt      time.Time
	ExpiresAt      time.Time
	RevokedAt      *time.Time
}

// sessionRow is a sessions row as stored.
type sessionRow struct {
	ID             string        `db:"id"`
	OrganisationID string        `db:"organisation_id"`
	UserID         string        `db:"user_id"`
	TokenHash      string        `db:"token_hash"`
	CreatedAt      int64         `db:"created_at"`
	ExpiresAt      int64         `db:"expires_at"`
	RevokedAt      sql.NullInt64 `db:"revoked_at"`
}

const sessionColumns = `id, organisation_id, user_id, token_hash, created_at, expires_at, revoked_at`

func (r *sessionRow) session() *Session {
	return &Session{
		ID: r.ID, OrganisationID: r.OrganisationID, UserID: r.UserID, TokenHash: r.TokenHash,
		CreatedAt: fromMicros(r.CreatedAt), ExpiresAt: fromMicros(r.ExpiresAt), RevokedAt: fromNullMicros(r.RevokedAt),
	}
}

// CreateSession stores a session, filling ID and CreatedAt when they are
// empty. A token hash already stored wraps httpx.ErrConflict.
func (s *Store) CreateSession(ctx context.Context, sess *Session) error {
	if sess.ID == "" {
		sess.ID = newID()
	}
	if sess.CreatedAt.IsZero() {
		sess.CreatedAt = s.stamp()
	}
	sess.CreatedAt = sess.CreatedAt.UTC().Truncate(time.Microsecond)
	sess.ExpiresAt = sess.ExpiresAt.UTC().Truncate(time.Microsecond)
	_, err := s.w.ExecContext(ctx, s.q(`INSERT INTO sessions (`+sessionColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)`),
		sess.ID, sess.OrganisationID, sess.UserID, sess.TokenHash, micros(sess.CreatedAt), micros(sess.ExpiresAt),
		nullMicros(sess.RevokedAt))
	if isUniqueViolation(err) {
		return fmt.Errorf("session token exists: %w", httpx.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("store: create session: %w", err)
	}
	return nil
}

// SessionByHash returns the session whose token has the hash, revoked or
// expired ones included, or an error wrapping httpx.ErrNotFound.
func (s *Store) SessionByHash(ctx context.Context, tokenHash string) (*Session, error) {
	var row sessionRow
	err := s.r.GetContext(ctx, &row, s.q(`SELECT `+sessionColumns+` FROM sessions WHERE token_hash = ?`), tokenHash)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("session: %w", httpx.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get session: %w", err)
	}
	return row.session(), nil
}

// RevokeSession marks the session id revoked at at. Revoking a revoked
// session keeps the first time; an unknown id wraps httpx.ErrNotFound.
func (s *Store) RevokeSession(ctx context.Context, id string, at time.Time) error {
	res, err := s.w.ExecContext(ctx, s.q(`UPDATE sessions SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`),
		micros(at.UTC()), id)
	if err != nil {
		return fmt.Errorf("store: revoke session: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("store: revoke session: %w", err)
	}
	if n > 0 {
		return nil
	}
	var count int
	if err := s.w.GetContext(ctx, &count, s.q(`SELECT COUNT(*) FROM sessions WHERE id = ?`), id); err != nil {
		return fmt.Errorf("store: revoke session: %w", err)
	}
	if count == 0 {
		return fmt.Errorf("session %q: %w", id, httpx.ErrNotFound)
	}
	return nil
}

// DeleteExpiredSessions removes the sessions whose expiry is at or before
// now, revoked or not, and returns how many.
func (s *Store) DeleteExpiredSessions(ctx context.Context, now time.Time) (int, error) {
	res, err := s.w.ExecContext(ctx, s.q(`DELETE FROM sessions WHERE expires_at <= ?`), micros(now.UTC()))
	if err != nil {
		return 0, fmt.Errorf("store: delete expired sessions: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("store: delete expired sessions: %w", err)
	}
	return int(n), nil
}

// UserByEmail returns the user with email (emails are unique across the
// store), or an error wrapping httpx.ErrNotFound.
func (s *Store) UserByEmail(ctx context.Context, email string) (*tenancy.User, error) {
	var row userRow
	err := s.r.GetContext(ctx, &row, s.q(`SELECT `+userColumns+` FROM users WHERE email = ?`), email)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("user with email %q: %w", email, httpx.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get user by email: %w", err)
	}
	return row.user(), nil
}

// FirstMembership returns the user's earliest workspace membership, or an
// error wrapping httpx.ErrNotFound when the user is a member of none.
func (s *Store) FirstMembership(ctx context.Context, userID string) (*tenancy.Member, error) {
	var row memberRow
	err := s.r.GetContext(ctx, &row, s.q(memberSelect+` WHERE m.user_id = ? ORDER BY m.created_at, m.workspace_id LIMIT 1`), userID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("workspace membership of user %q: %w", userID, httpx.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: first membership: %w", err)
	}
	return row.member(), nil
}
