package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/tenancy"
)

// userRow is a users row as stored.
type userRow struct {
	ID             string `db:"id"`
	OrganisationID string `db:"organisation_id"`
	Email          string `db:"email"`
	Name           string `db:"name"`
	Role           string `db:"role"`
	CreatedAt      int64  `db:"created_at"`
	UpdatedAt      int64  `db:"updated_at"`
}

const userColumns = `id, organisation_id, email, name, role, created_at, updated_at`

func (r *userRow) user() *tenancy.User {
	return &tenancy.User{
		ID: r.ID, OrganisationID: r.OrganisationID, Email: r.Email, Name: r.Name, Role: r.Role,
		CreatedAt: fromMicros(r.CreatedAt), UpdatedAt: fromMicros(r.UpdatedAt),
	}
}

func userNotFound(id string) error { return fmt.Errorf("user %q: %w", id, httpx.ErrNotFound) }

// errLastOwner keeps an organisation from losing its last owner.
var errLastOwner = fmt.Errorf("the organisation's last owner cannot be removed or demoted: %w", httpx.ErrConflict)

// CreateUser stores a user, filling ID and timestamps. An email already
// used wraps httpx.ErrConflict.
func (s *Store) CreateUser(ctx context.Context, u *tenancy.User) error {
	if err := s.insertUser(ctx, s.w, u); err != nil {
		if errors.Is(err, httpx.ErrConflict) {
			return err
		}
		return fmt.Errorf("store: create user: %w", err)
	}
	return nil
}

func (s *Store) insertUser(ctx context.Context, db sqlx.ExecerContext, u *tenancy.User) error {
	if u.ID == "" {
		u.ID = newID()
	}
	now := s.stamp()
	u.CreatedAt, u.UpdatedAt = now, now
	_, err := db.ExecContext(ctx, s.q(`INSERT INTO users (`+userColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)`),
		u.ID, u.OrganisationID, u.Email, u.Name, u.Role, micros(now), micros(now))
	if isUniqueViolation(err) {
		return fmt.Errorf("a user with email %q exists: %w", u.Email, httpx.ErrConflict)
	}
	return err
}

// User returns the organisation's user with id, or an error wrapping
// httpx.ErrNotFound.
func (s *Store) User(ctx context.Context, organisationID, id string) (*tenancy.User, error) {
	u, err := s.user(ctx, s.r, organisationID, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, userNotFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get user: %w", err)
	}
	return u, nil
}

func (s *Store) user(ctx context.Context, db sqlx.QueryerContext, organisationID, id string) (*tenancy.User, error) {
	var row userRow
	if err := sqlx.GetContext(ctx, db, &row, s.q(`SELECT `+userColumns+` FROM users WHERE id = ? AND organisation_id = ?`), id, organisationID); err != nil {
		return nil, err
	}
	return row.user(), nil
}

// ListUsers returns a page of the organisation's users matching f, oldest
// first, and how many match.
func (s *Store) ListUsers(ctx context.Context, organisationID string, f tenancy.UserFilter, page, pageSize int) ([]*tenancy.User, int, error) {
	where := `organisation_id = ?`
	args := []any{organisationID}
	if f.Role != "" {
		where += ` AND role = ?`
		args = append(args, f.Role)
	}
	if f.Email != "" {
		where += ` AND email = ?`
		args = append(args, f.Email)
	}
	var rows []userRow
	total, err := selectPage(ctx, s, &rows, "users", userColumns, where, args, "created_at, id", page, pageSize)
	if err != nil {
		return nil, 0, fmt.Errorf("store: list users: %w", err)
	}
	out := make([]*tenancy.User, 0, len(rows))
	for i := range rows {
		out = append(out, rows[i].user())
	}
	return out, total, nil
}

// lastOwner reports whether u is the organisation's only owner.
func (s *Store) lastOwner(ctx context.Context, tx *sqlx.Tx, u *tenancy.User) (bool, error) {
	if u.Role != tenancy.RoleOwner {
		return false, nil
	}
	var owners int
	err := tx.GetContext(ctx, &owners, s.q(`SELECT COUNT(*) FROM users WHERE organisation_id = ? AND role = ?`),
		u.OrganisationID, tenancy.RoleOwner)
	return owners <= 1, err
}

// UpdateUserRole gives the organisation's user id the organisation role
// and returns the user. Demoting the last owner wraps httpx.ErrConflict.
func (s *Store) UpdateUserRole(ctx context.Context, organisationID, id, role string) (*tenancy.User, error) {
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store: update user: %w", err)
	}
	defer rollback(tx)
	u, err := s.user(ctx, tx, organisationID, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, userNotFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("store: update user: %w", err)
	}
	if role != tenancy.RoleOwner {
		last, err := s.lastOwner(ctx, tx, u)
		if err != nil {
			return nil, fmt.Errorf("store: update user: %w", err)
		}
		if last {
			return nil, errLastOwner
		}
	}
	now := s.stamp()
	if _, err := tx.ExecContext(ctx, s.q(`UPDATE users SET role = ?, updated_at = ? WHERE id = ?`), role, micros(now), id); err != nil {
		return nil, fmt.Errorf("store: update user: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("store: update user: commit: %w", err)
	}
	u.Role, u.UpdatedAt = role, now
	return u, nil
}

// DeleteUser removes the organisation's user id with their memberships
// and API keys, and returns the user. Removing the last owner wraps
// httpx.ErrConflict.
func (s *Store) DeleteUser(ctx context.Context, organisationID, id string) (*tenancy.User, error) {
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store: delete user: %w", err)
	}
	defer rollback(tx)
	u, err := s.user(ctx, tx, organisationID, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, userNotFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("store: delete user: %w", err)
	}
	last, err := s.lastOwner(ctx, tx, u)
	if err != nil {
		return nil, fmt.Errorf("store: delete user: %w", err)
	}
	if last {
		return nil, errLastOwner
	}
	for _, q := range []string{
		`DELETE FROM api_key_rotations WHERE api_key_id IN (SELECT id FROM api_keys WHERE user_id = ?)`,
		// The schema cascades these too; saying so keeps the order clear.
		`DELETE FROM api_keys WHERE user_id = ?`,
		`DELETE FROM workspace_members WHERE user_id = ?`,
		`DELETE FROM users WHERE id = ?`,
	} {
		if _, err := tx.ExecContext(ctx, s.q(q), id); err != nil {
			return nil, fmt.Errorf("store: delete user: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("store: delete user: commit: %w", err)
	}
	return u, nil
}
