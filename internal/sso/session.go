package sso

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/ai-gateway/gateway/internal/auth"
	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/tenancy"
)

// TokenPrefix starts every session token, so that the authenticator can
// tell one from an API key ("gw-") or a JWT without I/O, and a leaked
// token is recognisable.
const TokenPrefix = "gws-"

const tokenAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// newToken returns TokenPrefix and 43 base62 characters (about 256 bits;
// rejection sampling keeps every character uniform).
func newToken() string {
	out := make([]byte, 0, len(TokenPrefix)+43)
	out = append(out, TokenPrefix...)
	buf := make([]byte, 64)
	for len(out) < cap(out) {
		_, _ = rand.Read(buf) // crypto/rand.Read never fails (Go 1.24+)
		for _, c := range buf {
			if c < 248 && len(out) < cap(out) { // 248 = 4*62
				out = append(out, tokenAlphabet[int(c)%len(tokenAlphabet)])
			}
		}
	}
	return string(out)
}

// maxCachedSessions bounds the verified-session cache.
const maxCachedSessions = 10_000

// cachedSession is a verified session: its principal, its own expiry and
// the cache entry's.
type cachedSession struct {
	p         *auth.Principal
	sessionID string
	expires   time.Time
	until     time.Time
}

// Claims reports whether raw is a session token (auth.Verifier).
func (s *Service) Claims(raw string) bool { return strings.HasPrefix(raw, TokenPrefix) }

// Verify resolves a session token to its principal (auth.Verifier): 401
// when it is unknown, revoked or expired, or its user is gone. Verified
// sessions are cached for CacheTTL, their expiry checked on every call.
func (s *Service) Verify(ctx context.Context, raw string) (*auth.Principal, error) {
	now := s.o.Now()
	hash := auth.HashKey(raw)
	s.mu.RLock()
	c, ok := s.cache[hash]
	s.mu.RUnlock()
	if !ok || !now.Before(c.until) {
		v, err := s.load(ctx, hash, now)
		if err != nil {
			return nil, err
		}
		c = cachedSession{p: v.principal, sessionID: v.session.ID, expires: v.session.ExpiresAt, until: now.Add(s.o.CacheTTL)}
		s.mu.Lock()
		if len(s.cache) >= maxCachedSessions {
			clear(s.cache)
		}
		s.cache[hash] = c
		s.mu.Unlock()
	}
	if !now.Before(c.expires) {
		return nil, httpx.Unauthorized("session_expired", "this session has expired; log in again")
	}
	return c.p, nil
}

// verified is a live session with its user and principal.
type verified struct {
	session   *Session
	user      *tenancy.User
	principal *auth.Principal
}

// load reads the session with hash from the store and builds its
// principal (see principal).
func (s *Service) load(ctx context.Context, hash string, now time.Time) (*verified, error) {
	sess, err := s.o.Store.SessionByHash(ctx, hash)
	if errors.Is(err, httpx.ErrNotFound) {
		return nil, httpx.Unauthorized("invalid_session", "invalid session token")
	}
	if err != nil {
		return nil, authUnavailable(err)
	}
	switch {
	case sess.RevokedAt != nil:
		return nil, httpx.Unauthorized("session_revoked", "this session has been logged out; log in again")
	case !now.Before(sess.ExpiresAt):
		return nil, httpx.Unauthorized("session_expired", "this session has expired; log in again")
	}
	u, err := s.o.Store.User(ctx, sess.OrganisationID, sess.UserID)
	if errors.Is(err, httpx.ErrNotFound) {
		return nil, httpx.Unauthorized("invalid_session", "this session's user no longer exists")
	}
	if err != nil {
		return nil, authUnavailable(err)
	}
	p, err := s.principal(ctx, u)
	if err != nil {
		return nil, authUnavailable(err)
	}
	return &verified{session: sess, user: u, principal: p}, nil
}

