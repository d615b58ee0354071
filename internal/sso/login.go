package sso

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ai-gateway/gateway/internal/auth"
	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/tenancy"
)

// stateCookie carries a login's state, nonce and PKCE verifier from the
// login to the callback, sealed with the deployment's key so that any
// gateway process can finish a login another one started.
const stateCookie = "gateway_sso_state"

// stateTTL bounds the time between a login and its callback.
const stateTTL = 10 * time.Minute

// stateAAD binds a sealed state to its purpose.
var stateAAD = []byte("sso-login-state")

// Modes of a login: what the callback answers.
const (
	modeRedirect = "redirect" // 302 to return_to, for a browser
	modeJSON     = "json"     // the session as JSON, with its token, for an API client
)

// loginState is what the state cookie holds.
type loginState struct {
	State    string    `json:"s"`
	Nonce    string    `json:"n"`
	Verifier string    `json:"v"`
	ReturnTo string    `json:"r,omitempty"`
	Mode     string    `json:"m"`
	Expires  time.Time `json:"e"`
}

// randomString is n random bytes, base64url without padding.
func randomString(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}

// challengeS256 is the PKCE code_challenge of verifier (RFC 7636 §4.2).
func challengeS256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// login starts the flow: GET /v1/auth/sso/login[?return_to=/path][&mode=json]
// answers 302 to the issuer's authorization endpoint and sets the sealed
// state cookie.
func (s *Service) login(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	mode := q.Get("mode")
	switch mode {
	case "":
		mode = modeRedirect
	case modeRedirect, modeJSON:
	default:
		return httpx.BadRequest("invalid_value", "mode", "mode: must be redirect or json")
	}
	returnTo := q.Get("return_to")
	if returnTo != "" && !safeReturnTo(returnTo) {
		return httpx.BadRequest("invalid_value", "return_to", "return_to: must be a path on this gateway, such as /console")
	}
	now := s.o.Now()
	p, err := s.oidc.provider(r.Context(), now)
	if err != nil {
		return unavailable(err)
	}
	st := loginState{
		State: randomString(32), Nonce: randomString(32), Verifier: randomString(48),
		ReturnTo: returnTo, Mode: mode, Expires: now.Add(stateTTL),
	}
	plain, err := json.Marshal(st)
	if err != nil {
		return httpx.Internal(err)
	}
	http.SetCookie(w, &http.Cookie{
		Name: stateCookie, Value: base64.RawURLEncoding.EncodeToString(s.o.Sealer.Seal(plain, stateAAD)),
		Path: "/v1/auth/sso/", MaxAge: int(stateTTL / time.Second), HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteLaxMode,
	})
	http.Redirect(w, r, p.authorizeURL(s.o.ClientID, s.o.RedirectURL, st.State, st.Nonce, challengeS256(st.Verifier)), http.StatusFound)
	return nil
}

// safeReturnTo reports whether v is a path on this origin: it starts with
// one "/" and names no scheme or host, so a login cannot be used to
// redirect to another site.
func safeReturnTo(v string) bool {
	if len(v) > 2048 || !strings.HasPrefix(v, "/") || strings.HasPrefix(v, "//") || strings.HasPrefix(v, "/\\") {
		return false
	}
	if strings.ContainsAny(v, "\\\r\n\t") {
		return false
	}
	u, err := url.Parse(v)
	return err == nil && u.Scheme == "" && u.Host == "" && u.User == nil
}

// readState opens the state cookie, which is cleared in the same answer:
// a state is used once. It also refuses a state this process has seen
// used, in case the cookie is replayed.
func (s *Service) readState(w http.ResponseWriter, r *http.Request, now time.Time) (*loginState, error) {
	http.SetCookie(w, &http.Cookie{Name: stateCookie, Value: "", Path: "/v1/auth/sso/", MaxAge: -1, HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteLaxMode})
	bad := httpx.BadRequest("invalid_state", "state", "this login is unknown, expired or already used; start again at /v1/auth/sso/login")
	c, err := r.Cookie(stateCookie)
	if err != nil {
		return nil, bad
	}
	sealed, err := base64.RawURLEncoding.DecodeString(c.Value)
	if err != nil {
		return nil, bad
	}
	plain, err := s.o.Sealer.Open(sealed, stateAAD)
	if err != nil {
		return nil, bad
	}
	var st loginState
	if err := json.Unmarshal(plain, &st); err != nil || !now.Before(st.Expires) {
		return nil, bad
	}
	got := r.URL.Query().Get("state")
	if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(st.State)) != 1 {
		return nil, bad
	}
	if !s.consume(st.State, st.Expires, now) {
		return nil, bad
	}
	return &st, nil
}

