// Package config holds the gateway's settings: flags with environment
// equivalents (API.md §1), their defaults, and the deployment settings of
// SPEC.md read from the environment. Validate reports every problem at once.
//
// config imports no other internal package.
package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Config is what `gateway serve` runs with. The struct tags are read by
// kong in cmd/gateway; the defaults apply equally to tests via Defaults.
type Config struct {
	Addr        string `name:"addr" env:"GATEWAY_ADDR" default:"127.0.0.1:8787" help:"Listen address; the public base URL is http://ADDR/v1."`
	DataDir     string `name:"data-dir" env:"GATEWAY_DATA_DIR" default:"./data" help:"Holds the embedded SQLite database, the generated encryption key and spilled log records."`
	DatabaseURL string `name:"database-url" env:"GATEWAY_DATABASE_URL" help:"Empty: embedded SQLite in the data directory."`
	RedisURL    string `name:"redis-url" env:"GATEWAY_REDIS_URL" help:"Optional redis://[user:pass@]host:port/db shared by every gateway process."`
	// EncryptionKey (GATEWAY_ENCRYPTION_KEY, 32 bytes base64) and
	// AdminAPIKey (GATEWAY_ADMIN_API_KEY) come only from the environment,
	// never from flags, so they do not show in process listings.
	EncryptionKey   string        `kong:"-"`
	AdminAPIKey     string        `kong:"-"`
	ShutdownTimeout time.Duration `name:"shutdown-timeout" env:"GATEWAY_SHUTDOWN_TIMEOUT" default:"30s" help:"How long in-flight requests and streams may take to finish on SIGINT/SIGTERM."`
	MaxBodyBytes    int64         `name:"max-body-bytes" env:"GATEWAY_MAX_BODY_BYTES" default:"33554432" help:"Largest accepted request body (413 beyond)."`
	LogBodies       bool          `name:"log-bodies" env:"GATEWAY_LOG_BODIES" default:"true" negatable:"" help:"Store request and response bodies in request logs."`
	LogBodyMaxBytes int           `name:"log-body-max-bytes" env:"GATEWAY_LOG_BODY_MAX_BYTES" default:"65536" help:"Truncate each stored body to this many bytes."`
	LogQueueSize    int           `name:"log-queue-size" env:"GATEWAY_LOG_QUEUE_SIZE" default:"16384" help:"Request-log records buffered before requests wait for the writer."`
	LogLevel        string        `name:"log-level" env:"GATEWAY_LOG_LEVEL" default:"info" enum:"debug,info,warn,error" help:"Process log level."`
	LogFormat       string        `name:"log-format" env:"GATEWAY_LOG_FORMAT" default:"text" enum:"text,json" help:"Process log format."`
	KeyCacheTTL     time.Duration `name:"key-cache-ttl" env:"GATEWAY_KEY_CACHE_TTL" default:"30s" help:"How long API keys and virtual keys stay cached in memory."`
	// KeyExpiryInterval is how often the worker moves API keys past their
	// expiry to expired; API.md §2 asks for within 30 s.
	KeyExpiryInterval time.Duration `name:"key-expiry-interval" env:"GATEWAY_KEY_EXPIRY_INTERVAL" default:"10s" help:"How often expired API keys are marked expired (at most 30s)."`

	// JWT authentication (API.md §2 "JWT"): a JWT in x-gateway-api-key is
	// verified against this JWKS when it is set.
	JWTJWKSURL  string `name:"jwt-jwks-url" env:"GATEWAY_JWT_JWKS_URL" help:"JWKS URL; when set, a JWT in x-gateway-api-key authenticates."`
	JWTAudience string `name:"jwt-audience" env:"GATEWAY_JWT_AUDIENCE" help:"Required aud of JWTs (optional)."`
	JWTIssuer   string `name:"jwt-issuer" env:"GATEWAY_JWT_ISSUER" help:"Required iss of JWTs (optional)."`

	// Single sign-on (OIDC authorization code with PKCE). OIDCClientSecret
	// (GATEWAY_OIDC_CLIENT_SECRET) comes only from the environment.
	OIDCIssuer       string        `name:"oidc-issuer" env:"GATEWAY_OIDC_ISSUER" help:"OIDC issuer URL; when set, /v1/auth/sso/login signs users in."`
	OIDCClientID     string        `name:"oidc-client-id" env:"GATEWAY_OIDC_CLIENT_ID" help:"OIDC client id."`
	OIDCClientSecret string        `kong:"-"`
	OIDCRedirectURL  string        `name:"oidc-redirect-url" env:"GATEWAY_OIDC_REDIRECT_URL" help:"Callback URL registered with the issuer (default http://ADDR/v1/auth/sso/callback)."`
	SSOProvisioning  string        `name:"sso-provisioning" env:"GATEWAY_SSO_PROVISIONING" default:"reject" enum:"reject,member" help:"A first-time SSO user without an invite: reject, or provision as an organisation member."`
	SessionTTL       time.Duration `name:"session-ttl" env:"GATEWAY_SESSION_TTL" default:"12h" help:"Lifetime of an SSO session."`

	// Deployment is the slug of the deployment this process serves
	// (API.md §6 Deployments): only its workspaces, with its config and
	// limits. Empty: every workspace.
	Deployment string `name:"deployment" env:"GATEWAY_DEPLOYMENT" help:"Serve only this deployment's workspaces, with its config and limits."`

	// Settings are SPEC.md's deployment settings, read from the environment.
	Settings Settings `kong:"-"`
}

