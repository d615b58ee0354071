package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// The contract tests run against every database they can reach: SQLite
// always, PostgreSQL and MySQL/MariaDB when these variables name a server
// database the tests may create schemas (PostgreSQL) or databases (MySQL)
// in, e.g.
//
//	GATEWAY_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test?sslmode=disable
//	GATEWAY_TEST_MYSQL_URL=mysql://root@127.0.0.1:3306/test
const (
	envTestPostgres = "GATEWAY_TEST_POSTGRES_URL"
	envTestMySQL    = "GATEWAY_TEST_MYSQL_URL"
)

// backend is one database the contract tests run on.
type backend struct {
	name  string // subtest name: sqlite, postgres, mysql
	label string // for messages
	env   string // the variable naming the server; empty for SQLite
	// fresh returns the URL of a new, empty database of its own (an SQLite
	// file, a PostgreSQL schema, a MySQL database), removed when tb ends.
	fresh func(tb testing.TB, server string) string
}

var backends = []backend{
	{name: "sqlite", label: "SQLite", fresh: func(tb testing.TB, _ string) string {
		return "sqlite://" + filepath.Join(tb.TempDir(), "gateway.db")
	}},
	{name: "postgres", label: "PostgreSQL", env: envTestPostgres, fresh: freshPostgresSchema},
	{name: "mysql", label: "MySQL", env: envTestMySQL, fresh: freshMySQLDatabase},
}

// url returns a fresh database URL of b, skipping tb when b's server is not
// configured.
func (b backend) url(tb testing.TB) string {
	tb.Helper()
	server := ""
	if b.env != "" {
		server = os.Getenv(b.env)
		if server == "" {
			tb.Skipf("%s not set: skipping %s contract tests", b.env, b.label)
		}
	}
	return b.fresh(tb, server)
}

// open opens a store on a fresh database of b, closed when tb ends.
func (b backend) open(tb testing.TB) *Store {
	tb.Helper()
	return openURL(tb, b.url(tb))
}

// openURL opens a store on databaseURL, closed when tb ends.
func openURL(tb testing.TB, databaseURL string) *Store {
	tb.Helper()
	s, err := Open(context.Background(), databaseURL, "")
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}

// forEachBackend runs fn as a subtest per database.
func forEachBackend(t *testing.T, fn func(t *testing.T, b backend)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { fn(t, b) })
	}
}

// forEachDB runs fn as a subtest per database, each with a migrated store
// on a fresh database.
func forEachDB(t *testing.T, fn func(t *testing.T, s *Store)) {
	t.Helper()
	forEachBackend(t, func(t *testing.T, b backend) {
		fn(t, migrate(t, b.open(t)))
	})
}

// forEachBootstrapped is forEachDB with the tenancy bootstrapped.
func forEachBootstrapped(t *testing.T, fn func(t *testing.T, s *Store, res BootstrapResult)) {
	t.Helper()
	forEachDB(t, func(t *testing.T, s *Store) {
		fn(t, s, bootstrap(t, s))
	})
}

func migrate(tb testing.TB, s *Store) *Store {
	tb.Helper()
	if err := s.Migrate(context.Background()); err != nil {
		tb.Fatalf("Migrate: %v", err)
	}
	return s
}

func bootstrap(tb testing.TB, s *Store) BootstrapResult {
	tb.Helper()
	res, err := s.Bootstrap(context.Background(), nil)
	if err != nil {
		tb.Fatalf("Bootstrap: %v", err)
	}
	return res
}

// adminDBs holds one administrative pool per server URL, shared by the tests.
var adminDBs struct {
	sync.Mutex
	m map[string]*sql.DB
}

func adminDB(tb testing.TB, server string, open func() (*sql.DB, error)) *sql.DB {
	tb.Helper()
	adminDBs.Lock()
	defer adminDBs.Unlock()
	if db, ok := adminDBs.m[server]; ok {
		return db
	}
	db, err := open()
	if err != nil {
		tb.Fatalf("connect to the test server: %v", err)
	}
	db.SetMaxOpenConns(4)
	if adminDBs.m == nil {
		adminDBs.m = make(map[string]*sql.DB)
	}
	adminDBs.m[server] = db
	return db
}

// randomName returns a schema or database name of the form t_<hex>.
func randomName() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "t_" + hex.EncodeToString(b)
}

// freshPostgresSchema creates a schema on the server and returns the
// server's URL with search_path set to it. The schema is dropped when tb
// ends (after the stores opened later are closed).
func freshPostgresSchema(tb testing.TB, server string) string {
	tb.Helper()
	db := adminDB(tb, server, func() (*sql.DB, error) { return sql.Open("pgx", server) })
	name := randomName()
	if _, err := db.Exec("CREATE SCHEMA " + name); err != nil {
		tb.Fatalf("create schema: %v", err)
	}
	tb.Cleanup(func() {
		if _, err := db.Exec("DROP SCHEMA " + name + " CASCADE"); err != nil {
			tb.Errorf("drop schema %s: %v", name, err)
		}
	})
	u, err := url.Parse(server)
	if err != nil {
		tb.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// freshMySQLDatabase creates a database with the server's default character
// set and returns the server's URL naming it. The database is dropped when
// tb ends.
func freshMySQLDatabase(tb testing.TB, server string) string {
	tb.Helper()
	return freshMySQLDatabaseWith(tb, server, "")
}

// freshMySQLDatabaseWith is freshMySQLDatabase with CREATE DATABASE options.
func freshMySQLDatabaseWith(tb testing.TB, server, options string) string {
	tb.Helper()
	db := adminDB(tb, server, func() (*sql.DB, error) {
		cfg, err := mysqlConfig(server, Options{})
		if err != nil {
			return nil, err
		}
		c, err := mysql.NewConnector(cfg)
		if err != nil {
			return nil, err
		}
		return sql.OpenDB(c), nil
	})
	name := randomName()
	if _, err := db.Exec("CREATE DATABASE " + name + " " + options); err != nil {
		tb.Fatalf("create database: %v", err)
	}
	tb.Cleanup(func() {
		if _, err := db.Exec("DROP DATABASE " + name); err != nil {
			tb.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(server)
	if err != nil {
		tb.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}
