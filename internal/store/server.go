package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/jmoiron/sqlx"
)

// Pool settings of the database servers. Readers and writers share one pool:
// the server, not the store, serialises what must be serialised.
const (
	serverPoolSize        = 20
	serverPoolIdle        = 10
	serverConnMaxLifetime = 30 * time.Minute
	serverConnMaxIdleTime = 5 * time.Minute
)

// openPostgres opens a pool on the PostgreSQL database of databaseURL
// (postgres:// or postgresql://, every parameter pgx accepts, including
// runtime parameters such as search_path).
func openPostgres(ctx context.Context, databaseURL string) (*Store, error) {
	secrets := urlSecrets(databaseURL)
	cfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		return nil, redact(fmt.Errorf("store: postgres database URL: %w", err), secrets...)
	}
	secrets = append(secrets, cfg.Password)
	db := sqlx.NewDb(stdlib.OpenDB(*cfg), "pgx")
	return openServer(ctx, db, dialectPostgres, secrets)
}

// openMySQL opens a pool on the MySQL/MariaDB database of databaseURL
// (mysql://user:pass@host:port/db?params), with TLS as opts.DBSSL says.
func openMySQL(ctx context.Context, databaseURL string, opts Options) (*Store, error) {
	cfg, err := mysqlConfig(databaseURL, opts)
	if err != nil {
		return nil, redact(err, urlSecrets(databaseURL)...)
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, redact(fmt.Errorf("store: mysql: %w", err), cfg.Passwd)
	}
	db := sqlx.NewDb(sql.OpenDB(conn), "mysql")
	return openServer(ctx, db, dialectMySQL, []string{cfg.Passwd})
}

// openServer sizes db's pool, checks that the server answers and builds the
// store around it.
func openServer(ctx context.Context, db *sqlx.DB, d dialect, secrets []string) (*Store, error) {
	db.SetMaxOpenConns(serverPoolSize)
	db.SetMaxIdleConns(serverPoolIdle)
	db.SetConnMaxLifetime(serverConnMaxLifetime)
	db.SetConnMaxIdleTime(serverConnMaxIdleTime)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, redact(fmt.Errorf("store: connect to %s: %w", d.name, err), secrets...)
	}
	s := &Store{w: db, r: db, d: d, now: time.Now}
	if err := s.newMigrations(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// mysqlConfig converts a mysql:// URL to the driver's configuration. The
// URL's query parameters are kept (driver settings such as timeout, or
// session variables such as sql_mode), except that the store needs
// parseTime=false (timestamps are integers), multiStatements=false (one
// statement per call, always) and clientFoundRows=true (an UPDATE that
// matches a row but changes nothing still counts it). interpolateParams
// defaults to true, which saves two round trips per query, and
// maxAllowedPacket to 0, the server's own limit. A DB_SSL mode, when set,
// replaces the URL's "tls" parameter.
func mysqlConfig(databaseURL string, opts Options) (*mysql.Config, error) {
	u, err := url.Parse(databaseURL)
	if err != nil {
		// url.Error repeats the URL, password included.
		return nil, errors.New("store: mysql database URL does not parse (are special characters in the password percent-encoded?)")
	}
	if u.Opaque != "" {
		return nil, errors.New("store: mysql database URL must be mysql://user:password@host:port/database")
	}
	dbName := strings.TrimPrefix(u.Path, "/")
	if dbName == "" || strings.Contains(dbName, "/") {
		return nil, errors.New("store: mysql database URL names no database (mysql://user:password@host:port/database)")
	}
	q := u.Query()
	q.Set("parseTime", "false")
	q.Set("multiStatements", "false")
	q.Set("clientFoundRows", "true")
	for k, v := range map[string]string{"interpolateParams": "true", "maxAllowedPacket": "0"} {
		if !q.Has(k) {
			q.Set(k, v)
		}
	}
	tlsMode, err := buildMySQLTLS(opts, u.Hostname())
	if err != nil {
		return nil, err
	}
	if opts.DBSSL != "" {
		q.Del("tls")
	}
	// The credentials stay out of the DSN text the driver parses, and so
	// out of its error messages.
	cfg, err := mysql.ParseDSN("tcp(" + u.Host + ")/?" + q.Encode())
	if err != nil {
		return nil, fmt.Errorf("store: mysql database URL: %w", err)
	}
	cfg.DBName = dbName
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	if tlsMode.config != nil {
		// A tls.Config set here takes precedence over the driver's registry
		// of named configs, and is not shared with anything else.
		cfg.TLS = tlsMode.config
		cfg.TLSConfig = ""
		cfg.AllowFallbackToPlaintext = tlsMode.fallback
	}
	return cfg, nil
}

// urlSecrets returns the password of databaseURL (from its user info or a
// "password" parameter), so that errors can be scrubbed of it.
func urlSecrets(databaseURL string) []string {
	u, err := url.Parse(databaseURL)
	if err != nil {
		return nil
	}
	var out []string
	if p, ok := u.User.Password(); ok {
		out = append(out, p, url.QueryEscape(p), url.PathEscape(p))
	}
	for _, p := range u.Query()["password"] {
		out = append(out, p, url.QueryEscape(p))
	}
	return out
}

// redact returns err with every secret replaced in its message. The result
// still unwraps to err for errors.Is.
func redact(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	changed := false
	for _, s := range secrets {
		if s != "" && strings.Contains(msg, s) {
			msg = strings.ReplaceAll(msg, s, "xxxxx")
			changed = true
		}
	}
	if !changed {
		return err
	}
	return &redactedError{msg: msg, err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