// Defaults returns the configuration `gateway serve` has with no flags and
// no environment.
func Defaults() Config {
	return Config{
		Addr: "127.0.0.1:8787", DataDir: "./data", ShutdownTimeout: 30 * time.Second,
		MaxBodyBytes: 32 << 20, LogBodies: true, LogBodyMaxBytes: 64 << 10, LogQueueSize: 16384,
		LogLevel: "info", LogFormat: "text", KeyCacheTTL: 30 * time.Second, KeyExpiryInterval: 10 * time.Second,
		SSOProvisioning: "reject", SessionTTL: 12 * time.Hour,
		Settings: DefaultSettings(),
	}
}

// Validate reports every invalid setting at once.
func (c *Config) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		errs = append(errs, fmt.Errorf("addr %q: %w", c.Addr, err))
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("data-dir: must not be empty"))
	}
	if c.DatabaseURL != "" {
		if u, err := url.Parse(c.DatabaseURL); err != nil || u.Scheme == "" {
			errs = append(errs, fmt.Errorf("database-url: must be a URL such as postgres://… or mysql://…"))
		}
	}
	if c.RedisURL != "" {
		if u, err := url.Parse(c.RedisURL); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
			errs = append(errs, fmt.Errorf("redis-url: must be redis://host:port or rediss://host:port"))
		}
	}
	if c.ShutdownTimeout <= 0 {
		errs = append(errs, errors.New("shutdown-timeout: must be positive"))
	}
	if c.MaxBodyBytes < 1024 {
		errs = append(errs, errors.New("max-body-bytes: must be at least 1024"))
	}
	if c.LogBodyMaxBytes < 0 {
		errs = append(errs, errors.New("log-body-max-bytes: must not be negative"))
	}
	if c.LogQueueSize < 1 {
		errs = append(errs, errors.New("log-queue-size: must be at least 1"))
	}
	if c.KeyCacheTTL <= 0 {
		errs = append(errs, errors.New("key-cache-ttl: must be positive"))
	}
	if c.KeyExpiryInterval <= 0 || c.KeyExpiryInterval > 30*time.Second {
		errs = append(errs, errors.New("key-expiry-interval: must be positive and at most 30s"))
	}
	if c.AdminAPIKey != "" && len(c.AdminAPIKey) < 16 {
		errs = append(errs, errors.New("GATEWAY_ADMIN_API_KEY: must be at least 16 characters"))
	}
	for name, v := range map[string]string{"jwt-jwks-url": c.JWTJWKSURL, "oidc-issuer": c.OIDCIssuer, "oidc-redirect-url": c.OIDCRedirectURL} {
		if v == "" {
			continue
		}
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("%s: must be an http(s) URL, got %q", name, v))
		}
	}
	if c.OIDCIssuer != "" && c.OIDCClientID == "" {
		errs = append(errs, errors.New("oidc-client-id: required with oidc-issuer"))
	}
	if c.SSOProvisioning != "reject" && c.SSOProvisioning != "member" {
		errs = append(errs, fmt.Errorf("sso-provisioning: must be reject or member, got %q", c.SSOProvisioning))
	}
	if c.SessionTTL < time.Minute {
		errs = append(errs, errors.New("session-ttl: must be at least 1m"))
	}
	errs = append(errs, c.Settings.errs...)
	return errors.Join(errs...)
}

