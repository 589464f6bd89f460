package e2elease

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegcd/kubegcd/internal/auditpeers"
	"github.com/kubegcd/kubegcd/internal/testcluster"
	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// startAdvertising runs bin with --advertise-url set to its own address.
func startAdvertising(t *testing.T, bin, name string, args ...string) *kubegcdProc {
	t.Helper()
	dir := t.TempDir()
	addr := e2eutil.FreeAddr(t)
	in := &kubegcdProc{name: name, url: "http://" + addr, db: filepath.Join(dir, "kubegcd.db"),
		logPath: filepath.Join(dir, name+".log"), client: &http.Client{Timeout: 5 * time.Second}}
	p, err := testcluster.StartKubegcd(bin, in.logPath, append([]string{"run", "--kubeconfig", cluster.Kubeconfig,
		"--db", in.db, "--listen", addr, "--advertise-url", in.url}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	in.proc = p
	t.Cleanup(func() {
		_ = p.Stop(30 * time.Second)
		if t.Failed() {
			t.Logf("%s's log:\n%s", name, e2eutil.Tail(in.log(), 40))
		}
	})
	if err := p.WaitReady(context.Background(), in.url+"/healthz", 100*time.Millisecond, 60*time.Second); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, e2eutil.Tail(in.log(), 40))
	}
	return in
}

// Under coordinated election each instance advertises its URL on its own
// LeaseCandidate, and the follower finds the leader there and reads its
// audit rows, among them the deletion the leader made.
func TestAuditPeersOnLeaseCandidates(t *testing.T) {
	ctx := context.Background()
	ns := namespaces.New(t, "audit-peers")
	// The API server prefers the older version as the holder. Two equal
	// versions would leave the choice to their random identities, and the
	// first leader could be asked to step down, exiting.
	older, newer := buildKubegcd(t, "v0.1.0"), buildKubegcd(t, "v0.2.0")
	args := []string{"--dry-run=false", "--controllers=ownergc", "--leader-elect-coordinated",
		"--leader-elect-namespace=" + ns, "--leader-elect-lease-duration=" + electionLease.String(),
		"--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=" + electionRetry.String()}
	a := startAdvertising(t, older, "a", args...)
	b := startAdvertising(t, newer, "b", args...)
	leader, follower := a, b
	e2eutil.Eventually(t, 90*time.Second, func() error {
		for _, in := range []*kubegcdProc{a, b} {
			st, err := in.status()
			if err != nil {
				return err
			}
			if st.Leader {
				leader = in
				if in == a {
					follower = b
				} else {
					follower = a
				}
				return nil
			}
		}
		return fmt.Errorf("no leader yet")
	})
	leaderID := leader.identity(t)
	candidates := kube.CoordinationV1beta1().LeaseCandidates(ns)
	e2eutil.Eventually(t, 30*time.Second, func() error {
		for _, in := range []*kubegcdProc{a, b} {
			c, err := candidates.Get(ctx, in.identity(t), metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got := c.Annotations[auditpeers.AnnotationURL]; got != in.url {
				return fmt.Errorf("%s's LeaseCandidate advertises %q, want %q", in.name, got, in.url)
			}
		}
		return nil
	})
	createOrphan(t, ns, "orphan")
	e2eutil.Eventually(t, 60*time.Second, func() error {
		st, err := follower.status()
		if err != nil {
			return err
		}
		if st.AuditPeers == nil || len(st.AuditPeers.Peers) != 1 {
			return fmt.Errorf("the follower's peers: %+v", st.AuditPeers)
		}
		p := st.AuditPeers.Peers[0]
		if p.URL != leader.url || p.Source != "cluster" || p.Instance != leaderID || p.LastPull == nil || p.LastError != "" {
			return fmt.Errorf("the follower's peer: %+v, want the leader %s read from the cluster", p, leader.url)
		}
		rows, err := follower.auditRows(ns)
		if err != nil {
			return err
		}
		for _, r := range rows {
			if r.Target.Name == "orphan" && r.Instance == leaderID {
				return nil
			}
		}
		return fmt.Errorf("the follower holds no row of the leader's deletion of orphan (%d rows)", len(rows))
	})
	// The candidates renewed during the election, each by an update of
	// what it read: the annotation is still there.
	for _, in := range []*kubegcdProc{a, b} {
		c, err := candidates.Get(ctx, in.identity(t), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if c.Annotations[auditpeers.AnnotationURL] != in.url || c.Spec.RenewTime == nil {
			t.Errorf("%s's LeaseCandidate after the election: %v", in.name, c.Annotations)
		}
	}
}
