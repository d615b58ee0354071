// Package sso owns single sign-on for the admin console: the OIDC
// authorization code flow with PKCE against one configured issuer, the
// provisioning of a first-time user (SPEC.md "States and transitions": a
// pending invite is accepted at the first login), and the console sessions
// that result, which authenticate control-plane requests like an API key
// (auth.Verifier).
//
// sso imports only auth, audit, httpx and tenancy among the gateway's
// packages. It declares the storage it needs (Store) and the sealing of its
// login-state cookie (Sealer); package app supplies both.
package sso

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/ai-gateway/gateway/internal/audit"
	"github.com/ai-gateway/gateway/internal/auth"
	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/tenancy"
)

// Provisioning policies for a first-time user who has no pending invite.
const (
	ProvisionReject = "reject"
	ProvisionMember = "member"
)

// Session is a console session as stored: only the SHA-256 hash of its
// token (auth.HashKey) is kept.
type Session struct {
	ID             string
	OrganisationID string
	UserID         string
	TokenHash      string
	CreatedAt      time.Time
	ExpiresAt      time.Time
	RevokedAt      *time.Time
}

// Store is the storage single sign-on needs. Lookups that find nothing
// return an error wrapping httpx.ErrNotFound.
type Store interface {
	// UserByEmail finds a user by email across the store.
	UserByEmail(ctx context.Context, email string) (*tenancy.User, error)
	// User finds the organisation's user id.
	User(ctx context.Context, organisationID, id string) (*tenancy.User, error)
	// AcceptInvite provisions the user of the pending invite for email
	// and marks the invite accepted, in one transaction.
	AcceptInvite(ctx context.Context, email, name string, now time.Time) (*tenancy.User, error)
	// CreateUser stores a new user; an email in use wraps httpx.ErrConflict.
	CreateUser(ctx context.Context, u *tenancy.User) error
	// DefaultWorkspaceID is the organisation's default workspace.
	DefaultWorkspaceID(ctx context.Context, organisationID string) (string, error)
	// FirstMembership is the user's earliest workspace membership.
	FirstMembership(ctx context.Context, userID string) (*tenancy.Member, error)

	CreateSession(ctx context.Context, s *Session) error
	SessionByHash(ctx context.Context, tokenHash string) (*Session, error)
	RevokeSession(ctx context.Context, id string, at time.Time) error
	DeleteExpiredSessions(ctx context.Context, now time.Time) (int, error)

	InsertAuditRecord(ctx context.Context, r *audit.Record) error
}

// Sealer encrypts and authenticates the login-state cookie (secret.Box).
type Sealer interface {
	Seal(plaintext, aad []byte) []byte
	Open(sealed, aad []byte) ([]byte, error)
}

// Options configure single sign-on.
type Options struct {
	// Issuer is the OIDC issuer URL; discovery is read from
	// Issuer + "/.well-known/openid-configuration".
	Issuer       string
	ClientID     string
	ClientSecret string // empty: a public client
	// RedirectURL is the callback registered with the issuer. An https
	// URL makes every cookie Secure.
	RedirectURL string
	// Provisioning is ProvisionReject or ProvisionMember.
	Provisioning string
	// OrganisationID is the organisation a ProvisionMember user joins.
	OrganisationID string
	SessionTTL     time.Duration
	// CacheTTL bounds how long a verified session is trusted without
	// reading the store (and so how long a logout takes to reach other
	// gateway processes).
	CacheTTL time.Duration
	// AuditEnabled is false when AUDIT_LOGS_ENABLED is OFF.
	AuditEnabled bool

	Store  Store
	Sealer Sealer
	Logger *slog.Logger
	// HTTPClient calls the issuer; nil: a client with a 10 s timeout.
	HTTPClient *http.Client
	// OnRevoke, if set, is told the token hash of each session revoked
	// here, so that other gateway processes can Forget it at once.
	OnRevoke func(tokenHash string)
	// Now is the clock; nil: time.Now.
	Now func() time.Time
}