// Features SPEC.md lists as enabled unless set to OFF.
var Features = []string{
	"GUARDRAILS_ENABLED", "API_ACCESS_ENABLED", "DATA_EXPORTS_ENABLED", "USAGE_LIMITS_ENABLED",
	"AUDIT_LOGS_ENABLED", "SCIM_ENABLED", "POLICY_ENABLED",
}

// Settings are SPEC.md's deployment settings of a self-hosted control plane.
type Settings struct {
	// Disabled holds the features set to OFF.
	Disabled             map[string]bool
	LogRetentionDays     int
	MetricsRetentionDays int

	ModelConfigsProxyFetch bool
	ModelConfigsProxyURL   string
	PricingLocalPath       string
	CapabilitiesLocalPath  string
	PricingLogStorePath    string
	CapabilitiesLogStore   string

	DBSSL, DBSSLCA, DBSSLCert, DBSSLKey string

	errs []error
}

// DefaultSettings are the settings with an empty environment.
func DefaultSettings() Settings {
	return Settings{Disabled: map[string]bool{}, LogRetentionDays: 90, MetricsRetentionDays: 365}
}

// Enabled reports whether a feature flag is on.
func (s Settings) Enabled(feature string) bool { return !s.Disabled[feature] }

// SettingsFromEnv reads the deployment settings with getenv (os.Getenv).
func SettingsFromEnv(getenv func(string) string) Settings {
	if getenv == nil {
		getenv = os.Getenv
	}
	s := DefaultSettings()
	for _, f := range Features {
		switch v := strings.ToUpper(strings.TrimSpace(getenv(f))); v {
		case "", "ON":
		case "OFF":
			s.Disabled[f] = true
		default:
			s.errs = append(s.errs, fmt.Errorf("%s: must be ON or OFF, got %q", f, v))
		}
	}
	days := func(name string, dst *int) {
		if v := getenv(name); v != "" {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 1 {
				s.errs = append(s.errs, fmt.Errorf("%s: must be a whole number of days ≥ 1, got %q", name, v))
				return
			}
			*dst = n
		}
	}
	days("LOG_RETENTION_DISPLAY", &s.LogRetentionDays)
	days("METRICS_RETENTION_DISPLAY", &s.MetricsRetentionDays)
	s.ModelConfigsProxyFetch = strings.EqualFold(getenv("MODEL_CONFIGS_PROXY_FETCH_ENABLED"), "ON")
	s.ModelConfigsProxyURL = getenv("MODEL_CONFIGS_PROXY_URL")
	s.PricingLocalPath = getenv("MODEL_CONFIGS_PRICING_LOCAL_PATH")
	s.CapabilitiesLocalPath = getenv("MODEL_CONFIGS_CAPABILITIES_LOCAL_PATH")
	s.PricingLogStorePath = getenv("MODEL_CONFIGS_PRICING_LOG_STORE_PATH")
	s.CapabilitiesLogStore = getenv("MODEL_CONFIGS_CAPABILITIES_LOG_STORE_PATH")
	s.DBSSL, s.DBSSLCA, s.DBSSLCert, s.DBSSLKey = getenv("DB_SSL"), getenv("DB_SSL_CA"), getenv("DB_SSL_CERT"), getenv("DB_SSL_KEY")
	return s
}
