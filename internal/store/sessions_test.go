package store

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/tenancy"
)

func TestSessions(t *testing.T) {
	forEachBootstrapped(t, func(t *testing.T, s *Store, res BootstrapResult) {
		ctx := t.Context()
		created := time.Date(2030, 1, 2, 3, 4, 5, 6000, time.UTC)
		sess := &Session{
			OrganisationID: res.OrganisationID, UserID: res.UserID, TokenHash: "hash-1",
			CreatedAt: created, ExpiresAt: created.Add(12 * time.Hour),
		}
		if err := s.CreateSession(ctx, sess); err != nil {
			t.Fatal(err)
		}
		if sess.ID == "" {
			t.Fatal("CreateSession did not fill the id")
		}
		got, err := s.SessionByHash(ctx, "hash-1")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(sess, got); diff != "" {
			t.Errorf("SessionByHash (-want +got):\n%s", diff)
		}
		if _, err := s.SessionByHash(ctx, "unknown"); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("SessionByHash(unknown) = %v, want ErrNotFound", err)
		}
		dup := &Session{OrganisationID: res.OrganisationID, UserID: res.UserID, TokenHash: "hash-1", ExpiresAt: created}
		if err := s.CreateSession(ctx, dup); !errors.Is(err, httpx.ErrConflict) {
			t.Errorf("duplicate token hash: %v, want ErrConflict", err)
		}

		revoked := created.Add(time.Hour)
		if err := s.RevokeSession(ctx, sess.ID, revoked); err != nil {
			t.Fatal(err)
		}
		// A second revocation keeps the first time.
		if err := s.RevokeSession(ctx, sess.ID, revoked.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		got, err = s.SessionByHash(ctx, "hash-1")
		if err != nil {
			t.Fatal(err)
		}
		if got.RevokedAt == nil || !got.RevokedAt.Equal(revoked) {
			t.Errorf("RevokedAt = %v, want %v", got.RevokedAt, revoked)
		}
		if err := s.RevokeSession(ctx, "no-such-session", revoked); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("RevokeSession(unknown) = %v, want ErrNotFound", err)
		}

		later := &Session{OrganisationID: res.OrganisationID, UserID: res.UserID, TokenHash: "hash-2",
			CreatedAt: created, ExpiresAt: created.Add(48 * time.Hour)}
		if err := s.CreateSession(ctx, later); err != nil {
			t.Fatal(err)
		}
		n, err := s.DeleteExpiredSessions(ctx, created.Add(24*time.Hour))
		if err != nil || n != 1 {
			t.Fatalf("DeleteExpiredSessions = %d, %v; want 1", n, err)
		}
		if _, err := s.SessionByHash(ctx, "hash-1"); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("expired session still stored: %v", err)
		}
		if _, err := s.SessionByHash(ctx, "hash-2"); err != nil {
			t.Errorf("live session deleted: %v", err)
		}
	})
}

func TestUserByEmailAndFirstMembership(t *testing.T) {
	forEachBootstrapped(t, func(t *testing.T, s *Store, res BootstrapResult) {
		ctx := t.Context()
		u := &tenancy.User{OrganisationID: res.OrganisationID, Email: "ada@example.com", Name: "Ada", Role: tenancy.RoleMember}
		if err := s.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		got, err := s.UserByEmail(ctx, "ada@example.com")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(u, got); diff != "" {
			t.Errorf("UserByEmail (-want +got):\n%s", diff)
		}
		if _, err := s.UserByEmail(ctx, "nobody@example.com"); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("UserByEmail(unknown) = %v, want ErrNotFound", err)
		}

		if _, err := s.FirstMembership(ctx, u.ID); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("FirstMembership without memberships = %v, want ErrNotFound", err)
		}
		second, err := s.CreateWorkspace(ctx, res.OrganisationID, "second", "Second")
		if err != nil {
			t.Fatal(err)
		}
		clock := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
		s.now = func() time.Time { return clock }
		if _, err := s.AddMember(ctx, second, u.ID, tenancy.WorkspaceRoleManager); err != nil {
			t.Fatal(err)
		}
		clock = clock.Add(time.Minute)
		if _, err := s.AddMember(ctx, res.WorkspaceID, u.ID, tenancy.WorkspaceRoleMember); err != nil {
			t.Fatal(err)
		}
		m, err := s.FirstMembership(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		if m.WorkspaceID != second || m.Role != tenancy.WorkspaceRoleManager || m.Email != u.Email {
			t.Errorf("FirstMembership = %+v, want the earlier membership of %s", m, second)
		}
	})
}
