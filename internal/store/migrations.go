package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// The schema's migrations. migrations/*.sql is portable SQL that every
// dialect runs. migrations/mysql/*.sql holds MySQL/MariaDB-only follow-ups
// (types and collations the portable SQL cannot name); for that dialect the
// two directories are merged into one sequence.
//
// Versions are unique across both directories: a dialect-specific file takes
// a version number that no portable file uses, and the other dialects simply
// never see that version. A new portable migration therefore takes the next
// number after the highest one in any directory (TestMigrationVersions
// checks this). Ready compares the applied versions with the dialect's own
// list, so a skipped number is not "pending" anywhere.
//
//go:embed migrations/*.sql migrations/mysql/*.sql
var migrationFiles embed.FS

// migrationsFS returns the migrations that dialect d runs, as one flat
// directory for goose.
func migrationsFS(d dialect) (fs.FS, error) {
	portable, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	if d.migrationsDir == "" {
		return portable, nil
	}
	extra, err := fs.Sub(migrationFiles, "migrations/"+d.migrationsDir)
	if err != nil {
		return nil, err
	}
	return unionFS{portable, extra}, nil
}

// unionFS overlays directories: Open returns the first layer's file of that
// name and ReadDir merges the layers' entries. goose only globs "*.sql" at
// the root and reads the files it found, which is all this supports.
type unionFS []fs.FS

func (u unionFS) Open(name string) (fs.File, error) {
	for _, layer := range u {
		f, err := layer.Open(name)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

func (u unionFS) ReadDir(name string) ([]fs.DirEntry, error) {
	var out []fs.DirEntry
	seen := make(map[string]bool)
	found := false
	for _, layer := range u {
		entries, err := fs.ReadDir(layer, name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		found = true
		for _, e := range entries {
			if !seen[e.Name()] {
				seen[e.Name()] = true
				out = append(out, e)
			}
		}
	}
	if !found {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// newMigrations builds the goose provider of s's dialect. On PostgreSQL and
// MySQL a session lock serialises Migrate across processes, so that N
// gateways starting at once against one database apply each migration once.
func (s *Store) newMigrations() error {
	fsys, err := migrationsFS(s.d)
	if err != nil {
		return fmt.Errorf("store: migrations: %w", err)
	}
	opts := []goose.ProviderOption{
		goose.WithDisableGlobalRegistry(true),
		goose.WithLogger(goose.NopLogger()),
	}
	if l := s.d.migrationLock; l != nil {
		opts = append(opts, goose.WithSessionLocker(l))
	}
	s.migrations, err = goose.NewProvider(s.d.goose, s.w.DB, fsys, opts...)
	if err != nil {
		return fmt.Errorf("store: migrations: %w", err)
	}
	return nil
}

// sqlLock is a lock held by one connection, taken and released with SQL.
// It implements goose's lock.SessionLocker and guards Bootstrap.
type sqlLock struct {
	// acquire takes the lock, waiting for it. Its single result is 1 on
	// success; 0 or NULL (MySQL's GET_LOCK timeout or error) fail.
	acquire string
	// release gives the lock back; its single result is ignored.
	release string
	what    string
}

var _ lock.SessionLocker = (*sqlLock)(nil)

// Lock keys. PostgreSQL advisory locks are per database, so the second key
// is the schema: gateways in different schemas of one database do not wait
// for each other. MySQL's named locks are per server, so the name carries
// the database (and is cut to the 64 characters MySQL allows).
const (
	pgLockMigrate   = 0x67617465 // "gate"
	pgLockBootstrap = 0x67617466
	pgLockSchemaKey = `hashtext(COALESCE(current_schema(), ''))`
	// How long MySQL waits for a named lock, in seconds. Migrations may
	// rebuild large tables.
	mysqlMigrateWait   = 600
	mysqlBootstrapWait = 10
)

func mysqlLockName(what string) string {
	return fmt.Sprintf(`LEFT(CONCAT('gateway.%s.', COALESCE(DATABASE(), '')), 64)`, what)
}

var (
	pgMigrateLock = &sqlLock{
		acquire: fmt.Sprintf(`SELECT 1 FROM (SELECT pg_advisory_lock(%d, %s)) AS l`, pgLockMigrate, pgLockSchemaKey),
		release: fmt.Sprintf(`SELECT pg_advisory_unlock(%d, %s)`, pgLockMigrate, pgLockSchemaKey),
		what:    "migration",
	}
	mysqlMigrateLock = &sqlLock{
		acquire: fmt.Sprintf(`SELECT GET_LOCK(%s, %d)`, mysqlLockName("migrate"), mysqlMigrateWait),
		release: fmt.Sprintf(`SELECT RELEASE_LOCK(%s)`, mysqlLockName("migrate")),
		what:    "migration",
	}
	// mysqlBootstrapLock is held around Bootstrap's transaction. PostgreSQL
	// takes a transaction-level advisory lock instead (see Bootstrap).
	mysqlBootstrapLock = &sqlLock{
		acquire: fmt.Sprintf(`SELECT GET_LOCK(%s, %d)`, mysqlLockName("bootstrap"), mysqlBootstrapWait),
		release: fmt.Sprintf(`SELECT RELEASE_LOCK(%s)`, mysqlLockName("bootstrap")),
		what:    "bootstrap",
	}
	pgBootstrapXactLock = fmt.Sprintf(`SELECT 1 FROM (SELECT pg_advisory_xact_lock(%d, %s)) AS l`, pgLockBootstrap, pgLockSchemaKey)
)

// SessionLock takes the lock on conn.
func (l *sqlLock) SessionLock(ctx context.Context, conn *sql.Conn) error {
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, l.acquire).Scan(&got); err != nil {
		return fmt.Errorf("store: take the %s lock: %w", l.what, err)
	}
	if !got.Valid || got.Int64 != 1 {
		return fmt.Errorf("store: take the %s lock: timed out (another gateway process holds it)", l.what)
	}
	return nil
}

// SessionUnlock releases the lock on conn. When that fails the connection is
// discarded rather than returned to the pool, since the database frees a
// session's locks when the session ends.
func (l *sqlLock) SessionUnlock(ctx context.Context, conn *sql.Conn) error {
	var ignored any
	if err := conn.QueryRowContext(ctx, l.release).Scan(&ignored); err != nil {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		return fmt.Errorf("store: release the %s lock: %w", l.what, err)
	}
	return nil
}
