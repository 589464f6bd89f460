package e2e

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/testcluster"
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
		startTLSPeer(t, p, args...)
		peers = append(peers, p)
	}
	var leader, follower *auditPeer
	eventually(t, 30*time.Second, func() error {
		leader, follower = nil, nil
		for _, p := range peers {
			var st peerStatus
			if code, err := getAs(p, "", "/status", &st); err != nil || code != http.StatusOK {
				return fmt.Errorf("%s: /status: %d %v", p.name, code, err)
			}
			if st.Leader {
				leader = p
			} else {
				follower = p
			}
		}
		if leader == nil || follower == nil {
			return fmt.Errorf("no one leader and one follower yet")
		}
		return nil
	})

	const n = 20
	if err := makeOrphans(ns, "mtls", n); err != nil {
		t.Fatal(err)
	}
	var want map[string]bool
	eventually(t, time.Minute, func() error {
		var err error
		if want, _, err = auditOf(leader, ns); err != nil {
			return err
		}
		if len(want) < n {
			return fmt.Errorf("the leader audited %d of %d deletions", len(want), n)
		}
		return nil
	})
	eventually(t, 30*time.Second, func() error {
		got, _, err := auditOf(follower, ns)
		if err != nil {
			return err
		}
		if missing := notIn(want, got); missing > 0 || len(got) != len(want) {
			return fmt.Errorf("the follower holds %d rows, %d of the leader's %d missing", len(got), missing, len(want))
		}
		return nil
	})

	// The rows a peer pulls need the certificate: without one, the same
	// request is refused.
	anonymous := *leader
	anonymous.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pki.Pool, MinVersion: tls.VersionTLS12}}}
	if code, err := getAs(&anonymous, "", "/audit/replicate", nil); err != nil || code != http.StatusUnauthorized {
		t.Errorf("/audit/replicate without a client certificate: %d %v, want 401", code, err)
	}
}

// startTLSPeer runs the binary on p's database and address, serving HTTPS,
// and waits until p.client reads its /readyz.
func startTLSPeer(t *testing.T, p *auditPeer, args ...string) {
	t.Helper()
	full := append([]string{"run", "--kubeconfig", cluster.Kubeconfig, "--db", p.db, "--listen", p.addr,
		"--dry-run=false", "--advertise-url", p.url}, args...)
	mustEnforceAlone(t, full)
	logPath := filepath.Join(filepath.Dir(p.db), p.name+".log")
	k, err := testcluster.StartKubegcd(kubegcdBin, logPath, full...)
	if err != nil {
		t.Fatal(err)
	}
	p.k = k
	t.Cleanup(func() {
		_ = k.Stop(10 * time.Second)
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("%s log:\n%s", p.name, e2eutil.Tail(string(b), 30))
		}
	})
	eventually(t, 60*time.Second, func() error {
		if code, err := getAs(p, "", "/readyz", nil); err != nil || code != http.StatusOK {
			return fmt.Errorf("%s: /readyz: %d %v", p.name, code, err)
		}
		return nil
	})
}
