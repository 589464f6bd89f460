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

	// now is the clock; nil: time.Now.
	now func() time.Time

	mu sync.Mutex
	// cert is the pair served: the last one read that was valid.
	cert *tls.Certificate
	// certFile and keyFile are what was read of each file last, checked
	// the last look.
	certFile, keyFile watchedFile
	checked           time.Time
}

// Config returns the server's TLS configuration; an unreadable or invalid
// certificate, key or CA is an error now rather than at the first client.
func (f *TLSFiles) Config() (*tls.Config, error) {
	f.mu.Lock()
	err := f.load()
	f.mu.Unlock()
	if err != nil {
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

func (f *TLSFiles) clock() time.Time {
	if f.now != nil {
		return f.now()
	}
	return time.Now()
}

// load reads the pair and, when either file changed since the last read,
// takes it. Callers hold f.mu.
func (f *TLSFiles) load() error {
	f.certFile.path, f.keyFile.path = f.CertFile, f.KeyFile
	now := f.clock()
	certPEM, certChanged, err := f.certFile.read(now)
	if err != nil {
		return fmt.Errorf("--tls-cert-file: %w", err)
	}
	keyPEM, keyChanged, err := f.keyFile.read(now)
	if err != nil {
		return fmt.Errorf("--tls-private-key-file: %w", err)
	}
	if f.cert != nil && !certChanged && !keyChanged {
		return nil
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("--tls-cert-file %s, --tls-private-key-file %s: %w", f.CertFile, f.KeyFile, err)
	}
	f.cert = &cert
	return nil
}

// getCertificate serves the current certificate. At most once a second
// it looks at both files, and reads them when either may have changed: a
// pair that is not valid (half written) leaves the one loaded before.
func (f *TLSFiles) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if now := f.clock(); now.Sub(f.checked) >= recheckEvery {
		f.checked = now
		if f.certFile.stale(now) || f.keyFile.stale(now) {
			if err := f.load(); err != nil && f.Logf != nil {
				f.Logf("TLS certificate not reloaded; the one loaded before stays", "err", err)
			}
		}
	}
	return f.cert, nil
}