// principal is how a session acts on the control plane: with every scope,
// narrowed by the user's role in the control plane's RBAC. An owner or
// admin acts as an organisation key in the default workspace; anyone else
// as a workspace key of their earliest workspace membership, or of none,
// which lets them only see who they are.
func (s *Service) principal(ctx context.Context, u *tenancy.User) (*auth.Principal, error) {
	p := &auth.Principal{
		OrganisationID: u.OrganisationID, UserID: u.ID, Scopes: []string{auth.ScopeAll}, Method: auth.MethodSession,
	}
	if tenancy.IsOrgAdmin(u.Role) {
		ws, err := s.o.Store.DefaultWorkspaceID(ctx, u.OrganisationID)
		if err != nil {
			return nil, err
		}
		p.KeyType, p.WorkspaceID = auth.KeyTypeOrganisation, ws
		return p, nil
	}
	p.KeyType = auth.KeyTypeWorkspace
	m, err := s.o.Store.FirstMembership(ctx, u.ID)
	switch {
	case err == nil:
		p.WorkspaceID = m.WorkspaceID
	case !errors.Is(err, httpx.ErrNotFound):
		return nil, err
	}
	return p, nil
}

func authUnavailable(err error) error {
	return &httpx.Error{Status: http.StatusServiceUnavailable, Type: httpx.TypeServer, Code: "auth_unavailable",
		Message: "cannot verify the session right now", Err: err}
}

// sessionCredential is the request's session token: x-gateway-api-key or
// the session cookie (auth.CredentialFrom), when it is one.
func (s *Service) sessionCredential(r *http.Request) (string, error) {
	raw := auth.CredentialFrom(r)
	if raw == "" {
		return "", httpx.Unauthorized("missing_session", "not logged in: no session cookie or x-gateway-api-key")
	}
	if !s.Claims(raw) {
		return "", httpx.Unauthorized("invalid_session", "the credential is not a session token; /v1/auth/session describes SSO sessions only")
	}
	return raw, nil
}

// current answers GET /v1/auth/session: the caller's session and user.
// It reads the store, not the cache, so it shows a logout at once.
func (s *Service) current(w http.ResponseWriter, r *http.Request) error {
	raw, err := s.sessionCredential(r)
	if err != nil {
		return err
	}
	v, err := s.load(r.Context(), auth.HashKey(raw), s.o.Now())
	if err != nil {
		return err
	}
	obj := sessionObject(v.session, v.user, "")
	obj["workspace_id"] = v.principal.WorkspaceID
	httpx.WriteJSON(w, http.StatusOK, obj)
	return nil
}

// Forget drops the cached verification of the session whose token hash is
// tokenHash (revoked, possibly by another gateway process).
func (s *Service) Forget(tokenHash string) {
	s.mu.Lock()
	delete(s.cache, tokenHash)
	s.mu.Unlock()
}

// logout answers POST /v1/auth/logout: the session is revoked and the
// cookie cleared. The cookie is cleared even when the session was already
// invalid.
func (s *Service) logout(w http.ResponseWriter, r *http.Request) error {
	start := s.o.Now()
	raw, err := s.sessionCredential(r)
	if err != nil {
		return err
	}
	s.clearSessionCookie(w)
	hash := auth.HashKey(raw)
	v, err := s.load(r.Context(), hash, start)
	if err != nil {
		return err
	}
	if err := s.o.Store.RevokeSession(r.Context(), v.session.ID, start); err != nil {
		return err
	}
	s.Forget(hash)
	if s.o.OnRevoke != nil {
		s.o.OnRevoke(hash)
	}
	s.record(r, start, event{action: "auth.logout", orgID: v.user.OrganisationID, userID: v.user.ID, sessionID: v.session.ID, status: http.StatusOK})
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"id": v.session.ID, "object": "session", "deleted": true})
	return nil
}

// sessionObject is the JSON form of a session; token is included only
// when the session was just created for an API client.
func sessionObject(sess *Session, u *tenancy.User, token string) map[string]any {
	obj := map[string]any{
		"object": "session", "id": sess.ID, "organisation_id": sess.OrganisationID,
		"user": u, "created_at": sess.CreatedAt, "expires_at": sess.ExpiresAt,
	}
	if token != "" {
		obj["token"] = token
	}
	return obj
}
