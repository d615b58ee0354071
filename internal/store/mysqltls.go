package store

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Options are the settings of Open that do not travel in the database URL.
// The caller reads them from the environment (see OptionsFromEnv); the
// store never reads the environment itself.
type Options struct {
	// DBSSL is the MySQL/MariaDB TLS mode (SPEC.md "Deployment settings"):
	// DISABLED, PREFERRED, REQUIRED, VERIFY_CA or VERIFY_IDENTITY. Empty
	// leaves TLS to the URL's own "tls" parameter, which is off by default.
	// PostgreSQL takes its TLS settings from the URL (sslmode, sslrootcert…).
	DBSSL string
	// DBSSLCA is the CA certificate that VERIFY_CA and VERIFY_IDENTITY
	// check the server against: a PEM file's path or the PEM text itself.
	DBSSLCA string
	// DBSSLCert and DBSSLKey are a client certificate and its private key
	// (path or PEM text), sent in every mode that uses TLS when both are set.
	DBSSLCert string
	DBSSLKey  string
}

// OptionsFromEnv reads DB_SSL, DB_SSL_CA, DB_SSL_CERT and DB_SSL_KEY with
// getenv (os.Getenv in the gateway).
func OptionsFromEnv(getenv func(string) string) Options {
	return Options{
		DBSSL:     getenv("DB_SSL"),
		DBSSLCA:   getenv("DB_SSL_CA"),
		DBSSLCert: getenv("DB_SSL_CERT"),
		DBSSLKey:  getenv("DB_SSL_KEY"),
	}
}

// The DB_SSL modes, as MySQL's own client names them (--ssl-mode).
const (
	sslDisabled       = "DISABLED"
	sslPreferred      = "PREFERRED"
	sslRequired       = "REQUIRED"
	sslVerifyCA       = "VERIFY_CA"
	sslVerifyIdentity = "VERIFY_IDENTITY"
)

// mysqlTLS is what a DB_SSL mode asks of the MySQL driver.
type mysqlTLS struct {
	// config is nil when the connection is not encrypted.
	config *tls.Config
	// fallback allows a plaintext connection when the server offers no TLS.
	fallback bool
}

// buildMySQLTLS turns opts into the TLS settings for a connection to host
// (the URL's host name, checked by VERIFY_IDENTITY):
//
//   - DISABLED: no TLS.
//   - PREFERRED: TLS without verification when the server offers it,
//     plaintext otherwise.
//   - REQUIRED: TLS, but the server's certificate is not verified.
//   - VERIFY_CA: TLS; the certificate chain must lead to DB_SSL_CA (which is
//     then required), but the host name is not checked.
//   - VERIFY_IDENTITY: TLS with full verification, chain and host name,
//     against DB_SSL_CA or, when it is empty, the system's roots.
//
// The mode's case and "-" for "_" are forgiven; any other mode is an error.
// The client certificate applies to every mode that encrypts.
func buildMySQLTLS(opts Options, host string) (mysqlTLS, error) {
	mode := strings.ToUpper(strings.ReplaceAll(strings.TrimSpace(opts.DBSSL), "-", "_"))
	if mode == "" || mode == sslDisabled {
		return mysqlTLS{}, nil
	}
	switch mode {
	case sslPreferred, sslRequired, sslVerifyCA, sslVerifyIdentity:
	default:
		return mysqlTLS{}, fmt.Errorf("store: DB_SSL: unknown mode %q (want %s, %s, %s, %s or %s)",
			opts.DBSSL, sslDisabled, sslPreferred, sslRequired, sslVerifyCA, sslVerifyIdentity)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}

	if (opts.DBSSLCert == "") != (opts.DBSSLKey == "") {
		return mysqlTLS{}, errors.New("store: DB_SSL_CERT and DB_SSL_KEY must be set together")
	}
	if opts.DBSSLCert != "" {
		certPEM, err := readPEM("DB_SSL_CERT", opts.DBSSLCert)
		if err != nil {
			return mysqlTLS{}, err
		}
		keyPEM, err := readPEM("DB_SSL_KEY", opts.DBSSLKey)
		if err != nil {
			return mysqlTLS{}, err
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			// The error names no key material.
			return mysqlTLS{}, fmt.Errorf("store: DB_SSL_CERT/DB_SSL_KEY: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}

	var roots *x509.CertPool
	if opts.DBSSLCA != "" {
		caPEM, err := readPEM("DB_SSL_CA", opts.DBSSLCA)
		if err != nil {
			return mysqlTLS{}, err
		}
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(caPEM) {
			return mysqlTLS{}, errors.New("store: DB_SSL_CA holds no PEM certificate")
		}
	}

	switch mode {
	case sslPreferred:
		cfg.InsecureSkipVerify = true
		return mysqlTLS{config: cfg, fallback: true}, nil
	case sslRequired:
		cfg.InsecureSkipVerify = true
	case sslVerifyCA:
		if roots == nil {
			return mysqlTLS{}, errors.New("store: DB_SSL=VERIFY_CA needs DB_SSL_CA")
		}
		// The standard verification always checks the host name, so it is
		// switched off and the chain is verified here instead.
		// VerifyConnection, unlike VerifyPeerCertificate, also runs on
		// resumed sessions.
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			return verifyChain(cs.PeerCertificates, roots)
		}
	case sslVerifyIdentity:
		if host == "" {
			return mysqlTLS{}, errors.New("store: DB_SSL=VERIFY_IDENTITY needs a host name in the database URL")
		}
		cfg.RootCAs = roots // nil: the system's roots
		cfg.ServerName = host
	}
	return mysqlTLS{config: cfg}, nil
}

// verifyChain checks that the server's certificate chains to roots, without
// looking at its names.
func verifyChain(certs []*x509.Certificate, roots *x509.CertPool) error {
	if len(certs) == 0 {
		return errors.New("mysql server sent no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{
		Roots:         roots,
		Intermediates: inter,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return fmt.Errorf("mysql server certificate (DB_SSL=VERIFY_CA): %w", err)
	}
	return nil
}

// readPEM returns v itself when it is PEM text, else the file it names.
func readPEM(name, v string) ([]byte, error) {
	if strings.Contains(v, "-----BEGIN ") {
		return []byte(v), nil
	}
	b, err := os.ReadFile(v)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", name, err)
	}
	return b, nil
}
