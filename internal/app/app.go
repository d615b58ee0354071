// Package app is the composition root: it builds every part of the gateway
// from a config.Config, wires the HTTP routes in one visible place, and
// starts and stops the background workers in order. It is the only package
// that constructs database or Redis clients.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/redis/rueidis"

	"github.com/ai-gateway/gateway/internal/admin"
	"github.com/ai-gateway/gateway/internal/auth"
	"github.com/ai-gateway/gateway/internal/config"
	"github.com/ai-gateway/gateway/internal/gateway"
	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/limits"
	"github.com/ai-gateway/gateway/internal/metrics"
	"github.com/ai-gateway/gateway/internal/provider"
	"github.com/ai-gateway/gateway/internal/reqlog"
	"github.com/ai-gateway/gateway/internal/routing"
	"github.com/ai-gateway/gateway/internal/secret"
	"github.com/ai-gateway/gateway/internal/store"
)

// Version is set at build time with -ldflags "-X .../internal/app.Version=…".
var Version = "dev"

// App is a running gateway's parts.
type App struct {
	cfg     config.Config
	log     *slog.Logger
	store   *store.Store
	writer  *reqlog.Writer
	metrics *metrics.Metrics
	handler http.Handler

	// AdminKey is the raw admin key generated at first start, "" otherwise.
	AdminKey  string
	Bootstrap store.BootstrapResult

	stopBackground context.CancelFunc
	background     sync.WaitGroup
	server         *http.Server

	// redis is the Redis client of shared routing state, once connected.
	redisMu sync.Mutex
	redis   rueidis.Client

	// limiter counts rate limits (providers, integrations, deployments):
	// in Redis when configured, else in process.
	limiter limits.Limiter

	// bus carries cache invalidations to the other gateway processes.
	bus *bus

	// sso serves /v1/auth/… (single sign-on and sessions) when OIDC is
	// configured; nil otherwise.
	sso http.Handler

	// deployment is what --deployment names (deployment.go);
	// nil when the process serves no deployment.
	deployment *deployment
}

