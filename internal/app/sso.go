package app

import (
	"context"
	"fmt"
	"net"

	"github.com/ai-gateway/gateway/internal/admin"
	"github.com/ai-gateway/gateway/internal/secret"
	"github.com/ai-gateway/gateway/internal/sso"
	"github.com/ai-gateway/gateway/internal/store"
)

// newSSO builds single sign-on (OIDC login and console sessions) from the
// configuration; the caller mounts it at /v1/auth/ and adds it to the
// authenticator as the verifier of session tokens.
func (a *App) newSSO(box *secret.Box) (*sso.Service, error) {
	redirect := a.cfg.OIDCRedirectURL
	if redirect == "" {
		redirect = "http://" + a.cfg.Addr + "/v1/auth/sso/callback"
	}
	if a.cfg.OIDCRedirectURL == "" {
		if host, _, err := net.SplitHostPort(a.cfg.Addr); err == nil && (host == "" || net.ParseIP(host).IsUnspecified()) {
			a.log.Warn("oidc-redirect-url is not set and addr names no host; set GATEWAY_OIDC_REDIRECT_URL to the callback registered with the issuer",
				"derived", redirect)
		}
	}
	s, err := sso.New(sso.Options{
		Issuer: a.cfg.OIDCIssuer, ClientID: a.cfg.OIDCClientID, ClientSecret: a.cfg.OIDCClientSecret,
		RedirectURL: redirect, Provisioning: a.cfg.SSOProvisioning, OrganisationID: a.Bootstrap.OrganisationID,
		SessionTTL: a.cfg.SessionTTL, CacheTTL: a.cfg.KeyCacheTTL, AuditEnabled: a.cfg.Settings.Enabled(admin.FeatureAuditLogs),
		Store: ssoStore{a.store}, Sealer: box, Logger: a.log,
		OnRevoke: func(hash string) { a.bus.publish(invalidateSessions, "", hash) },
	})
	if err != nil {
		return nil, fmt.Errorf("single sign-on: %w", err)
	}
	a.bus.handle(invalidateSessions, func(_, hash string) { s.Forget(hash) })
	return s, nil
}

// ssoStore adapts the store's session records to sso.Session; every other
// method is the store's own.
type ssoStore struct{ *store.Store }

var _ sso.Store = ssoStore{}

func (s ssoStore) CreateSession(ctx context.Context, sess *sso.Session) error {
	st := store.Session(*sess)
	if err := s.Store.CreateSession(ctx, &st); err != nil {
		return err
	}
	*sess = sso.Session(st)
	return nil
}

func (s ssoStore) SessionByHash(ctx context.Context, tokenHash string) (*sso.Session, error) {
	st, err := s.Store.SessionByHash(ctx, tokenHash)
	if err != nil {
		return nil, err
	}
	out := sso.Session(*st)
	return &out, nil
}
