package e2efaults

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"log"
	"net"
	"net/http"
	"os"
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
	pki := e2eutil.NewPKI(t, "kubegcd-test-ca")
	pki.Issue(t, "server", "kubegcd", 2, true, time.Now())
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pki.Pool, MinVersion: tls.VersionTLS12}}}
	d := e2eutil.DaemonOptions{Kubeconfig: kubeconfig(t, cluster.Config.Host, confinedToken(t, ns)), Client: client}.Start(t, "",
		"--leader-elect=false", "--log-format=json", "--tls-cert-file", pki.CertFile("server"), "--tls-private-key-file", pki.KeyFile("server"))
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