// New builds the gateway: opens and migrates the store, bootstraps the
// organisation, loads the encryption key, and wires the handlers. The
// caller serves with Serve and stops with Shutdown.
func New(ctx context.Context, cfg config.Config, log *slog.Logger) (*App, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid configuration:\n%w", err)
	}
	uuid.EnableRandPool()
	a := &App{cfg: cfg, log: log}
	st, err := store.OpenWithOptions(ctx, cfg.DatabaseURL, cfg.DataDir, store.Options{
		DBSSL: cfg.Settings.DBSSL, DBSSLCA: cfg.Settings.DBSSLCA, DBSSLCert: cfg.Settings.DBSSLCert, DBSSLKey: cfg.Settings.DBSSLKey,
	})
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	a.store = st
	if err := st.Migrate(ctx); err != nil {
		st.Close()
		return nil, fmt.Errorf("migrate database: %w", err)
	}
	key, created, err := secret.LoadKey(cfg.EncryptionKey, cfg.DataDir)
	if err != nil {
		st.Close()
		return nil, err
	}
	if created {
		log.Warn("generated an encryption key file; back it up, and give every gateway process of this deployment the same key (GATEWAY_ENCRYPTION_KEY)",
			"path", filepath.Join(cfg.DataDir, secret.KeyFileName))
	}
	box, err := secret.NewBox(key)
	if err != nil {
		st.Close()
		return nil, err
	}
	if err := a.bootstrap(ctx); err != nil {
		st.Close()
		return nil, err
	}

	spillDir := filepath.Join(cfg.DataDir, "spill")
	// The queue-depth gauge is sampled only at scrape time, after the
	// writer below exists.
	a.metrics = metrics.New(func() float64 { return float64(a.writer.Depth()) })
	a.writer = reqlog.NewWriter(st, reqlog.Options{
		QueueSize: cfg.LogQueueSize, SpillDir: spillDir, Logger: log,
		Counters: reqlog.Counters{
			Waits: a.metrics.LogQueueWaits, WaitSeconds: a.metrics.LogQueueWaitSeconds, Written: a.metrics.LogRecordsWritten,
			Dropped: a.metrics.LogRecordsDropped, WriteErrors: a.metrics.LogWriteErrors, BatchSeconds: a.metrics.LogBatchSeconds,
		},
	})

	hc := provider.NewHTTPClient()
	registry := provider.NewRegistry(providers(hc)...)
	authn := auth.NewAuthenticator(st, cfg.KeyCacheTTL)
	// Control-plane changes drop the data plane's cached copies in this
	// process at once and, through Redis, in every other.
	a.bus = newBus(log)
	a.bus.handle(invalidateAPIKeys, func(string, string) { authn.Invalidate() })
	// fail undoes what New opened so far.
	fail := func(err error) (*App, error) {
		_ = a.writer.Close(ctx)
		st.Close()
		return nil, err
	}
	if cfg.OIDCIssuer != "" {
		s, err := a.newSSO(box)
		if err != nil {
			return fail(err)
		}
		a.sso = s
		authn.AddVerifier(s)
	}
	vks := auth.NewVirtualKeys(st, box, cfg.KeyCacheTTL)
	provs := auth.NewProviders(st, box, cfg.KeyCacheTTL)
	known := func(slug string) bool { _, ok := registry.Lookup(slug); return ok }
	configs := routing.NewSavedConfigs(st, cfg.KeyCacheTTL, routing.ParseOptions{KnownProvider: known},
		func(c *routing.StoredConfig) ([]byte, error) { return admin.OpenConfig(box, c) })
	a.limiter = a.newLimiter()
	if a.deployment, err = openDeployment(ctx, st, a.Bootstrap.OrganisationID, cfg.Deployment, box, a.limiter, log); err != nil {
		return fail(err)
	}
	breakers, connectRedis := a.newBreakers()
	gw := gateway.New(registry, vks, a.deployment.logs(a.writer), a.metrics, hc, log, gateway.Options{
		MaxBodyBytes: cfg.MaxBodyBytes, LogBodies: cfg.LogBodies, LogBodyMaxBytes: cfg.LogBodyMaxBytes,
		Configs: configs, Breakers: breakers, VirtualKeyProviders: st,
		DeploymentConfig: a.deployment.configFunc(), Providers: provs, Limiter: a.limiter,
	})
	api := admin.New(admin.Deps{VirtualKeys: st, Logs: st, Box: box, Providers: registry.Names(), Logger: log,
		Configs: st, OnAuthFail: a.metrics.AuthFailed, Tenancy: st, APIKeys: st, Audit: st,
		Invalidate:    a.bus.share(invalidateVirtualKeys, vks),
		ConfigCache:   a.bus.share(invalidateConfigs, configs),
		ProviderCache: a.bus.shareProviders(provs),
		Authenticator: broadcastKeys{authn, a.bus},
		Features:      cfg.Settings.Enabled, LogRetention: time.Duration(cfg.Settings.LogRetentionDays) * 24 * time.Hour,
		OrganisationID: a.Bootstrap.OrganisationID,
		Integrations:   st, Deployments: st, MCP: st, MCPFetcher: newMCPFetcher(),
	})
	a.handler = a.routes(gw, api, authn)

	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	a.stopBackground = stop
	a.background.Go(func() { a.replaySpilled(bg, spillDir) })
	a.background.Go(func() { a.expireKeys(bg, authn) })
	a.background.Go(func() { a.deployment.refresh(bg, cfg.KeyCacheTTL) })
	a.background.Go(func() { a.bus.run(bg) })
	// The JWKS refresh of JWT authentication ends with bg.
	if err := a.startJWT(bg, authn); err != nil {
		_ = a.Shutdown(ctx)
		return nil, err
	}
	if connectRedis != nil {
		a.background.Go(func() { connectRedis(bg) })
	}
	return a, nil
}

// bootstrap creates the organisation on first start and makes sure the
// admin key exists (API.md §1 "First start").
func (a *App) bootstrap(ctx context.Context) error {
	var envKey *auth.APIKey
	if a.cfg.AdminAPIKey != "" {
		envKey = adminKey(a.cfg.AdminAPIKey)
	}
	res, err := a.store.Bootstrap(ctx, envKey)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	a.Bootstrap = res
	if res.Fresh && envKey == nil {
		raw := auth.GenerateKey()
		k := adminKey(raw)
		k.OrganisationID = res.OrganisationID
		if err := a.store.CreateAPIKey(ctx, k); err != nil {
			return fmt.Errorf("bootstrap: create admin key: %w", err)
		}
		a.AdminKey = raw
	}
	return nil
}

func adminKey(raw string) *auth.APIKey {
	return &auth.APIKey{
		Name: "Bootstrap admin key", Type: auth.KeyTypeOrganisation, Subtype: auth.KeySubtypeService,
		Hash: auth.HashKey(raw), Mask: auth.MaskKey(raw), Scopes: auth.AdminScopes, Status: auth.StatusActive,
	}
}

