package e2e

import (
	"crypto/tls"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// TestAuditPeersMutualTLS: two instances of one Lease serve HTTPS and know
// each other by client certificates alone, with no token. The follower
// pulls the leader's audit rows through --audit-peer-cert-file and
// --audit-peer-ca-file; a client without a certificate reads nothing.
func TestAuditPeersMutualTLS(t *testing.T) {
	ns := namespaces.New(t, "audit-peers-mtls")
	pki := e2eutil.NewPKI(t, "kubegcd-peers-ca")
	pki.Issue(t, "server", "kubegcd", 40, true, time.Now().Add(-time.Hour))
	peerCert := pki.Issue(t, "peer", "kubegcd-peer", 41, false, time.Now())
	withCert := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: pki.Pool, Certificates: []tls.Certificate{peerCert}, MinVersion: tls.VersionTLS12}}}
	args := []string{"--controllers=ownergc", "--resync-period=1s", "--leader-elect-name=kubegcd-audit-peers-mtls",
		"--leader-elect-lease-duration=6s", "--leader-elect-renew-deadline=4s", "--leader-elect-retry-period=1s",
		"--max-deletions-per-minute=0",
		"--tls-cert-file=" + pki.CertFile("server"), "--tls-private-key-file=" + pki.KeyFile("server"),
		"--client-ca-file=" + pki.CAFile(), "--audit-peer-ca-file=" + pki.CAFile(),
		"--audit-peer-cert-file=" + pki.CertFile("peer"), "--audit-peer-key-file=" + pki.KeyFile("peer")}
	dir := t.TempDir()
	var peers []*auditPeer
	for _, name := range []string{"a", "b"} {
		d := filepath.Join(dir, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		addr := freeAddr(t)
		p := &auditPeer{name: name, db: filepath.Join(d, "kubegcd.db"), addr: addr, url: "https://" + addr,
			client: withCert}
		startAuditPeer(t, p, args...)
		peers = append(peers, p)
	}
	leader, follower, _ := leaderAndFollower(t, "", peers[0], peers[1])
	const n = 20
	if err := makeOrphans(ns, "mtls", n); err != nil {
		t.Fatal(err)
	}
	holdsAll(t, follower, ns, auditedBy(t, leader, ns, n, time.Minute), 30*time.Second)

	// The rows a peer pulls need the certificate: without one, the same
	// request is refused.
	anonymous := *leader
	anonymous.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pki.Pool, MinVersion: tls.VersionTLS12}}}
	if code, err := getAs(&anonymous, "", "/audit/replicate", nil); err != nil || code != http.StatusUnauthorized {
		t.Errorf("/audit/replicate without a client certificate: %d %v, want 401", code, err)
	}
}
