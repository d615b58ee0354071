package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/ai-gateway/gateway/internal/auth"
)

// Names of what Bootstrap creates in an empty database (API.md §1 "First
// start").
const (
	bootstrapOrgName       = "Default Organisation"
	bootstrapWorkspaceSlug = "default"
	bootstrapWorkspaceName = "Default Workspace"
	bootstrapOwnerEmail    = "owner@localhost"
	bootstrapOwnerName     = "Owner"
	bootstrapAdminKeyName  = "Admin API key"

	// RoleOwner is the organisation role of the bootstrap user.
	RoleOwner = "owner"
	// WorkspaceRoleManager is the bootstrap owner's role in the default
	// workspace (SPEC.md roles: Workspace Manager, Workspace Member).
	WorkspaceRoleManager = "manager"
)

// BootstrapResult names the tenancy the gateway runs under. Fresh is true
// when Bootstrap created it.
type BootstrapResult struct {
	OrganisationID string
	WorkspaceID    string
	UserID         string
	Fresh          bool
}

// Bootstrap makes sure the database has an organisation, a default
// workspace and an owner, creating them when no organisation exists, all in
// one transaction. Otherwise it returns the existing ids.
//
// When adminKey is not nil and no stored key has its Hash, it is inserted as
// an organisation service key of that organisation, so that a key given by
// the environment survives restarts without duplicates. Either way, on
// success *adminKey holds the stored row.
//
// Several processes may bootstrap one database at once: the transaction runs
// under a lock (SQLite's write lock, taken by BEGIN IMMEDIATE; a
// transaction-level advisory lock on PostgreSQL; a named lock on MySQL, held
// by the transaction's connection until after the commit), so exactly one
// of them creates the tenancy and the others find it.
func (s *Store) Bootstrap(ctx context.Context, adminKey *auth.APIKey) (BootstrapResult, error) {
	conn, err := s.w.Connx(ctx)
	if err != nil {
		return BootstrapResult{}, fmt.Errorf("store: bootstrap: %w", err)
	}
	defer conn.Close()
	if s.d.name == dialectMySQL.name {
		if err := mysqlBootstrapLock.SessionLock(ctx, conn.Conn); err != nil {
			return BootstrapResult{}, err
		}
		// Released after the commit (or rollback) below, as defers run last
		// in, first out. A failed release discards the connection, which
		// frees the lock too, so its error changes nothing for the caller.
		defer func() { _ = mysqlBootstrapLock.SessionUnlock(context.WithoutCancel(ctx), conn.Conn) }()
	}
	tx, err := conn.BeginTxx(ctx, nil)
	if err != nil {
		return BootstrapResult{}, fmt.Errorf("store: bootstrap: %w", err)
	}
	defer rollback(tx)
	if s.d.name == dialectPostgres.name {
		var one int
		if err := tx.GetContext(ctx, &one, pgBootstrapXactLock); err != nil {
			return BootstrapResult{}, fmt.Errorf("store: bootstrap: take the bootstrap lock: %w", err)
		}
	}

	res, err := s.existingTenancy(ctx, tx)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		res, err = s.createTenancy(ctx, tx)
		if err != nil {
			return BootstrapResult{}, fmt.Errorf("store: bootstrap: %w", err)
		}
	case err != nil:
		return BootstrapResult{}, fmt.Errorf("store: bootstrap: %w", err)
	}

	if adminKey != nil {
		stored, err := s.apiKeyByHash(ctx, tx, adminKey.Hash)
		switch {
		case err == nil:
			*adminKey = *stored
		case errors.Is(err, sql.ErrNoRows):
			k := *adminKey
			k.OrganisationID = res.OrganisationID
			if k.Name == "" {
				k.Name = bootstrapAdminKeyName
			}
			if k.Type == "" {
				k.Type = auth.KeyTypeOrganisation
			}
			if k.Subtype == "" {
				k.Subtype = auth.KeySubtypeService
			}
			if k.Status == "" {
				k.Status = auth.StatusActive
			}
			if err := s.insertAPIKey(ctx, tx, &k); err != nil {
				return BootstrapResult{}, fmt.Errorf("store: bootstrap: admin key: %w", err)
			}
			*adminKey = k
		default:
			return BootstrapResult{}, fmt.Errorf("store: bootstrap: admin key: %w", err)
		}
	}

	if err := tx.Commit(); err != nil {
		return BootstrapResult{}, fmt.Errorf("store: bootstrap: commit: %w", err)
	}
	return res, nil
}

// existingTenancy returns the oldest organisation with its default
// workspace and owner, or sql.ErrNoRows when there is no organisation. A
// missing workspace or owner leaves its id empty.
func (s *Store) existingTenancy(ctx context.Context, tx *sqlx.Tx) (BootstrapResult, error) {
	var res BootstrapResult
	err := tx.GetContext(ctx, &res.OrganisationID, s.q(
		`SELECT id FROM organisations ORDER BY created_at, id LIMIT 1`))
	if err != nil {
		return res, err
	}
	err = tx.GetContext(ctx, &res.WorkspaceID, s.q(
		`SELECT id FROM workspaces WHERE organisation_id = ? AND is_default = 1 ORDER BY created_at, id LIMIT 1`),
		res.OrganisationID)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return res, err
	}
	err = tx.GetContext(ctx, &res.UserID, s.q(
		`SELECT id FROM users WHERE organisation_id = ? AND role = ? ORDER BY created_at, id LIMIT 1`),
		res.OrganisationID, RoleOwner)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return res, err
	}
	return res, nil
}

// createTenancy inserts the first organisation, its default workspace and
// its owner, who is also a member of the workspace.
func (s *Store) createTenancy(ctx context.Context, tx *sqlx.Tx) (BootstrapResult, error) {
	now := micros(s.stamp())
	res := BootstrapResult{OrganisationID: newID(), WorkspaceID: newID(), UserID: newID(), Fresh: true}
	stmts := []struct {
		query string
		args  []any
	}{
		{`INSERT INTO organisations (id, name, created_at, updated_at) VALUES (?, ?, ?, ?)`,
			[]any{res.OrganisationID, bootstrapOrgName, now, now}},
		{`INSERT INTO workspaces (id, organisation_id, slug, name, is_default, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			[]any{res.WorkspaceID, res.OrganisationID, bootstrapWorkspaceSlug, bootstrapWorkspaceName, 1, now, now}},
		{`INSERT INTO users (id, organisation_id, email, name, role, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			[]any{res.UserID, res.OrganisationID, bootstrapOwnerEmail, bootstrapOwnerName, RoleOwner, now, now}},
		{`INSERT INTO workspace_members (workspace_id, user_id, role, created_at) VALUES (?, ?, ?, ?)`,
			[]any{res.WorkspaceID, res.UserID, WorkspaceRoleManager, now}},
	}
	for _, st := range stmts {
		if _, err := tx.ExecContext(ctx, s.q(st.query), st.args...); err != nil {
			return BootstrapResult{}, err
		}
	}
	return res, nil
}