// Service serves /v1/auth/… (login, callback, session, logout) and
// verifies session tokens for the control plane (auth.Verifier).
type Service struct {
	o      Options
	mux    *http.ServeMux
	oidc   *oidcClient
	secure bool

	mu    sync.RWMutex
	cache map[string]cachedSession // by token hash

	usedMu sync.Mutex
	used   map[string]time.Time // login states already consumed, until their expiry
}

var _ auth.Verifier = (*Service)(nil)

// New returns the single sign-on service. It does not contact the issuer:
// discovery happens at the first login, so a gateway starts while the
// issuer is down.
func New(o Options) (*Service, error) {
	if o.Issuer == "" || o.ClientID == "" {
		return nil, errors.New("sso: issuer and client id are required")
	}
	ru, err := url.Parse(o.RedirectURL)
	if err != nil || (ru.Scheme != "http" && ru.Scheme != "https") || ru.Host == "" {
		return nil, fmt.Errorf("sso: redirect URL %q must be an absolute http(s) URL", o.RedirectURL)
	}
	if o.Provisioning != ProvisionReject && o.Provisioning != ProvisionMember {
		return nil, fmt.Errorf("sso: provisioning must be %q or %q, got %q", ProvisionReject, ProvisionMember, o.Provisioning)
	}
	if o.Store == nil || o.Sealer == nil {
		return nil, errors.New("sso: a store and a sealer are required")
	}
	if o.SessionTTL <= 0 {
		o.SessionTTL = 12 * time.Hour
	}
	if o.CacheTTL <= 0 {
		o.CacheTTL = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Service{
		o: o, secure: ru.Scheme == "https",
		oidc:  newOIDCClient(o.Issuer, o.ClientID, o.ClientSecret, o.HTTPClient),
		cache: make(map[string]cachedSession), used: make(map[string]time.Time),
	}
	s.mux = http.NewServeMux()
	s.mux.Handle("GET /v1/auth/sso/login", httpx.Handler(o.Logger, s.login))
	s.mux.Handle("GET /v1/auth/sso/callback", httpx.Handler(o.Logger, s.callback))
	s.mux.Handle("GET /v1/auth/session", httpx.Handler(o.Logger, s.current))
	s.mux.Handle("POST /v1/auth/logout", httpx.Handler(o.Logger, s.logout))
	s.mux.Handle("/v1/auth/", httpx.Handler(o.Logger, func(w http.ResponseWriter, r *http.Request) error {
		return httpx.NotFound("no route for " + r.Method + " " + r.URL.Path)
	}))
	return s, nil
}

// ServeHTTP serves /v1/auth/….
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	s.mux.ServeHTTP(w, r)
}

// event is an audited login or logout.
type event struct {
	action            string
	orgID             string // "": the configured organisation
	userID, sessionID string
	status            int
	// details are kept as the record's request body: the email that
	// logged in and what happened, since a login has no body of its own.
	details map[string]any
}

// record writes the audit record of a login or logout. Failures are
// logged: the answer has been sent or is about to be.
func (s *Service) record(r *http.Request, start time.Time, e event) {
	if !s.o.AuditEnabled {
		return
	}
	org := e.orgID
	if org == "" {
		org = s.o.OrganisationID
	}
	var body []byte
	if len(e.details) > 0 {
		body, _ = json.Marshal(e.details)
	}
	rec := &audit.Record{
		OrganisationID: org, Timestamp: start.UTC(), ActorType: audit.ActorUser, ActorID: e.userID,
		// The query of the callback holds the authorization code and
		// state: the path alone is kept.
		Method: r.Method, URI: r.URL.Path, Action: e.action, ResourceType: "session", ResourceID: e.sessionID,
		StatusCode: e.status, ClientIP: clientIP(r), RequestID: httpx.IDsFrom(r.Context()).RequestID,
		RequestBody: audit.MaskBody(body),
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
	defer cancel()
	if err := s.o.Store.InsertAuditRecord(ctx, rec); err != nil {
		s.o.Logger.Error("audit record not stored", "action", e.action, "err", err)
	}
}

// clientIP is the peer's address; forwarded headers are not trusted.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
