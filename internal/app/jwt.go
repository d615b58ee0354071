package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/ai-gateway/gateway/internal/audit"
	"github.com/ai-gateway/gateway/internal/auth"
	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/store"
	"github.com/ai-gateway/gateway/internal/tenancy"
)

// startJWT makes authn accept JWTs when GATEWAY_JWT_JWKS_URL is set
// (API.md §2 "JWT"). ctx is the background context: it ends the JWKS
// refresh goroutine at Shutdown.
func (a *App) startJWT(ctx context.Context, authn *auth.Authenticator) error {
	if a.cfg.JWTJWKSURL == "" {
		return nil
	}
	v, err := auth.NewJWTVerifier(ctx, auth.JWTOptions{
		JWKSURL: a.cfg.JWTJWKSURL, Audience: a.cfg.JWTAudience, Issuer: a.cfg.JWTIssuer,
		OrganisationID: a.Bootstrap.OrganisationID, Directory: jwtDirectory{a.store},
		CacheTTL: a.cfg.KeyCacheTTL, Logger: a.log,
	})
	if err != nil {
		return fmt.Errorf("JWT authentication: %w", err)
	}
	authn.AddVerifier(v)
	return nil
}

// auditJWTFailure writes the audit record of a data-plane request whose
// JWT was rejected (SPEC.md: "JWT errors are written there too"). The
// control plane audits its own authentication failures. API-key failures
// are only counted.
func (a *App) auditJWTFailure(r *http.Request, err error) {
	if !errors.Is(err, auth.ErrJWT) || !a.cfg.Settings.Enabled("AUDIT_LOGS_ENABLED") {
		return
	}
	status := http.StatusUnauthorized
	var he *httpx.Error
	if errors.As(err, &he) {
		status = he.Status
	}
	ids := httpx.IDsFrom(r.Context())
	rec := &audit.Record{
		OrganisationID: a.Bootstrap.OrganisationID, Timestamp: time.Now().UTC(), ActorType: audit.ActorAPIKey,
		Method: r.Method, URI: r.URL.RequestURI(), Action: "auth.jwt", StatusCode: status,
		ClientIP: peerIP(r), RequestID: ids.RequestID,
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
	defer cancel()
	if err := a.store.InsertAuditRecord(ctx, rec); err != nil {
		a.log.Error("audit record not stored", "request_id", ids.RequestID, "action", rec.Action, "err", err)
	}
}

// peerIP is the client's address; forwarded headers are not trusted, as
// in the control plane's audit records.
func peerIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// jwtDirectory adapts the store to auth.JWTDirectory.
type jwtDirectory struct{ st *store.Store }

// UserID finds the user by id, or by email when s looks like one.
func (d jwtDirectory) UserID(ctx context.Context, organisationID, s string) (string, error) {
	if strings.Contains(s, "@") {
		users, _, err := d.st.ListUsers(ctx, organisationID, tenancy.UserFilter{Email: strings.ToLower(s)}, 0, 1)
		if err != nil {
			return "", err
		}
		if len(users) == 0 {
			return "", fmt.Errorf("user %q: %w", s, httpx.ErrNotFound)
		}
		return users[0].ID, nil
	}
	u, err := d.st.User(ctx, organisationID, s)
	if err != nil {
		return "", err
	}
	return u.ID, nil
}

// WorkspaceID finds the workspace by id or slug.
func (d jwtDirectory) WorkspaceID(ctx context.Context, organisationID, idOrSlug string) (string, error) {
	w, err := d.st.Workspace(ctx, organisationID, idOrSlug)
	if err != nil {
		return "", err
	}
	return w.ID, nil
}

// DefaultWorkspaceID is the organisation's default workspace.
func (d jwtDirectory) DefaultWorkspaceID(ctx context.Context, organisationID string) (string, error) {
	return d.st.DefaultWorkspaceID(ctx, organisationID)
}
