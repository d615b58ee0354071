package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jmoiron/sqlx"

	"github.com/ai-gateway/gateway/internal/auth"
	"github.com/ai-gateway/gateway/internal/httpx"
)

// openSQLiteTest opens a store on a fresh SQLite file and closes it with
// the test, for the tests of SQLite's own settings.
func openSQLiteTest(t testing.TB) *Store {
	t.Helper()
	s, err := Open(t.Context(), "", filepath.Join(t.TempDir(), "data"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestOpenCreatesDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	s, err := Open(t.Context(), "", dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		t.Errorf("data dir mode = %o, want 700", perm)
	}
	if _, err := os.Stat(filepath.Join(dir, "gateway.db")); err != nil {
		t.Errorf("database file: %v", err)
	}
}

func TestOpenURLs(t *testing.T) {
	dir := t.TempDir()
	for _, u := range []string{
		"sqlite://" + filepath.Join(dir, "a.db"),
		"file:" + filepath.Join(dir, "b.db"),
		"sqlite://" + filepath.Join(dir, "c.db") + "?cache=private",
	} {
		s, err := Open(t.Context(), u, "")
		if err != nil {
			t.Errorf("Open(%q): %v", u, err)
			continue
		}
		if err := s.Migrate(t.Context()); err != nil {
			t.Errorf("Migrate(%q): %v", u, err)
		}
		var mode string
		if err := s.r.GetContext(t.Context(), &mode, "PRAGMA journal_mode"); err != nil || mode != "wal" {
			t.Errorf("%q: journal_mode = %q, %v; want wal", u, mode, err)
		}
		s.Close()
	}
	// Server URLs that cannot connect, or do not parse, fail without
	// showing the password.
	for _, u := range []string{
		"postgres://u:secret@127.0.0.1:1/db?connect_timeout=5",
		"postgresql://u:secret@127.0.0.1:1/db?sslmode=disable",
		"postgres://u@127.0.0.1:1/db?password=secret&sslmode=disable",
		"postgres://u:secret@127.0.0.1:1/db?sslmode=bogus",
		"mysql://u:secret@127.0.0.1:1/db",
		"mysql://u:secret@127.0.0.1:1/",
		"mysql://u:secret@127.0.0.1:1/db?timeout=notaduration",
		"mysql://u:sec%zzret@127.0.0.1:1/db",
		"mariadb://u:secret@127.0.0.1:1/db",
		"redis://u:secret@x",
	} {
		_, err := Open(t.Context(), u, dir)
		if err == nil {
			t.Errorf("Open(%q): no error", u)
			continue
		}
		if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "sec%zz") {
			t.Errorf("Open(%q): error leaks the password: %v", u, err)
		}
	}
	_, err := OpenWithOptions(t.Context(), "mysql://u:secret@127.0.0.1:1/db", dir, Options{DBSSL: "SOMETIMES"})
	if err == nil || !strings.Contains(err.Error(), "SOMETIMES") || strings.Contains(err.Error(), "secret") {
		t.Errorf("unknown DB_SSL mode: %v", err)
	}
}

// TestPragmas checks that every connection of both pools, not only the
// first, runs with the pragmas of the DSN.
func TestPragmas(t *testing.T) {
	s := openSQLiteTest(t)
	ctx := t.Context()
	check := func(name string, conn interface {
		GetContext(context.Context, any, string, ...any) error
	}) {
		t.Helper()
		for pragma, want := range map[string]int{"busy_timeout": 5000, "foreign_keys": 1, "synchronous": 1} {
			var got int
			if err := conn.GetContext(ctx, &got, "PRAGMA "+pragma); err != nil {
				t.Fatalf("%s: %s: %v", name, pragma, err)
			}
			if got != want {
				t.Errorf("%s: %s = %d, want %d", name, pragma, got, want)
			}
		}
	}
	check("writer", s.w)
	// Hold every read connection at once so each is a distinct connection.
	var conns []*sqlx.Conn
	for range readPoolSize {
		c, err := s.r.Connx(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	for _, c := range conns {
		check("reader", c)
	}
	if _, err := conns[0].ExecContext(ctx, "CREATE TABLE t (x INTEGER)"); err == nil {
		t.Error("read pool accepted a write")
	}
}

func TestMigrateAndReady(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		s := b.open(t)
		ctx := t.Context()
		if err := s.Ready(ctx); err == nil {
			t.Fatal("Ready before Migrate: no error")
		}
		for i := range 2 {
			if err := s.Migrate(ctx); err != nil {
				t.Fatalf("Migrate #%d: %v", i+1, err)
			}
		}
		if err := s.Ready(ctx); err != nil {
			t.Fatalf("Ready after Migrate: %v", err)
		}
		// Rolling the last migration back makes the store not ready again.
		if _, err := s.migrations.Down(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Ready(ctx); err == nil || !strings.Contains(err.Error(), "pending") {
			t.Fatalf("Ready with a pending migration = %v", err)
		}
		if err := s.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Ready(ctx); err != nil {
			t.Fatal(err)
		}
		// Everything down and up again: the down migrations work too.
		if _, err := s.migrations.DownTo(ctx, 0); err != nil {
			t.Fatalf("down to 0: %v", err)
		}
		if err := s.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Ready(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

func TestBootstrap(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		first, err := s.Bootstrap(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !first.Fresh || first.OrganisationID == "" || first.WorkspaceID == "" || first.UserID == "" {
			t.Fatalf("first Bootstrap = %+v", first)
		}
		again, err := s.Bootstrap(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := first
		want.Fresh = false
		if diff := cmp.Diff(want, again); diff != "" {
			t.Errorf("second Bootstrap (-want +got):\n%s", diff)
		}
		ws, err := s.DefaultWorkspaceID(ctx, first.OrganisationID)
		if err != nil || ws != first.WorkspaceID {
			t.Errorf("DefaultWorkspaceID = %q, %v; want %q", ws, err, first.WorkspaceID)
		}
		if _, err := s.DefaultWorkspaceID(ctx, "nope"); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("DefaultWorkspaceID(unknown) = %v, want ErrNotFound", err)
		}
	})
}

func TestBootstrapAdminKey(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		newKey := func() *auth.APIKey {
			return &auth.APIKey{Hash: "4f1c0ffee", Mask: "gw-abc…wxyz", Scopes: []string{"completions.write"}}
		}
		k1 := newKey()
		res, err := s.Bootstrap(ctx, k1)
		if err != nil {
			t.Fatal(err)
		}
		if k1.ID == "" || k1.OrganisationID != res.OrganisationID || k1.Type != auth.KeyTypeOrganisation ||
			k1.Subtype != auth.KeySubtypeService || k1.Status != auth.StatusActive || k1.CreatedAt.IsZero() {
			t.Errorf("admin key after Bootstrap = %+v", k1)
		}
		k2 := newKey()
		if _, err := s.Bootstrap(ctx, k2); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(k1, k2); diff != "" {
			t.Errorf("second Bootstrap returned another key (-first +second):\n%s", diff)
		}
		var n int
		if err := s.r.GetContext(ctx, &n, "SELECT COUNT(*) FROM api_keys"); err != nil || n != 1 {
			t.Errorf("api_keys rows = %d, %v; want 1", n, err)
		}
		got, err := s.APIKeyByHash(ctx, k1.Hash)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(k1, got); diff != "" {
			t.Errorf("APIKeyByHash (-want +got):\n%s", diff)
		}
	})
}

func TestAPIKeys(t *testing.T) {
	forEachBootstrapped(t, func(t *testing.T, s *Store, res BootstrapResult) {
		ctx := t.Context()
		exp := time.Date(2031, 2, 3, 4, 5, 6, 789123456, time.FixedZone("x", 3600))
		k := &auth.APIKey{
			OrganisationID: res.OrganisationID,
			WorkspaceID:    res.WorkspaceID,
			UserID:         res.UserID,
			Name:           "ci",
			Description:    "for the CI",
			Type:           auth.KeyTypeWorkspace,
			Subtype:        auth.KeySubtypeUser,
			Hash:           "hash-1",
			Mask:           "gw-12…89",
			Scopes:         []string{"completions.write", "logs.list"},
			Status:         auth.StatusActive,
			Defaults:       []byte(`{"config_id":"pc-1"}`),
			ExpiresAt:      &exp,
		}
		if err := s.CreateAPIKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		if k.ID == "" || k.CreatedAt.IsZero() || !k.UpdatedAt.Equal(k.CreatedAt) {
			t.Errorf("CreateAPIKey did not fill id and timestamps: %+v", k)
		}
		got, err := s.APIKeyByHash(ctx, "hash-1")
		if err != nil {
			t.Fatal(err)
		}
		want := *k
		wantExp := exp.UTC().Truncate(time.Microsecond)
		want.ExpiresAt = &wantExp
		if diff := cmp.Diff(&want, got); diff != "" {
			t.Errorf("APIKeyByHash (-want +got):\n%s", diff)
		}

		// An organisation key without workspace, user, scopes or defaults.
		bare := &auth.APIKey{OrganisationID: res.OrganisationID, Type: auth.KeyTypeOrganisation,
			Subtype: auth.KeySubtypeService, Hash: "hash-2", Status: auth.StatusActive}
		if err := s.CreateAPIKey(ctx, bare); err != nil {
			t.Fatal(err)
		}
		got, err = s.APIKeyByHash(ctx, "hash-2")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(bare, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("APIKeyByHash bare (-want +got):\n%s", diff)
		}

		dup := &auth.APIKey{OrganisationID: res.OrganisationID, Hash: "hash-1", Type: "organisation", Subtype: "service", Status: "active"}
		err = s.CreateAPIKey(ctx, dup)
		if !errors.Is(err, httpx.ErrConflict) {
			t.Fatalf("duplicate hash: %v, want ErrConflict", err)
		}
		if he := httpx.As(err); he.Status != 409 || strings.Contains(he.Message, "UNIQUE") {
			t.Errorf("duplicate hash renders as %d %q", he.Status, he.Message)
		}
		_, err = s.APIKeyByHash(ctx, "unknown")
		if !errors.Is(err, httpx.ErrNotFound) {
			t.Fatalf("unknown hash: %v, want ErrNotFound", err)
		}
	})
}

func TestCreateWorkspace(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		res, err := s.Bootstrap(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		id, err := s.CreateWorkspace(ctx, res.OrganisationID, "team-b", "Team B")
		if err != nil || id == "" {
			t.Fatalf("create = %q, %v", id, err)
		}
		if _, err := s.CreateWorkspace(ctx, res.OrganisationID, "team-b", "Again"); !errors.Is(err, httpx.ErrConflict) {
			t.Errorf("duplicate slug: %v", err)
		}
		if def, _ := s.DefaultWorkspaceID(ctx, res.OrganisationID); def != res.WorkspaceID {
			t.Errorf("default workspace changed to %s", def)
		}
	})
}
