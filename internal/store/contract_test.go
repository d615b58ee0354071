package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-sql-driver/mysql"
	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pressly/goose/v3"

	"github.com/ai-gateway/gateway/internal/auth"
	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/reqlog"
)

// TestBootstrapConcurrent starts several "processes" (stores with pools of
// their own) on one empty database at once: exactly one creates the
// tenancy and the admin key, and all agree on them.
func TestBootstrapConcurrent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		u := b.url(t)
		const procs = 6
		stores := make([]*Store, procs)
		for i := range stores {
			stores[i] = openURL(t, u)
		}
		migrate(t, stores[0])

		results := make([]BootstrapResult, procs)
		keys := make([]*auth.APIKey, procs)
		errs := make([]error, procs)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, s := range stores {
			wg.Go(func() {
				<-start
				keys[i] = &auth.APIKey{Hash: "admin-hash", Mask: "gw-…", Scopes: []string{"all"}}
				results[i], errs[i] = s.Bootstrap(ctx, keys[i])
			})
		}
		close(start)
		wg.Wait()

		fresh := 0
		for i := range stores {
			if errs[i] != nil {
				t.Fatalf("Bootstrap #%d: %v", i, errs[i])
			}
			if results[i].Fresh {
				fresh++
			}
			want := results[0]
			want.Fresh = results[i].Fresh
			if diff := cmp.Diff(want, results[i]); diff != "" {
				t.Errorf("Bootstrap #%d disagrees (-#0 +#%d):\n%s", i, i, diff)
			}
			if keys[i].ID != keys[0].ID {
				t.Errorf("admin key #%d = %s, #0 = %s", i, keys[i].ID, keys[0].ID)
			}
		}
		if fresh != 1 {
			t.Errorf("%d bootstraps created the tenancy, want 1", fresh)
		}
		for table, want := range map[string]int{
			"organisations": 1, "workspaces": 1, "users": 1, "workspace_members": 1, "api_keys": 1,
		} {
			var n int
			if err := stores[0].r.GetContext(ctx, &n, "SELECT COUNT(*) FROM "+table); err != nil || n != want {
				t.Errorf("%s: %d rows, %v; want %d", table, n, err, want)
			}
		}
	})
}

// TestMigrateConcurrent runs Migrate from several processes at once against
// one empty server database: the session lock makes them take turns.
// SQLite is left out: one process owns an embedded database.
func TestMigrateConcurrent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		if b.env == "" {
			t.Skip("SQLite: an embedded database belongs to one process")
		}
		ctx := t.Context()
		u := b.url(t)
		const procs = 4
		stores := make([]*Store, procs)
		for i := range stores {
			stores[i] = openURL(t, u)
		}
		errs := make([]error, procs)
		var wg sync.WaitGroup
		for i, s := range stores {
			wg.Go(func() { errs[i] = s.Migrate(ctx) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("Migrate #%d: %v", i, err)
			}
		}
		for i, s := range stores {
			if err := s.Ready(ctx); err != nil {
				t.Errorf("Ready #%d: %v", i, err)
			}
		}
	})
}

