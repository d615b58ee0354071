package store

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testPKI is a CA with a server and a client certificate, plus a server
// certificate from another CA.
type testPKI struct {
	caPEM                    string
	server, client, stranger tls.Certificate
	clientCertPEM, clientKey string
	pool                     *x509.CertPool
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	ca, caKey, caPEM := newCA(t, "test CA")
	other, otherKey, _ := newCA(t, "other CA")
	p := &testPKI{caPEM: caPEM, pool: x509.NewCertPool()}
	p.pool.AddCert(ca)
	p.server, _, _ = newLeaf(t, ca, caKey, "db.example", x509.ExtKeyUsageServerAuth)
	p.stranger, _, _ = newLeaf(t, other, otherKey, "db.example", x509.ExtKeyUsageServerAuth)
	p.client, p.clientCertPEM, p.clientKey = newLeaf(t, ca, caKey, "gateway", x509.ExtKeyUsageClientAuth)
	return p
}

func newCA(t *testing.T, name string) (*x509.Certificate, *ecdsa.PrivateKey, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func newLeaf(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, name string, usage x509.ExtKeyUsage) (tls.Certificate, string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: name},
		DNSNames:     []string{name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	pair, err := tls.X509KeyPair([]byte(certPEM), []byte(keyPEM))
	if err != nil {
		t.Fatal(err)
	}
	return pair, certPEM, keyPEM
}

// handshake runs a TLS handshake over loopback TCP between a server
// presenting cert (and, when clientCAs is set, requiring a client
// certificate from them) and a client configured by cfg. It returns the
// first error of either side.
func handshake(t *testing.T, cfg *tls.Config, cert tls.Certificate, clientCAs *x509.CertPool) error {
	t.Helper()
	srvCfg := &tls.Config{Certificates: []tls.Certificate{cert}}
	if clientCAs != nil {
		srvCfg.ClientCAs = clientCAs
		srvCfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", srvCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	srvErr := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			srvErr <- err
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		// Reading completes the handshake, client certificate included,
		// and receives the client's byte.
		_, err = c.Read(make([]byte, 1))
		srvErr <- err
	}()
	c, err := net.DialTimeout("tcp", ln.Addr().String(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	cli := tls.Client(c, cfg)
	err = cli.Handshake()
	if err == nil {
		_, err = cli.Write([]byte{1})
	}
	if err != nil {
		c.Close()
	}
	if serr := <-srvErr; err == nil {
		err = serr
	}
	return err
}

func TestMySQLTLSModes(t *testing.T) {
	p := newTestPKI(t)
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, []byte(p.caPEM), 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		opts     Options
		host     string // the URL's host
		cert     tls.Certificate
		wantTLS  bool
		fallback bool
		wantOK   bool // the handshake succeeds
	}{
		{name: "REQUIRED accepts any certificate", opts: Options{DBSSL: "REQUIRED"}, host: "10.0.0.1",
			cert: p.stranger, wantTLS: true, wantOK: true},
		{name: "PREFERRED accepts any certificate and may fall back", opts: Options{DBSSL: "PREFERRED"}, host: "db.example",
			cert: p.stranger, wantTLS: true, fallback: true, wantOK: true},
		{name: "VERIFY_CA accepts the CA's certificate under another name", opts: Options{DBSSL: "VERIFY_CA", DBSSLCA: caFile},
			host: "10.0.0.1", cert: p.server, wantTLS: true, wantOK: true},
		{name: "VERIFY_CA refuses another CA", opts: Options{DBSSL: "VERIFY_CA", DBSSLCA: caFile},
			host: "db.example", cert: p.stranger, wantTLS: true},
		{name: "VERIFY_CA with the CA as PEM text", opts: Options{DBSSL: "verify-ca", DBSSLCA: p.caPEM},
			host: "db.example", cert: p.server, wantTLS: true, wantOK: true},
		{name: "VERIFY_IDENTITY accepts the right name", opts: Options{DBSSL: "VERIFY_IDENTITY", DBSSLCA: caFile},
			host: "db.example", cert: p.server, wantTLS: true, wantOK: true},
		{name: "VERIFY_IDENTITY refuses another name", opts: Options{DBSSL: "VERIFY_IDENTITY", DBSSLCA: caFile},
			host: "10.0.0.1", cert: p.server, wantTLS: true},
		{name: "VERIFY_IDENTITY refuses another CA", opts: Options{DBSSL: "VERIFY_IDENTITY", DBSSLCA: caFile},
			host: "db.example", cert: p.stranger, wantTLS: true},
		{name: "empty is no TLS", opts: Options{}},
		{name: "DISABLED is no TLS", opts: Options{DBSSL: "DISABLED", DBSSLCA: caFile}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := buildMySQLTLS(tt.opts, tt.host)
			if err != nil {
				t.Fatal(err)
			}
			if (m.config != nil) != tt.wantTLS || m.fallback != tt.fallback {
				t.Fatalf("config %v, fallback %v; want TLS %v, fallback %v", m.config != nil, m.fallback, tt.wantTLS, tt.fallback)
			}
			if m.config == nil {
				return
			}
			if m.config.MinVersion < tls.VersionTLS12 {
				t.Errorf("MinVersion %x", m.config.MinVersion)
			}
			// The driver sets ServerName to the host unless verification
			// is skipped; mimic it so the test sees what the driver does.
			cfg := m.config.Clone()
			if cfg.ServerName == "" && !cfg.InsecureSkipVerify {
				cfg.ServerName = tt.host
			}
			err = handshake(t, cfg, tt.cert, nil)
			if (err == nil) != tt.wantOK {
				t.Errorf("handshake: %v, want success %v", err, tt.wantOK)
			}
		})
	}
}

func TestMySQLTLSClientCertificate(t *testing.T) {
	p := newTestPKI(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "client.pem"), filepath.Join(dir, "client.key")
	os.WriteFile(certFile, []byte(p.clientCertPEM), 0o600)
	os.WriteFile(keyFile, []byte(p.clientKey), 0o600)
	for _, mode := range []string{"PREFERRED", "REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY"} {
		t.Run(mode, func(t *testing.T) {
			m, err := buildMySQLTLS(Options{DBSSL: mode, DBSSLCA: p.caPEM, DBSSLCert: certFile, DBSSLKey: keyFile}, "db.example")
			if err != nil {
				t.Fatal(err)
			}
			if err := handshake(t, m.config, p.server, p.pool); err != nil {
				t.Errorf("with a client certificate: %v", err)
			}
			// Without one, a server that demands it refuses.
			m, err = buildMySQLTLS(Options{DBSSL: mode, DBSSLCA: p.caPEM}, "db.example")
			if err != nil {
				t.Fatal(err)
			}
			if err := handshake(t, m.config, p.server, p.pool); err == nil {
				t.Error("no client certificate, yet the server accepted")
			}
		})
	}
}

func TestMySQLTLSErrors(t *testing.T) {
	p := newTestPKI(t)
	for _, tt := range []struct {
		opts Options
		want string
	}{
		{Options{DBSSL: "SOMETIMES"}, `unknown mode "SOMETIMES"`},
		{Options{DBSSL: "VERIFY_CA"}, "needs DB_SSL_CA"},
		{Options{DBSSL: "REQUIRED", DBSSLCert: p.clientCertPEM}, "set together"},
		{Options{DBSSL: "REQUIRED", DBSSLCA: "/no/such/ca.pem"}, "DB_SSL_CA"},
		{Options{DBSSL: "REQUIRED", DBSSLCA: "-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n"}, "no PEM certificate"},
		{Options{DBSSL: "REQUIRED", DBSSLCert: p.clientCertPEM, DBSSLKey: p.caPEM}, "DB_SSL_CERT/DB_SSL_KEY"},
	} {
		_, err := buildMySQLTLS(tt.opts, "db.example")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("buildMySQLTLS(%+v) = %v, want an error containing %q", tt.opts.DBSSL, err, tt.want)
		}
	}
	if _, err := buildMySQLTLS(Options{DBSSL: "VERIFY_IDENTITY"}, ""); err == nil {
		t.Error("VERIFY_IDENTITY without a host: no error")
	}
}

func TestOptionsFromEnv(t *testing.T) {
	env := map[string]string{"DB_SSL": "REQUIRED", "DB_SSL_CA": "ca", "DB_SSL_CERT": "cert", "DB_SSL_KEY": "key"}
	got := OptionsFromEnv(func(k string) string { return env[k] })
	want := Options{DBSSL: "REQUIRED", DBSSLCA: "ca", DBSSLCert: "cert", DBSSLKey: "key"}
	if got != want {
		t.Errorf("OptionsFromEnv = %+v, want %+v", got, want)
	}
}