// routes composes the HTTP surface in one place. Under /v1: request ids,
// authentication, then the named data-plane routes; any other path is a
// pass-through when it carries provider routing headers and a control-plane
// route otherwise (API.md §3 "Which handler answers a /v1 path").
func (a *App) routes(gw *gateway.Gateway, api *admin.API, authn *auth.Authenticator) http.Handler {
	data := http.NewServeMux()
	gw.Register(data)
	control := http.NewServeMux()
	api.Register(control)
	pass := gw.PassThrough()
	// The data plane authenticates here; the control plane in its own
	// wrapper, which also audits authentication failures (admin.control).
	dataPlane := authn.Middleware(func(r *http.Request, err error) { a.metrics.AuthFailed(); a.auditJWTFailure(r, err) })(a.deployment.gate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h, pattern := data.Handler(r); pattern != "" {
			h.ServeHTTP(w, r)
			return
		}
		pass.ServeHTTP(w, r)
	})))
	v1 := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if gateway.HasRouting(r) {
			dataPlane.ServeHTTP(w, r)
			return
		}
		if _, pattern := data.Handler(r); pattern != "" {
			dataPlane.ServeHTTP(w, r)
			return
		}
		control.ServeHTTP(w, r)
	})

	root := http.NewServeMux()
	root.HandleFunc("GET /health/live", func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok", "version": Version})
	})
	root.HandleFunc("GET /health/ready", a.ready)
	root.Handle("GET /metrics", a.metrics.Handler())
	root.Handle("/v1/", httpx.RequestIDs(v1))
	if a.sso != nil {
		root.Handle("/v1/auth/", httpx.RequestIDs(a.sso))
	}
	root.Handle("/", httpx.Handler(a.log, func(w http.ResponseWriter, r *http.Request) error {
		return httpx.NotFound("no route for " + r.Method + " " + r.URL.Path + "; the API lives under /v1")
	}))
	return httpx.Recover(a.log)(root)
}

// ready answers 200 when the database is reachable with every migration
// applied and Redis (when configured) answers; 503 otherwise.
func (a *App) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	checks := map[string]string{"database": "ok"}
	ok := true
	if err := a.store.Ready(ctx); err != nil {
		checks["database"] = err.Error()
		ok = false
	}
	if a.cfg.RedisURL != "" {
		checks["redis"] = "ok"
		if err := pingRedis(ctx, a.cfg.RedisURL); err != nil {
			checks["redis"] = err.Error()
			ok = false
		}
	}
	status := http.StatusOK
	if !ok {
		status = http.StatusServiceUnavailable
		a.log.Warn("readiness check failed", "checks", checks)
	}
	httpx.WriteJSON(w, status, map[string]any{"status": map[bool]string{true: "ready", false: "not ready"}[ok], "checks": checks})
}

// Handler is the gateway's whole HTTP surface.
func (a *App) Handler() http.Handler { return a.handler }

// Metrics returns the collectors (for tests and benchmarks).
func (a *App) Metrics() *metrics.Metrics { return a.metrics }

// Serve answers HTTP on ln until Shutdown.
func (a *App) Serve(ln net.Listener) error {
	a.server = &http.Server{
		Handler:           a.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelWarn),
	}
	err := a.server.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting connections, lets in-flight requests and streams
// finish (bounded by ctx), then flushes every pending log record and closes
// the store. Log records are flushed even when ctx has expired, within a
// further grace period, because losing them is worse than a slow exit.
func (a *App) Shutdown(ctx context.Context) error {
	var errs []error
	if a.server != nil {
		if err := a.server.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("http shutdown: %w", err))
			// Streams still open past the deadline are cut; their records
			// are still written below.
			a.server.Close()
		}
	}
	a.stopBackground()
	a.background.Wait()
	a.closeRedis()
	flushCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.writer.Close(flushCtx); err != nil {
		errs = append(errs, err)
	}
	if err := a.store.Close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// expireKeys is the key-expiry worker (SPEC.md "States and transitions":
// an active API key whose expiry has passed becomes expired on a
// background run): every KeyExpiryInterval it moves such keys, and pending
// invites past their expiry, and drops the key cache when a key changed.
// The data plane rejects an expired key before this runs (auth compares
// expires_at on every request). One process runs it per store; with several
// gateway processes each runs it, which is harmless (the UPDATE is
// idempotent) until background jobs take a lease (DESIGN.md).
func (a *App) expireKeys(ctx context.Context, authn *auth.Authenticator) {
	t := time.NewTicker(a.cfg.KeyExpiryInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		n, err := a.store.ExpireAPIKeys(ctx, now)
		if err != nil && ctx.Err() == nil {
			a.log.Warn("expiring API keys", "err", err)
		}
		if n > 0 {
			authn.Invalidate()
			a.log.Info("expired API keys", "keys", n)
		}
		if _, err := a.store.ExpireInvites(ctx, now); err != nil && ctx.Err() == nil {
			a.log.Warn("expiring invites", "err", err)
		}
	}
}

// replaySpilled stores log records spilled to disk while the database was
// unavailable: at start, then every 30 s.
func (a *App) replaySpilled(ctx context.Context, dir string) {
	t := time.NewTicker(30 * time.Second)
	defer t.Stop()
	for {
		n, err := reqlog.Replay(ctx, dir, a.store)
		if n > 0 {
			a.log.Info("replayed spilled request-log records", "records", n)
		}
		if err != nil {
			a.log.Warn("replaying spilled request-log records", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// NewLogger builds the process logger.
func NewLogger(w io.Writer, level, format string) *slog.Logger {
	var lv slog.Level
	_ = lv.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: lv}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
