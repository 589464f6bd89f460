package http

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"sync"
	"time"
)

// TLSFiles serves the certificate and key of --tls-cert-file and
// --tls-private-key-file, read again when either changes (certificates
// renewed by cert-manager or certbot need no restart), and, with
// --client-ca-file, verifies client certificates against that CA.
type TLSFiles struct {
	CertFile, KeyFile, ClientCAFile string
	Logf                            func(msg string, args ...any)

	mu      sync.Mutex
	cert    *tls.Certificate
	stamps  [2]fileStamp
	checked time.Time
}

// Config returns the server's TLS configuration; an unreadable or invalid
// certificate, key or CA is an error now rather than at the first client.
func (f *TLSFiles) Config() (*tls.Config, error) {
	if err := f.load(); err != nil {
		return nil, err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: f.getCertificate}
	if f.ClientCAFile != "" {
		pem, err := os.ReadFile(f.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("--client-ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--client-ca-file %s: no PEM certificate in the file", f.ClientCAFile)
		}
		// Verified when given, required by authenticate for all but the
		// health checks, which probes reach without a certificate.
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.VerifyClientCertIfGiven
	}
	return cfg, nil
}

func (f *TLSFiles) load() error {
	certStamp, err := stampOf(f.CertFile)
	if err != nil {
		return fmt.Errorf("--tls-cert-file: %w", err)
	}
	keyStamp, err := stampOf(f.KeyFile)
	if err != nil {
		return fmt.Errorf("--tls-private-key-file: %w", err)
	}
	cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		return fmt.Errorf("--tls-cert-file %s, --tls-private-key-file %s: %w", f.CertFile, f.KeyFile, err)
	}
	f.cert, f.stamps = &cert, [2]fileStamp{certStamp, keyStamp}
	return nil
}

// getCertificate serves the current certificate, reloading the files at
// most once a second when they changed; a half-written pair keeps the one
// loaded before.
func (f *TLSFiles) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if now := time.Now(); now.Sub(f.checked) >= recheckEvery {
		f.checked = now
		c, errC := stampOf(f.CertFile)
		k, errK := stampOf(f.KeyFile)
		if errC != nil || errK != nil || c != f.stamps[0] || k != f.stamps[1] {
			if err := f.load(); err != nil && f.Logf != nil {
				f.Logf("TLS certificate not reloaded; the one loaded before stays", "err", err)
			}
		}
	}
	return f.cert, nil
}