// maxUsedStates bounds the remembered login states.
const maxUsedStates = 100_000

// consume records state as used until expires and reports whether it was
// unused.
func (s *Service) consume(state string, expires, now time.Time) bool {
	s.usedMu.Lock()
	defer s.usedMu.Unlock()
	if _, ok := s.used[state]; ok {
		return false
	}
	if len(s.used) >= maxUsedStates {
		for k, exp := range s.used {
			if !now.Before(exp) {
				delete(s.used, k)
			}
		}
	}
	if len(s.used) < maxUsedStates {
		s.used[state] = expires
	}
	return true
}

// outcome is what a login did, for the audit record.
type outcome struct {
	email, how, orgID, userID, sessionID string
}

// callback finishes the flow: GET /v1/auth/sso/callback?code&state checks
// the state, exchanges the code with the PKCE verifier, verifies the
// id_token, finds or provisions the user, and starts a session.
func (s *Service) callback(w http.ResponseWriter, r *http.Request) error {
	start := s.o.Now()
	var out outcome
	user, sess, token, st, err := s.finish(w, r, start, &out)
	if err != nil {
		he := httpx.As(err)
		if he.Status >= 500 && he.Err != nil {
			s.o.Logger.Error("single sign-on failed", "err", he.Err)
		}
		details := map[string]any{"outcome": "failed", "error": he.Code}
		if out.email != "" {
			details["email"] = out.email
		}
		s.record(r, start, event{action: "auth.sso_login", orgID: out.orgID, userID: out.userID, status: he.Status, details: details})
		return he
	}
	s.setSessionCookie(w, token, sess.ExpiresAt)
	status := http.StatusFound
	if st.Mode == modeJSON {
		status = http.StatusOK
	}
	s.record(r, start, event{action: "auth.sso_login", orgID: user.OrganisationID, userID: user.ID, sessionID: sess.ID, status: status,
		details: map[string]any{"outcome": out.how, "email": out.email}})
	if st.Mode == modeJSON {
		httpx.WriteJSON(w, http.StatusOK, sessionObject(sess, user, token))
		return nil
	}
	to := st.ReturnTo
	if to == "" {
		to = "/"
	}
	http.Redirect(w, r, to, http.StatusFound)
	return nil
}

// finish runs the callback up to a stored session, filling out as it
// learns who logs in.
func (s *Service) finish(w http.ResponseWriter, r *http.Request, now time.Time, out *outcome) (*tenancy.User, *Session, string, *loginState, error) {
	st, err := s.readState(w, r, now)
	if err != nil {
		return nil, nil, "", nil, err
	}
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		msg := "the identity provider refused the login (" + e + ")"
		if d := q.Get("error_description"); d != "" {
			msg += ": " + d
		}
		return nil, nil, "", nil, httpx.Unauthorized("sso_denied", msg)
	}
	code := q.Get("code")
	if code == "" {
		return nil, nil, "", nil, httpx.BadRequest("missing_required", "code", "code: is required")
	}
	p, err := s.oidc.provider(r.Context(), now)
	if err != nil {
		return nil, nil, "", nil, unavailable(err)
	}
	raw, err := s.oidc.exchange(r.Context(), p, code, st.Verifier, s.o.RedirectURL)
	if err != nil {
		return nil, nil, "", nil, err
	}
	cl, err := s.oidc.verify(r.Context(), p, raw, st.Nonce, now)
	if err != nil {
		return nil, nil, "", nil, err
	}
	email := strings.ToLower(strings.TrimSpace(cl.Email))
	out.email = email
	if email == "" {
		return nil, nil, "", nil, httpx.Forbidden("email_required", "the identity provider did not share an email address; allow the email scope for this gateway")
	}
	if !cl.emailVerified() {
		return nil, nil, "", nil, httpx.Forbidden("email_not_verified", "the identity provider has not verified "+email)
	}
	user, how, err := s.provision(r, email, cl.displayName(email), now)
	if err != nil {
		return nil, nil, "", nil, err
	}
	out.how, out.orgID, out.userID = how, user.OrganisationID, user.ID
	sess, token, err := s.startSession(r, user, now)
	if err != nil {
		return nil, nil, "", nil, err
	}
	out.sessionID = sess.ID
	return user, sess, token, st, nil
}

