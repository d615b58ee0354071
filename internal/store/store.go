// Package store owns SQL persistence: the embedded migrations, the schema's
// portable SQL, and one file per aggregate (tenancy bootstrap, API keys,
// virtual keys, request logs). It satisfies the interfaces declared by its
// users (auth.KeyStore, reqlog.Sink, reqlog.Reader) and returns errors that
// wrap httpx.ErrNotFound and httpx.ErrConflict, never SQL text, for the
// cases a client may see.
//
// The store runs on embedded SQLite (modernc.org/sqlite), PostgreSQL (pgx)
// and MySQL/MariaDB (go-sql-driver/mysql), chosen by the database URL, with
// one schema and one contract test suite. To keep that so, every query is
// written with "?" placeholders and passed through Store.q (sqlx.Rebind),
// timestamps are BIGINT unix microseconds in UTC, booleans are INTEGER 0/1,
// JSON is TEXT, binary values are base64 TEXT, ids are UUID strings
// generated in Go, and the few dialect differences live in dialect.
//
// store imports only auth, reqlog, httpx and llm among the gateway's
// packages; it must not import the data-plane or control-plane handlers.
// Only package app constructs a Store.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-sql-driver/mysql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jmoiron/sqlx"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/ai-gateway/gateway/internal/auth"
	"github.com/ai-gateway/gateway/internal/reqlog"
)

// Compile-time guards: the store satisfies the interfaces its users declare.
var (
	_ auth.KeyStore = (*Store)(nil)
	_ reqlog.Sink   = (*Store)(nil)
	_ reqlog.Reader = (*Store)(nil)
)

// gooseTable is goose's default version table, read directly by Ready.
const gooseTable = goose.DefaultTablename

// dialect holds what differs between the SQL databases the store runs on.
type dialect struct {
	name  string
	goose goose.Dialect
	// bind is the sqlx bind type that "?" placeholders are rebound to.
	bind int
	// maxParams bounds the placeholders of one statement: SQLite's
	// SQLITE_MAX_VARIABLE_NUMBER (32766 since 3.32), and the 16-bit counts
	// of PostgreSQL's and MySQL's wire protocols.
	maxParams int
	// maxText is the byte capacity of the request-log text columns (0: no
	// practical limit). Longer values are clipped rather than failing the
	// batch.
	maxText int
	// migrationsDir names the directory under migrations/ whose files this
	// dialect runs after (and interleaved with) the portable ones.
	migrationsDir string
	// migrationLock serialises Migrate across processes; nil for SQLite,
	// where one process owns the file.
	migrationLock lock.SessionLocker
}

var (
	dialectSQLite   = dialect{name: "sqlite", goose: goose.DialectSQLite3, bind: sqlx.QUESTION, maxParams: 32766}
	dialectPostgres = dialect{name: "postgres", goose: goose.DialectPostgres, bind: sqlx.DOLLAR, maxParams: 65535,
		migrationLock: pgMigrateLock}
	// MySQL's MEDIUMTEXT holds 16 MiB - 1 bytes (migrations/mysql).
	dialectMySQL = dialect{name: "mysql", goose: goose.DialectMySQL, bind: sqlx.QUESTION, maxParams: 65535,
		maxText: 1<<24 - 1, migrationsDir: "mysql", migrationLock: mysqlMigrateLock}
)

// Store is the gateway's SQL store. It is safe for concurrent use.
type Store struct {
	// w is the writer. For SQLite it holds a single connection, so writers
	// queue in database/sql rather than failing with "database is locked".
	// For PostgreSQL and MySQL it is one pool shared with r.
	w *sqlx.DB
	// r is the read pool. In SQLite's WAL mode readers never wait for the
	// writer.
	r *sqlx.DB
	d dialect

	migrations *goose.Provider

	// stmts caches the prepared multi-row INSERTs of the log writer.
	stmtMu sync.Mutex
	stmts  map[bulkKey]*sql.Stmt

	// now is the clock; tests may replace it.
	now func() time.Time
}

// readPoolSize is the number of SQLite read connections.
const readPoolSize = 4

// Open connects to the database named by databaseURL with zero Options:
// see OpenWithOptions.
func Open(ctx context.Context, databaseURL, dataDir string) (*Store, error) {
	return OpenWithOptions(ctx, databaseURL, dataDir, Options{})
}

