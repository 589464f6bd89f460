package e2eutil

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
	"testing"
	"time"
)

// PKI is a certificate authority for a test, which writes its certificate
// and those it issues into a directory of the test's.
type PKI struct {
	// Dir holds ca.pem and, for each certificate issued as NAME,
	// NAME.pem and NAME-key.pem.
	Dir string
	// Pool trusts the CA.
	Pool  *x509.CertPool
	ca    *x509.Certificate
	caKey *ecdsa.PrivateKey
}

// NewPKI makes a CA whose certificate has the common name name, valid for
// an hour either side of now.
func NewPKI(t *testing.T, name string) *PKI {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	p := &PKI{Dir: t.TempDir(), Pool: x509.NewCertPool(), ca: ca, caKey: key}
	p.Pool.AddCert(ca)
	WriteTouched(t, p.CAFile(), string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), time.Now())
	return p
}

// CAFile is the path of the CA's certificate.
func (p *PKI) CAFile() string { return filepath.Join(p.Dir, "ca.pem") }

// CertFile is the path of the certificate issued as name.
func (p *PKI) CertFile(name string) string { return filepath.Join(p.Dir, name+".pem") }

// KeyFile is the path of the key of the certificate issued as name.
func (p *PKI) KeyFile(name string) string { return filepath.Join(p.Dir, name+"-key.pem") }

// Issue writes a certificate for cn with serial (a server's for 127.0.0.1
// when server, else a client's) and its key, as name, both modified at
// mod, and returns them.
func (p *PKI) Issue(t *testing.T, name, cn string, serial int64, server bool, mod time.Time) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tmpl.ExtKeyUsage, tmpl.IPAddresses = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	WriteTouched(t, p.KeyFile(name), string(keyPEM), mod)
	WriteTouched(t, p.CertFile(name), string(certPEM), mod)
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return pair
}

// WriteTouched writes a file, readable by its owner only, with the
// modification time mod: one unlike its last, so that a reload sees the
// change even within the file system's time step.
func WriteTouched(t *testing.T, path, content string, mod time.Time) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mod, mod); err != nil {
		t.Fatal(err)
	}
}
