package sso

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ai-gateway/gateway/internal/audit"
	"github.com/ai-gateway/gateway/internal/auth"
	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/tenancy"
)

func TestSafeReturnTo(t *testing.T) {
	for v, want := range map[string]bool{
		"/":                             true,
		"/console/logs?page=2":          true,
		"/a#frag":                       true,
		"":                              false,
		"console":                       false,
		"//evil.example/":               false,
		"/\\evil.example":               false,
		"https://evil.example/":         false,
		"javascript:alert(1)":           false,
		"/ok\r\nSet-Cookie: x":          false,
		"/" + strings.Repeat("a", 3000): false,
	} {
		if got := safeReturnTo(v); got != want {
			t.Errorf("safeReturnTo(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestNewToken(t *testing.T) {
	a, b := newToken(), newToken()
	if a == b || len(a) != len(TokenPrefix)+43 || !strings.HasPrefix(a, TokenPrefix) {
		t.Fatalf("newToken = %q, %q", a, b)
	}
	if strings.Trim(a[len(TokenPrefix):], tokenAlphabet) != "" {
		t.Errorf("token %q has characters outside base62", a)
	}
}

func TestChallengeS256(t *testing.T) {
	// RFC 7636 Appendix B.
	if got := challengeS256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"); got != "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM" {
		t.Errorf("challengeS256 = %q", got)
	}
}

func TestConsumeOnce(t *testing.T) {
	s := &Service{used: map[string]time.Time{}}
	now := time.Now()
	if !s.consume("a", now.Add(time.Minute), now) || s.consume("a", now.Add(time.Minute), now) {
		t.Error("a state must be consumed exactly once")
	}
}

// memStore is the part of Store that the verifier uses.
type memStore struct {
	Store
	mu       sync.Mutex
	sessions map[string]*Session
	users    map[string]*tenancy.User
	members  map[string]string // user id -> workspace id
	loads    int
}

func (m *memStore) SessionByHash(_ context.Context, h string) (*Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.loads++
	s, ok := m.sessions[h]
	if !ok {
		return nil, fmt.Errorf("session: %w", httpx.ErrNotFound)
	}
	c := *s
	return &c, nil
}

func (m *memStore) User(_ context.Context, _, id string) (*tenancy.User, error) {
	if u, ok := m.users[id]; ok {
		return u, nil
	}
	return nil, fmt.Errorf("user: %w", httpx.ErrNotFound)
}

func (m *memStore) DefaultWorkspaceID(context.Context, string) (string, error) {
	return "ws-default", nil
}

func (m *memStore) FirstMembership(_ context.Context, userID string) (*tenancy.Member, error) {
	if ws, ok := m.members[userID]; ok {
		return &tenancy.Member{WorkspaceID: ws, UserID: userID}, nil
	}
	return nil, fmt.Errorf("member: %w", httpx.ErrNotFound)
}

func (m *memStore) InsertAuditRecord(context.Context, *audit.Record) error { return nil }

type nopSealer struct{}

func (nopSealer) Seal(p, _ []byte) []byte          { return p }
func (nopSealer) Open(p, _ []byte) ([]byte, error) { return p, nil }

func TestVerify(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	st := &memStore{
		sessions: map[string]*Session{},
		users: map[string]*tenancy.User{
			"owner":  {ID: "owner", OrganisationID: "org", Role: tenancy.RoleOwner},
			"member": {ID: "member", OrganisationID: "org", Role: tenancy.RoleMember},
			"loner":  {ID: "loner", OrganisationID: "org", Role: tenancy.RoleMember},
		},
		members: map[string]string{"member": "ws-1"},
	}
	add := func(user string, expires time.Time, revoked bool) string {
		raw := newToken()
		s := &Session{ID: "s-" + user, OrganisationID: "org", UserID: user, TokenHash: auth.HashKey(raw), ExpiresAt: expires}
		if revoked {
			s.RevokedAt = &now
		}
		st.sessions[s.TokenHash] = s
		return raw
	}
	svc, err := New(Options{Issuer: "https://idp.example", ClientID: "c", RedirectURL: "https://gw.example/v1/auth/sso/callback",
		Provisioning: ProvisionReject, Store: st, Sealer: nopSealer{}, CacheTTL: time.Minute, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	principal := func(user, keyType, ws string) *auth.Principal {
		return &auth.Principal{OrganisationID: "org", UserID: user, KeyType: keyType, WorkspaceID: ws,
			Scopes: []string{auth.ScopeAll}, Method: auth.MethodSession}
	}
	owner := add("owner", now.Add(time.Hour), false)
	tests := []struct {
		name string
		raw  string
		want *auth.Principal
		code string
	}{
		{"owner", owner, principal("owner", auth.KeyTypeOrganisation, "ws-default"), ""},
		{"member", add("member", now.Add(time.Hour), false), principal("member", auth.KeyTypeWorkspace, "ws-1"), ""},
		{"no workspace", add("loner", now.Add(time.Hour), false), principal("loner", auth.KeyTypeWorkspace, ""), ""},
		{"expired", add("owner", now, false), nil, "session_expired"},
		{"revoked", add("member", now.Add(time.Hour), true), nil, "session_revoked"},
		{"unknown", "gws-nope", nil, "invalid_session"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !svc.Claims(tc.raw) {
				t.Fatalf("Claims(%q) = false", tc.raw)
			}
			p, err := svc.Verify(t.Context(), tc.raw)
			if tc.code != "" {
				var he *httpx.Error
				if !errors.As(err, &he) || he.Status != 401 || he.Code != tc.code {
					t.Fatalf("Verify = %v, %v; want 401 %s", p, err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, p); diff != "" {
				t.Errorf("principal (-want +got):\n%s", diff)
			}
		})
	}
	if svc.Claims("gw-abc") || svc.Claims("eyJhbGciOi") {
		t.Error("Claims accepted an API key or a JWT")
	}

	// A cached session is not read again, but its expiry still applies.
	short := add("member", now.Add(30*time.Second), false)
	if _, err := svc.Verify(t.Context(), short); err != nil {
		t.Fatal(err)
	}
	loads := st.loads
	if _, err := svc.Verify(t.Context(), short); err != nil || st.loads != loads {
		t.Fatalf("cached Verify: %v, loads %d -> %d", err, loads, st.loads)
	}
	now = now.Add(45 * time.Second) // within CacheTTL, past the session's expiry
	if _, err := svc.Verify(t.Context(), short); err == nil || st.loads != loads {
		t.Errorf("Verify of a cached, expired session = %v (loads %d -> %d), want 401 from the cache", err, loads, st.loads)
	}
}