// OpenWithOptions connects to the database named by databaseURL:
//
//   - empty: the embedded SQLite database <dataDir>/gateway.db, creating
//     dataDir (0700) if needed; "sqlite://path", "sqlite:path", "file:path"
//     or a bare path name another SQLite file;
//   - "postgres://…" or "postgresql://…": PostgreSQL, through pgx, with any
//     parameter pgx accepts (sslmode, search_path…);
//   - "mysql://user:pass@host:port/db?params" ("mariadb://" alike):
//     MySQL/MariaDB, with TLS as opts.DBSSL says (see Options).
//
// It checks that the database answers but does not migrate: call Migrate.
// Its errors never contain the URL's password.
func OpenWithOptions(ctx context.Context, databaseURL, dataDir string, opts Options) (*Store, error) {
	scheme, _, _ := strings.Cut(databaseURL, "://")
	switch strings.ToLower(scheme) {
	case "postgres", "postgresql":
		return openPostgres(ctx, databaseURL)
	case "mysql", "mariadb":
		return openMySQL(ctx, databaseURL, opts)
	}
	return openSQLiteStore(ctx, databaseURL, dataDir)
}

// openSQLiteStore opens the SQLite database of databaseURL: one writer
// connection and a read pool.
func openSQLiteStore(ctx context.Context, databaseURL, dataDir string) (*Store, error) {
	path, err := sqlitePath(databaseURL, dataDir)
	if err != nil {
		return nil, err
	}
	s := &Store{d: dialectSQLite, now: time.Now}
	// The writer opens first so that journal_mode=WAL is in place before any
	// reader connects.
	s.w, err = openSQLite(ctx, path, false)
	if err != nil {
		return nil, err
	}
	s.w.SetMaxOpenConns(1)
	s.w.SetMaxIdleConns(1)
	s.w.SetConnMaxLifetime(0)
	s.w.SetConnMaxIdleTime(0)

	s.r, err = openSQLite(ctx, path, true)
	if err != nil {
		s.w.Close()
		return nil, err
	}
	s.r.SetMaxOpenConns(readPoolSize)
	s.r.SetMaxIdleConns(readPoolSize)
	s.r.SetConnMaxLifetime(0)
	s.r.SetConnMaxIdleTime(0)

	if err := s.newMigrations(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// sqlitePath resolves databaseURL to an SQLite file path (or "file:" URI),
// or explains why it cannot.
func sqlitePath(databaseURL, dataDir string) (string, error) {
	switch {
	case databaseURL == "":
		if dataDir == "" {
			dataDir = "."
		}
		if err := os.MkdirAll(dataDir, 0o700); err != nil {
			return "", fmt.Errorf("store: create data directory: %w", err)
		}
		return filepath.Join(dataDir, "gateway.db"), nil
	case strings.HasPrefix(databaseURL, "sqlite://"):
		p := strings.TrimPrefix(databaseURL, "sqlite://")
		if p == "" {
			return "", errors.New("store: sqlite:// URL names no file")
		}
		return p, nil
	case strings.HasPrefix(databaseURL, "sqlite:"):
		p := strings.TrimPrefix(databaseURL, "sqlite:")
		if p == "" {
			return "", errors.New("store: sqlite: URL names no file")
		}
		return p, nil
	case strings.HasPrefix(databaseURL, "file:"):
		return databaseURL, nil
	}
	scheme, _, ok := strings.Cut(databaseURL, "://")
	if !ok {
		// A bare path is an SQLite file, as with most tools.
		return databaseURL, nil
	}
	// Only the scheme is named: the rest of the URL may hold a password.
	return "", fmt.Errorf("store: unsupported database URL scheme %q", scheme)
}

// openSQLite opens a pool on the SQLite file at path. The pragmas travel in
// the DSN (modernc's _pragma parameters) so that every connection the pool
// ever opens gets them, not just the first.
func openSQLite(ctx context.Context, path string, readOnly bool) (*sqlx.DB, error) {
	params := url.Values{}
	params.Add("_pragma", "busy_timeout(5000)")
	params.Add("_pragma", "journal_mode(WAL)")
	params.Add("_pragma", "foreign_keys(1)")
	params.Add("_pragma", "synchronous(NORMAL)")
	if readOnly {
		// query_only guards the read pool against a write sent to it by
		// mistake; such a write would bypass the single writer connection.
		params.Add("_pragma", "query_only(1)")
	} else {
		// BEGIN IMMEDIATE takes the write lock at the start of a
		// transaction, so a transaction that reads and then writes cannot
		// fail midway with SQLITE_BUSY when another process holds the lock.
		params.Set("_txlock", "immediate")
	}
	dsn := path
	if strings.Contains(path, "?") {
		dsn += "&" + params.Encode()
	} else {
		dsn += "?" + params.Encode()
	}
	db, err := sqlx.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("store: open sqlite: %w", err)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: open sqlite %s: %w", path, err)
	}
	return db, nil
}

// Migrate applies every pending embedded migration. It is idempotent.
func (s *Store) Migrate(ctx context.Context) error {
	if _, err := s.migrations.Up(ctx); err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	return nil
}

// Ready reports whether the database answers and every embedded migration
// has been applied. It only reads: the version table is not created here.
func (s *Store) Ready(ctx context.Context) error {
	if err := s.w.PingContext(ctx); err != nil {
		return fmt.Errorf("store: ping: %w", err)
	}
	if err := s.r.PingContext(ctx); err != nil {
		return fmt.Errorf("store: ping: %w", err)
	}
	var applied []int64
	if err := s.r.SelectContext(ctx, &applied, "SELECT version_id FROM "+gooseTable); err != nil {
		// The version table is missing before the first migration.
		return fmt.Errorf("store: schema not migrated (run `gateway migrate`): %w", err)
	}
	have := make(map[int64]bool, len(applied))
	for _, v := range applied {
		have[v] = true
	}
	pending := 0
	for _, src := range s.migrations.ListSources() {
		if !have[src.Version] {
			pending++
		}
	}
	if pending > 0 {
		return fmt.Errorf("store: %d migration(s) pending (run `gateway migrate`)", pending)
	}
	return nil
}

// Dialect names the database the store runs on: "sqlite", "postgres" or
// "mysql".
func (s *Store) Dialect() string { return s.d.name }

// Close closes the pools.
func (s *Store) Close() error {
	var errs []error
	s.stmtMu.Lock()
	for _, st := range s.stmts {
		errs = append(errs, st.Close())
	}
	s.stmts = nil
	s.stmtMu.Unlock()
	if s.r != nil {
		errs = append(errs, s.r.Close())
	}
	if s.w != nil && s.w != s.r {
		errs = append(errs, s.w.Close())
	}
	return errors.Join(errs...)
}

// q rebinds a query written with "?" placeholders to the dialect's form.
func (s *Store) q(query string) string { return sqlx.Rebind(s.d.bind, query) }

// stamp returns the current time at the precision the store keeps.
func (s *Store) stamp() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// newID returns a time-ordered UUID (v7), so that ids made in sequence sort
// in creation order and land near each other in primary-key indexes.
func newID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}

