package e2efaults

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// TestServerErrorsLogJSON: Go's own HTTP server errors (here TLS
// handshakes of clients that send garbage) reach a --log-format=json log
// as JSON lines, a few a minute however many there are, never as the
// standard logger's plain lines.
//
// Not parallel: it sends the process's standard logger, which writes to
// stderr as the daemon's log does, into this daemon's log.
func TestServerErrorsLogJSON(t *testing.T) {
	ns := namespaces.New(t, "serverlog")
	certFile, keyFile, roots := selfSignedCert(t)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}
	d := e2eutil.DaemonOptions{Kubeconfig: kubeconfig(t, cluster.Config.Host, confinedToken(t, ns)), Client: client}.Start(t, "",
		"--leader-elect=false", "--log-format=json", "--tls-cert-file", certFile, "--tls-private-key-file", keyFile)
	log.SetOutput(d.Logs)
	t.Cleanup(func() { log.SetOutput(os.Stderr) })

	const handshakes = 30
	addr := strings.TrimPrefix(d.URL, "https://")
	for range handshakes {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write([]byte("\x00garbage, not a TLS record\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, _ = conn.Read(make([]byte, 64)) // until the server gives up on it
		conn.Close()
	}
	eventually(t, 10*time.Second, func() error {
		if !strings.Contains(d.Logs.String(), "TLS handshake error") {
			return errors.New("no TLS handshake error logged yet")
		}
		return nil
	})
	if code, _, err := d.Get("/healthz"); err != nil || code != http.StatusOK {
		t.Errorf("/healthz after the garbage: %d %v", code, err)
	}

	logged := 0
	for line := range strings.Lines(d.Logs.String()) {
		if !json.Valid([]byte(line)) {
			t.Errorf("a line of the JSON log is not JSON: %s", line)
		}
		if strings.Contains(line, "TLS handshake error") {
			logged++
		}
	}
	if logged == 0 || logged >= handshakes {
		t.Errorf("%d of %d TLS handshake errors logged, want some and at most a few a minute", logged, handshakes)
	}
}

// selfSignedCert writes a certificate for 127.0.0.1 and its key, and
// returns their paths and a pool that trusts the certificate.
func selfSignedCert(t *testing.T) (certFile, keyFile string, roots *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubegcd"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "server.pem"), filepath.Join(dir, "server-key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	roots = x509.NewCertPool()
	roots.AddCert(cert)
	return certFile, keyFile, roots
}