// provision finds the user who logged in, or creates them (SPEC.md
// "States and transitions"): an existing user signs in; a pending invite
// is accepted, which provisions the user into the organisation and the
// invited workspaces; otherwise the provisioning policy rejects the login
// or makes the user an organisation member. how names which happened.
func (s *Service) provision(r *http.Request, email, name string, now time.Time) (*tenancy.User, string, error) {
	ctx := r.Context()
	u, err := s.o.Store.UserByEmail(ctx, email)
	if err == nil {
		return u, "existing_user", nil
	}
	if !errors.Is(err, httpx.ErrNotFound) {
		return nil, "", err
	}
	u, err = s.o.Store.AcceptInvite(ctx, email, name, now)
	if err == nil {
		return u, "invite_accepted", nil
	}
	if errors.Is(err, httpx.ErrConflict) {
		// Another login of the same user won the race: sign that user in.
		if u, err := s.o.Store.UserByEmail(ctx, email); err == nil {
			return u, "existing_user", nil
		}
	}
	if !errors.Is(err, httpx.ErrNotFound) {
		return nil, "", fmt.Errorf("accept invite: %w", err)
	}
	if s.o.Provisioning != ProvisionMember {
		return nil, "", httpx.Forbidden("sso_not_provisioned",
			email+" has no account and no pending invite on this gateway; ask an organisation owner or admin to invite you")
	}
	u = &tenancy.User{OrganisationID: s.o.OrganisationID, Email: email, Name: name, Role: tenancy.RoleMember}
	if err := s.o.Store.CreateUser(ctx, u); err != nil {
		if errors.Is(err, httpx.ErrConflict) {
			if u, err := s.o.Store.UserByEmail(ctx, email); err == nil {
				return u, "existing_user", nil
			}
		}
		return nil, "", fmt.Errorf("provision member: %w", err)
	}
	return u, "member_provisioned", nil
}

// startSession stores a new session for user and returns it with its raw
// token. Expired sessions are swept on the way.
func (s *Service) startSession(r *http.Request, user *tenancy.User, now time.Time) (*Session, string, error) {
	ctx := r.Context()
	if _, err := s.o.Store.DeleteExpiredSessions(ctx, now); err != nil {
		s.o.Logger.Warn("deleting expired sessions", "err", err)
	}
	token := newToken()
	sess := &Session{
		OrganisationID: user.OrganisationID, UserID: user.ID, TokenHash: auth.HashKey(token),
		CreatedAt: now, ExpiresAt: now.Add(s.o.SessionTTL),
	}
	if err := s.o.Store.CreateSession(ctx, sess); err != nil {
		return nil, "", fmt.Errorf("create session: %w", err)
	}
	return sess, token, nil
}

// setSessionCookie gives the browser the session token: HttpOnly so page
// scripts cannot read it, SameSite=Lax so other sites cannot send it with
// their requests (other than top-level navigations, which are reads).
func (s *Service) setSessionCookie(w http.ResponseWriter, token string, expires time.Time) {
	http.SetCookie(w, &http.Cookie{
		Name: auth.SessionCookie, Value: token, Path: "/", Expires: expires, MaxAge: int(expires.Sub(s.o.Now()) / time.Second),
		HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteLaxMode,
	})
}

func (s *Service) clearSessionCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: auth.SessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteLaxMode})
}
