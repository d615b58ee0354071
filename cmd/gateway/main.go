// Command gateway runs the AI gateway: `gateway serve` (the default),
// `gateway migrate`, `gateway version`. Flags have environment equivalents
// (API.md §1); see `gateway --help`.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/alecthomas/kong"

	"github.com/ai-gateway/gateway/internal/app"
	"github.com/ai-gateway/gateway/internal/config"
	"github.com/ai-gateway/gateway/internal/store"
)

type cli struct {
	Serve   serveCmd   `cmd:"" default:"withargs" help:"Serve the gateway (default)."`
	Migrate migrateCmd `cmd:"" help:"Apply database migrations and exit."`
	Version versionCmd `cmd:"" help:"Print the version and exit."`
}

type serveCmd struct {
	config.Config `embed:""`
}

type migrateCmd struct {
	DataDir     string `name:"data-dir" env:"GATEWAY_DATA_DIR" default:"./data" help:"Data directory of the embedded SQLite database."`
	DatabaseURL string `name:"database-url" env:"GATEWAY_DATABASE_URL" help:"Empty: embedded SQLite in the data directory."`
}

type versionCmd struct{}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var c cli
	kctx := kong.Parse(&c, kong.Name("gateway"), kong.Description("An AI gateway: one OpenAI-compatible API in front of many model providers."),
		kong.UsageOnError(), kong.BindTo(ctx, (*context.Context)(nil)))
	if err := kctx.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}

func (versionCmd) Run() error {
	fmt.Println(app.Version)
	return nil
}

func (m *migrateCmd) Run(ctx context.Context) error {
	st, err := store.OpenWithOptions(ctx, m.DatabaseURL, m.DataDir, store.OptionsFromEnv(os.Getenv))
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "migrations applied")
	return nil
}

func (s *serveCmd) Run(ctx context.Context) error {
	cfg := s.Config
	cfg.EncryptionKey = os.Getenv("GATEWAY_ENCRYPTION_KEY")
	cfg.AdminAPIKey = os.Getenv("GATEWAY_ADMIN_API_KEY")
	cfg.OIDCClientSecret = os.Getenv("GATEWAY_OIDC_CLIENT_SECRET")
	cfg.Settings = config.SettingsFromEnv(os.Getenv)
	log := app.NewLogger(os.Stderr, cfg.LogLevel, cfg.LogFormat)

	a, err := app.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	if a.AdminKey != "" {
		// Printed once, on the first start only: the key is stored hashed.
		fmt.Fprintf(os.Stderr, "\nAdmin API key (shown once; keep it safe):\n\n    %s\n\n", a.AdminKey)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		_ = a.Shutdown(context.Background())
		return err
	}
	log.Info("gateway listening", "addr", ln.Addr().String(), "base_url", "http://"+ln.Addr().String()+"/v1", "version", app.Version)
	served := make(chan error, 1)
	go func() { served <- a.Serve(ln) }()
	select {
	case err := <-served:
		_ = a.Shutdown(context.Background())
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: finishing in-flight requests", "timeout", cfg.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	err = a.Shutdown(sctx)
	if serr := <-served; serr != nil {
		err = errors.Join(err, serr)
	}
	if err != nil {
		return err
	}
	log.Info("shutdown complete")
	return nil
}