// TestValuesCompareByBytes: slugs, metadata keys and values that differ
// only in case or accents are distinct on every dialect (MySQL's default
// collations would fold them).
func TestValuesCompareByBytes(t *testing.T) {
	forEachBootstrapped(t, func(t *testing.T, s *Store, res BootstrapResult) {
		ctx := t.Context()
		for _, slug := range []string{"team", "Team", "téam", "team "} {
			v := &auth.VirtualKey{Slug: slug, OrganisationID: res.OrganisationID, Provider: "openai", SealedKey: []byte("k")}
			if err := s.CreateVirtualKey(ctx, v); err != nil {
				t.Errorf("CreateVirtualKey(%q): %v", slug, err)
			}
		}
		if v, err := s.VirtualKey(ctx, res.OrganisationID, "Team"); err != nil || v.Slug != "Team" {
			t.Errorf("VirtualKey(Team) = %v, %v", v, err)
		}
		if _, err := s.CreateWorkspace(ctx, res.OrganisationID, "Default", "Upper"); err != nil {
			t.Errorf("workspace slug differing in case: %v", err)
		}

		r := &reqlog.Record{OrganisationID: res.OrganisationID, Metadata: map[string]string{
			"env": "prod", "Env": "Prod", "ENV": "pröd",
		}}
		if err := s.InsertLogs(ctx, []*reqlog.Record{r}); err != nil {
			t.Fatalf("metadata keys differing in case: %v", err)
		}
		for _, tt := range []struct {
			k, v string
			want int
		}{
			{"env", "prod", 1}, {"env", "Prod", 0}, {"Env", "Prod", 1}, {"ENV", "prod", 0}, {"ENV", "pröd", 1},
		} {
			_, total, err := s.ListLogs(ctx, reqlog.Filter{Metadata: map[string]string{tt.k: tt.v}})
			if err != nil || total != tt.want {
				t.Errorf("filter %s=%s: total %d, %v; want %d", tt.k, tt.v, total, err, tt.want)
			}
		}
		got, err := s.Log(ctx, res.OrganisationID, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(r.Metadata, got.Metadata); diff != "" {
			t.Errorf("metadata (-want +got):\n%s", diff)
		}
	})
}

// TestLogTextCleaned: bytes that are not text (invalid UTF-8, NUL) must not
// fail a batch on any dialect; they are stored as U+FFFD everywhere.
func TestLogTextCleaned(t *testing.T) {
	forEachBootstrapped(t, func(t *testing.T, s *Store, res BootstrapResult) {
		ctx := t.Context()
		bad := "a\x00b\xffc\xe2\x82"
		r := &reqlog.Record{
			OrganisationID: res.OrganisationID, TraceID: bad, Model: bad,
			RequestBody: bad, ResponseBody: "\x00", ErrorMessage: bad,
			Metadata: map[string]string{bad: bad, "ok": "\x00"},
		}
		if err := s.InsertLogs(ctx, []*reqlog.Record{r, sampleRecord(res.OrganisationID, "", time.Time{})}); err != nil {
			t.Fatal(err)
		}
		got, err := s.Log(ctx, res.OrganisationID, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		const want = "a\uFFFDb\uFFFDc\uFFFD"
		for name, v := range map[string]string{
			"trace": got.TraceID, "model": got.Model, "request": got.RequestBody, "error": got.ErrorMessage,
		} {
			if v != want {
				t.Errorf("%s = %q, want %q", name, v, want)
			}
		}
		if got.ResponseBody != "\uFFFD" {
			t.Errorf("response = %q", got.ResponseBody)
		}
		if diff := cmp.Diff(map[string]string{want: want, "ok": "\uFFFD"}, got.Metadata); diff != "" {
			t.Errorf("metadata (-want +got):\n%s", diff)
		}
		// Filters with the same bytes find the record.
		list, _, err := s.ListLogs(ctx, reqlog.Filter{TraceID: bad, Model: bad, Metadata: map[string]string{bad: bad}})
		if err != nil || len(list) != 1 || list[0].ID != r.ID {
			t.Errorf("filter with invalid bytes: %d records, %v", len(list), err)
		}
	})
}

// TestLargeBodies: bodies beyond 64 KiB (the gateway's default cap, in
// multi-byte characters) round-trip, and a full batch of such records fits
// in one InsertLogs.
func TestLargeBodies(t *testing.T) {
	forEachBootstrapped(t, func(t *testing.T, s *Store, res BootstrapResult) {
		ctx := t.Context()
		big := strings.Repeat("€", 40<<10) // 120 KiB
		r := &reqlog.Record{OrganisationID: res.OrganisationID, RequestBody: big, ResponseBody: big + "x"}
		if err := s.InsertLogs(ctx, []*reqlog.Record{r}); err != nil {
			t.Fatal(err)
		}
		got, err := s.Log(ctx, res.OrganisationID, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.RequestBody != r.RequestBody || got.ResponseBody != r.ResponseBody {
			t.Errorf("bodies of %d and %d bytes read back as %d and %d",
				len(r.RequestBody), len(r.ResponseBody), len(got.RequestBody), len(got.ResponseBody))
		}

		body := strings.Repeat("b", 64<<10)
		recs := make([]*reqlog.Record, maxBulkRows+3)
		for i := range recs {
			recs[i] = &reqlog.Record{OrganisationID: res.OrganisationID, TraceID: "big", RequestBody: body, ResponseBody: body}
		}
		if err := s.InsertLogs(ctx, recs); err != nil {
			t.Fatalf("batch of %d records with 2×64 KiB bodies: %v", len(recs), err)
		}
		if _, total, err := s.ListLogs(ctx, reqlog.Filter{TraceID: "big", PageSize: 1}); err != nil || total != len(recs) {
			t.Errorf("big batch: total %d, %v", total, err)
		}
	})
}

func TestClipBytes(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 0, "abc"}, {"abc", 5, "abc"}, {"abc", 2, "ab"},
		{"a€b", 3, "a"}, {"a€b", 4, "a€"}, {"€", 2, ""},
	} {
		if got := clipBytes(tt.s, tt.n); got != tt.want || !utf8.ValidString(got) {
			t.Errorf("clipBytes(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

func TestIsUniqueViolation(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("duplicate"), false},
		{&pgconn.PgError{Code: "23505"}, true},
		{fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: "23505"}), true},
		{&pgconn.PgError{Code: "23503"}, false}, // foreign key
		{&mysql.MySQLError{Number: 1062}, true},
		{fmt.Errorf("wrapped: %w", &mysql.MySQLError{Number: 1062}), true},
		{&mysql.MySQLError{Number: 1452}, false}, // foreign key
	} {
		if got := isUniqueViolation(tt.err); got != tt.want {
			t.Errorf("isUniqueViolation(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// TestMigrationVersions: a version number belongs to one file across all
// migration directories, so a dialect's merged sequence never collides.
func TestMigrationVersions(t *testing.T) {
	seen := map[int64]string{}
	err := fs.WalkDir(migrationFiles, "migrations", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		v, err := goose.NumericComponent(d.Name())
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if other, dup := seen[v]; dup {
			t.Errorf("version %d used by %s and %s", v, other, path)
		}
		seen[v] = path
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []dialect{dialectSQLite, dialectPostgres, dialectMySQL} {
		fsys, err := migrationsFS(d)
		if err != nil {
			t.Fatal(err)
		}
		names, err := fs.Glob(fsys, "*.sql")
		if err != nil {
			t.Fatal(err)
		}
		mysqlOnly := slices.ContainsFunc(names, func(n string) bool { return strings.Contains(n, "mysql") })
		if mysqlOnly != (d.name == "mysql") || len(names) < 2 {
			t.Errorf("%s runs %v", d.name, names)
		}
		for _, n := range names {
			if _, err := fs.ReadFile(fsys, n); err != nil {
				t.Errorf("%s: %s: %v", d.name, n, err)
			}
		}
	}
}

// mysqlOnly skips t unless the MySQL test server is configured, and returns
// its URL.
func mysqlOnly(t *testing.T) string {
	t.Helper()
	u := os.Getenv(envTestMySQL)
	if u == "" {
		t.Skipf("%s not set: skipping MySQL contract tests", envTestMySQL)
	}
	return u
}

// TestMySQLSchema checks what the MySQL follow-up migration promises: a
// NO PAD binary collation on every text column, MEDIUMTEXT request-log text, and the
// foreign keys back in place.
func TestMySQLSchema(t *testing.T) {
	server := mysqlOnly(t)
	for _, charset := range []string{"", "CHARACTER SET latin1"} {
		t.Run("database "+charset, func(t *testing.T) {
			ctx := t.Context()
			s := migrate(t, openURL(t, freshMySQLDatabaseWith(t, server, charset)))
			var cols []struct {
				Table     string  `db:"TABLE_NAME"`
				Column    string  `db:"COLUMN_NAME"`
				Type      string  `db:"DATA_TYPE"`
				Collation *string `db:"COLLATION_NAME"`
			}
			if err := s.r.SelectContext(ctx, &cols, `SELECT TABLE_NAME, COLUMN_NAME, DATA_TYPE, COLLATION_NAME
				FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME <> ?`, gooseTable); err != nil {
				t.Fatal(err)
			}
			if len(cols) < 50 {
				t.Fatalf("%d columns", len(cols))
			}
			var want string
			if err := s.r.GetContext(ctx, &want, `SELECT COLLATION_NAME FROM information_schema.COLLATIONS
				WHERE COLLATION_NAME IN ('utf8mb4_nopad_bin', 'utf8mb4_0900_bin') ORDER BY COLLATION_NAME DESC LIMIT 1`); err != nil {
				t.Fatalf("no NO PAD binary collation on this server: %v", err)
			}
			for _, c := range cols {
				if c.Collation != nil && *c.Collation != want {
					t.Errorf("%s.%s: collation %s", c.Table, c.Column, *c.Collation)
				}
				if c.Table == "request_logs" && c.Type == "text" {
					t.Errorf("request_logs.%s is TEXT, want MEDIUMTEXT", c.Column)
				}
			}
			var fks int
			if err := s.r.GetContext(ctx, &fks, `SELECT COUNT(*) FROM information_schema.REFERENTIAL_CONSTRAINTS
				WHERE CONSTRAINT_SCHEMA = DATABASE()`); err != nil || fks != 10 {
				t.Errorf("%d foreign keys, %v; want 10", fks, err)
			}
			// The foreign keys work: a workspace of no organisation is refused.
			_, err := s.CreateWorkspace(ctx, "no-such-org", "x", "x")
			if err == nil {
				t.Error("workspace of an unknown organisation accepted")
			}
			// Four-byte characters are kept whatever the database's default.
			res := bootstrap(t, s)
			r := sampleRecord(res.OrganisationID, res.WorkspaceID, time.Time{})
			r.RequestBody = "emoji 🦫 and ✓"
			if err := s.InsertLogs(ctx, []*reqlog.Record{r}); err != nil {
				t.Fatal(err)
			}
			if got, err := s.Log(ctx, res.OrganisationID, r.ID); err != nil || got.RequestBody != r.RequestBody {
				t.Errorf("body read back as %q, %v", got.RequestBody, err)
			}
		})
	}
}

// TestMySQLSSLModes checks that DB_SSL reaches the driver, against the test
// server: DISABLED and PREFERRED connect to a server without TLS, REQUIRED
// fails on it (and connects to one with TLS).
func TestMySQLSSLModes(t *testing.T) {
	u := freshMySQLDatabase(t, mysqlOnly(t))
	ctx := t.Context()
	s, err := OpenWithOptions(ctx, u, "", Options{DBSSL: "DISABLED"})
	if err != nil {
		t.Fatalf("DISABLED: %v", err)
	}
	var haveSSL string
	if err := s.r.QueryRowxContext(ctx, "SELECT @@have_ssl").Scan(&haveSSL); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err := OpenWithOptions(ctx, u, "", Options{DBSSL: "preferred"}); err != nil {
		t.Errorf("PREFERRED: %v", err)
	} else {
		s.Close()
	}
	s, err = OpenWithOptions(ctx, u, "", Options{DBSSL: "REQUIRED"})
	switch {
	case haveSSL == "YES" && err != nil:
		t.Errorf("REQUIRED on a server with TLS: %v", err)
	case haveSSL != "YES" && err == nil:
		t.Errorf("REQUIRED on a server without TLS (have_ssl=%s) connected", haveSSL)
	case haveSSL != "YES":
		t.Logf("REQUIRED without server TLS: %v", err)
	}
	if s != nil {
		s.Close()
	}
}

// TestMySQLConfig covers the URL-to-driver conversion without a server.
func TestMySQLConfig(t *testing.T) {
	cfg, err := mysqlConfig("mysql://us%40er:p%40ss%2Fw:rd@db.example:3307/gw?sql_mode=TRADITIONAL&timeout=5s&parseTime=true&tls=skip-verify", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.User != "us@er" || cfg.Passwd != "p@ss/w:rd" || cfg.Net != "tcp" || cfg.Addr != "db.example:3307" || cfg.DBName != "gw" {
		t.Errorf("cfg = %s@%s(%s)/%s", cfg.User, cfg.Net, cfg.Addr, cfg.DBName)
	}
	if cfg.ParseTime || cfg.MultiStatements || !cfg.ClientFoundRows || !cfg.InterpolateParams || cfg.MaxAllowedPacket != 0 {
		t.Errorf("forced settings: %+v", cfg)
	}
	if cfg.Params["sql_mode"] != "TRADITIONAL" || cfg.Timeout != 5*time.Second {
		t.Errorf("extra parameters lost: %v, timeout %v", cfg.Params, cfg.Timeout)
	}
	if cfg.TLS == nil || !cfg.TLS.InsecureSkipVerify {
		t.Errorf("the URL's tls parameter was dropped without DB_SSL: %+v", cfg.TLS)
	}

	cfg, err = mysqlConfig("mysql://u@db.example/gw?tls=true&interpolateParams=false", Options{DBSSL: "DISABLED"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TLS != nil || cfg.Addr != "db.example:3306" || cfg.InterpolateParams {
		t.Errorf("DISABLED: TLS %v, addr %s, interpolate %v", cfg.TLS, cfg.Addr, cfg.InterpolateParams)
	}
	cfg, err = mysqlConfig("mysql://u@db.example/gw", Options{DBSSL: "VERIFY_IDENTITY"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TLS == nil || cfg.TLS.ServerName != "db.example" || cfg.TLS.InsecureSkipVerify {
		t.Errorf("VERIFY_IDENTITY: %+v", cfg.TLS)
	}
	cfg, err = mysqlConfig("mysql://u@db.example/gw", Options{DBSSL: "PREFERRED"})
	if err != nil || cfg.TLS == nil || !cfg.AllowFallbackToPlaintext {
		t.Errorf("PREFERRED: %v, %+v", err, cfg)
	}
	for _, bad := range []string{"mysql://u:p@h", "mysql://u:p@h/", "mysql://u:p@h/a/b", "mysql:u:p@h/db"} {
		if _, err := mysqlConfig(bad, Options{}); err == nil {
			t.Errorf("mysqlConfig(%q): no error", bad)
		}
	}
}

// TestReadyOnEveryDialect: Ready answers on an open, migrated store.
func TestReadyOnEveryDialect(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *Store) {
		if err := s.Ready(t.Context()); err != nil {
			t.Fatal(err)
		}
		if s.Dialect() == "" {
			t.Error("no dialect name")
		}
		if err := s.r.PingContext(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestConflictsAndNotFound pins the client-visible errors on every dialect.
func TestConflictsAndNotFound(t *testing.T) {
	forEachBootstrapped(t, func(t *testing.T, s *Store, res BootstrapResult) {
		ctx := t.Context()
		if _, err := s.CreateWorkspace(ctx, res.OrganisationID, bootstrapWorkspaceSlug, "again"); !errors.Is(err, httpx.ErrConflict) {
			t.Errorf("duplicate workspace slug: %v", err)
		}
		if _, err := s.VirtualKey(ctx, res.OrganisationID, "nope"); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("unknown virtual key: %v", err)
		}
		if _, err := s.DeleteVirtualKey(ctx, res.OrganisationID, "nope"); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("delete unknown virtual key: %v", err)
		}
		v := &auth.VirtualKey{Slug: "vk", OrganisationID: res.OrganisationID, Provider: "openai", SealedKey: []byte("k")}
		if err := s.CreateVirtualKey(ctx, v); err != nil {
			t.Fatal(err)
		}
		// An update that changes nothing but the timestamp of the same
		// microsecond still finds the row (MySQL counts matched rows).
		frozen := time.Now()
		s.now = func() time.Time { return frozen }
		for range 2 {
			if err := s.UpdateVirtualKey(ctx, v); err != nil {
				t.Errorf("idempotent update: %v", err)
			}
		}
		s.now = time.Now
		noOrg := &auth.VirtualKey{Slug: "vk2", OrganisationID: "no-such-org", Provider: "openai"}
		if err := s.CreateVirtualKey(ctx, noOrg); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("virtual key of an organisation without workspace: %v", err)
		}
	})
}