// micros encodes a time as the schema's BIGINT unix microseconds.
func micros(t time.Time) int64 { return t.UnixMicro() }

// fromMicros decodes a BIGINT unix-microsecond timestamp.
func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// nullMicros encodes an optional time; nil is NULL.
func nullMicros(t *time.Time) sql.NullInt64 {
	if t == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMicro(), Valid: true}
}

// fromNullMicros decodes an optional time.
func fromNullMicros(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMicros(v.Int64)
	return &t
}

// msToMicros converts the float milliseconds of a record to the BIGINT
// microseconds of the schema.
func msToMicros(ms float64) int64 { return int64(math.Round(ms * 1000)) }

// microsToMS converts stored microseconds back to float milliseconds.
func microsToMS(us int64) float64 { return float64(us) / 1000 }

// nullString maps "" to NULL.
func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

// boolInt encodes a boolean as INTEGER 0/1.
func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// clip shortens s to at most n characters (not bytes, as VARCHAR(n) counts
// them), cutting on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

// Page sizes of every list (API.md §2).
const (
	defaultPageSize = 50
	maxPageSize     = 1000
)

// pageBounds turns a 0-based page and a page size into LIMIT and OFFSET.
func pageBounds(page, size int) (limit, offset int) {
	if size <= 0 {
		size = defaultPageSize
	}
	size = min(size, maxPageSize)
	page = max(page, 0)
	return size, page * size
}

// isUniqueViolation reports whether err is a unique or primary-key
// constraint failure on any of the dialects.
func isUniqueViolation(err error) bool {
	if err == nil {
		return false
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return true
		}
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "23505" // unique_violation
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		// ER_DUP_ENTRY, ER_DUP_ENTRY_WITH_KEY_NAME
		return me.Number == 1062 || me.Number == 1586
	}
	return false
}

// rollback ends tx after a failure; its own error adds nothing.
func rollback(tx *sqlx.Tx) { _ = tx.Rollback() }
