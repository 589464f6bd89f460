package e2elease

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// lcgcArgs run lcgc alone, a pass every 2 s, under a Lease of its own.
var lcgcArgs = []string{"--controllers=lcgc", "--lease-candidate-gc-period=2s", "--leader-elect-name=kubegcd-lcgc"}

// candidateSet is the same set of candidates each lcgc test makes: their
// names and how long ago each was renewed (nil: never). expired are those
// past the 30 minutes of validity; the others are kept.
var candidateSet = []struct {
	name    string
	renewed *time.Duration
	expired bool
}{
	{"renewed-31m-ago", durationPtr(31 * time.Minute), true},
	{"never-renewed", nil, true},
	{"renewed-25m-ago", durationPtr(25 * time.Minute), false},
	{"fresh", durationPtr(0), false},
}

func durationPtr(d time.Duration) *time.Duration { return &d }

// createCandidates makes candidateSet in ns, renewed relative to now.
func createCandidates(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	for _, c := range candidateSet {
		lc := &coordinationv1beta1.LeaseCandidate{ObjectMeta: metav1.ObjectMeta{Name: c.name},
			Spec: coordinationv1beta1.LeaseCandidateSpec{LeaseName: "lcgc-lease", BinaryVersion: "1.36.0", EmulationVersion: "1.36.0",
				Strategy: "OldestEmulationVersion"}}
		if c.renewed != nil {
			renew := metav1.NewMicroTime(time.Now().Add(-*c.renewed))
			lc.Spec.RenewTime = &renew
		}
		if _, err := kube.CoordinationV1beta1().LeaseCandidates(ns).Create(ctx, lc, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating LeaseCandidate %s/%s: %v", ns, c.name, err)
		}
	}
}

// candidateNames returns the names of the LeaseCandidates of ns, sorted.
func candidateNames(t *testing.T, ns string) []string {
	t.Helper()
	list, err := kube.CoordinationV1beta1().LeaseCandidates(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, lc := range list.Items {
		names = append(names, lc.Name)
	}
	slices.Sort(names)
	return names
}

// keptNames are the names of candidateSet neither collector may delete.
func keptNames() []string {
	var out []string
	for _, c := range candidateSet {
		if !c.expired {
			out = append(out, c.name)
		}
	}
	slices.Sort(out)
	return out
}

// waitCollected waits until ns holds exactly the kept candidates.
func waitCollected(t *testing.T, ns string, timeout time.Duration) {
	t.Helper()
	want := keptNames()
	e2eutil.Eventually(t, timeout, func() error {
		if got := candidateNames(t, ns); !slices.Equal(got, want) {
			return fmt.Errorf("candidates of %s: %v, want %v", ns, got, want)
		}
		return nil
	})
}

// TestLCGCDeletesExpiredCandidates: enforcing, lcgc deletes the candidates
// never renewed or renewed 31 minutes ago, keeps those renewed within 30
// minutes, and audits each delete under KG-04-01.
func TestLCGCDeletesExpiredCandidates(t *testing.T) {
	ns := namespaces.New(t, "lcgc-enforce")
	createCandidates(t, ns)
	d := daemons.Start(t, "", append([]string{"--dry-run=false"}, lcgcArgs...)...)
	waitCollected(t, ns, time.Minute)

	var audit api.AuditList
	e2eutil.Eventually(t, 30*time.Second, func() error {
		d.GetJSON(t, "/audit?controller=lcgc&namespace="+ns, http.StatusOK, &audit)
		if len(audit.Items) != 2 {
			return fmt.Errorf("%d audit rows of lcgc in %s, want 2: %+v", len(audit.Items), ns, audit.Items)
		}
		return nil
	})
	var audited []string
	for _, e := range audit.Items {
		audited = append(audited, e.Target.Name)
		if e.Rule != "KG-04-01" || e.Action != api.ActionDelete || e.Outcome != api.OutcomeApplied || e.DryRun ||
			e.Target.Kind != "LeaseCandidate" || e.Target.APIVersion != "coordination.k8s.io/v1beta1" || e.Target.UID == "" {
			t.Errorf("audit row %+v", e)
		}
	}
	slices.Sort(audited)
	if want := []string{"never-renewed", "renewed-31m-ago"}; !slices.Equal(audited, want) {
		t.Errorf("audited %v, want %v", audited, want)
	}
	// The next passes find nothing more to do here.
	passed := lcgcPassAfter(t, d, time.Now())
	var again api.AuditList
	d.GetJSON(t, "/audit?controller=lcgc&namespace="+ns, http.StatusOK, &again)
	if len(again.Items) != 2 {
		t.Errorf("after the pass of %s: %d audit rows, want still 2", passed, len(again.Items))
	}
}

// lcgcPassAfter waits for a pass of lcgc that starts after since, and
// returns when it started.
func lcgcPassAfter(t *testing.T, d *e2eutil.Daemon, since time.Time) time.Time {
	t.Helper()
	var at time.Time
	e2eutil.Eventually(t, 30*time.Second, func() error {
		var st api.Status
		d.GetJSON(t, "/status", http.StatusOK, &st)
		for _, c := range st.Controllers {
			if c.Name == api.ControllerLCGC && c.LastPass != nil && c.LastPass.After(since) {
				at = *c.LastPass
				return nil
			}
		}
		return fmt.Errorf("no pass of lcgc after %s: %+v", since, st.Controllers)
	})
	return at
}

// TestLCGCDryRunDeletesNothing: in dry-run lcgc records what it would
// delete, in /pending and once in /audit, and deletes nothing, pass after
// pass.
func TestLCGCDryRunDeletesNothing(t *testing.T) {
	ns := namespaces.New(t, "lcgc-dry-run")
	createCandidates(t, ns)
	before := candidateNames(t, ns)
	d := daemons.Start(t, "", lcgcArgs...)

	want := []string{"never-renewed", "renewed-31m-ago"}
	var pending api.PendingList
	e2eutil.Eventually(t, time.Minute, func() error {
		d.GetJSON(t, "/pending?controller=lcgc&namespace="+ns, http.StatusOK, &pending)
		var names []string
		for _, p := range pending.Items {
			names = append(names, p.Target.Name)
		}
		slices.Sort(names)
		if !slices.Equal(names, want) {
			return fmt.Errorf("pending %v, want %v", names, want)
		}
		return nil
	})
	for _, p := range pending.Items {
		if p.Rule != "KG-04-01" || p.Action != api.ActionDelete || p.Reason == "" || p.Target.Kind != "LeaseCandidate" {
			t.Errorf("pending item %+v", p)
		}
	}
	// Two passes more: still nothing deleted, nothing audited twice.
	lcgcPassAfter(t, d, lcgcPassAfter(t, d, time.Now()))
	if got := candidateNames(t, ns); !slices.Equal(got, before) {
		t.Errorf("dry-run left %v, want every candidate %v", got, before)
	}
	var audit api.AuditList
	d.GetJSON(t, "/audit?controller=lcgc&namespace="+ns, http.StatusOK, &audit)
	var audited []string
	for _, e := range audit.Items {
		audited = append(audited, e.Target.Name)
		if e.Outcome != api.OutcomeDryRun || !e.DryRun || e.Rule != "KG-04-01" {
			t.Errorf("audit row %+v, want a dry-run of KG-04-01", e)
		}
	}
	slices.Sort(audited)
	if !slices.Equal(audited, want) {
		t.Errorf("audited %v, want each of %v once", audited, want)
	}
}

// TestLCGCParityWithKubeAPIServer: the same candidates, collected in one
// namespace by lcgc and in another by kube-apiserver's own collector
// (which runs when kube-apiserver starts), end in the same state. It
// restarts kube-apiserver and returns once it is ready again.
func TestLCGCParityWithKubeAPIServer(t *testing.T) {
	byLCGC, byAPIServer := namespaces.New(t, "lcgc-parity-kubegcd"), namespaces.New(t, "lcgc-parity-apiserver")

	createCandidates(t, byLCGC)
	d := daemons.Start(t, "", append([]string{"--dry-run=false"}, lcgcArgs...)...)
	waitCollected(t, byLCGC, time.Minute)
	if code := d.Stop(); code != 0 {
		t.Fatalf("kubegcd exited with %d", code)
	}

	createCandidates(t, byAPIServer)
	if got := candidateNames(t, byAPIServer); len(got) != len(candidateSet) {
		t.Fatalf("candidates of %s before the restart: %v", byAPIServer, got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kube-apiserver's election and LeaseCandidate collector, as it logged them:\n%s", electionLog())
		}
	})
	holdElectionLease(t, ctx, 30*time.Second)
	if err := cluster.StopAPIServer(); err != nil {
		t.Fatalf("stopping kube-apiserver: %v", err)
	}
	if err := cluster.StartAPIServer(ctx); err != nil {
		t.Fatalf("starting kube-apiserver again: %v", err)
	}
	// kube-apiserver's collector makes its pass once it holds its Lease,
	// when the test's hold has run out.
	waitCollected(t, byAPIServer, 2*time.Minute)

	if a, b := candidateNames(t, byLCGC), candidateNames(t, byAPIServer); !slices.Equal(a, b) {
		t.Errorf("lcgc left %v, kube-apiserver's collector %v", a, b)
	}
}

// electionHolder is the holder holdElectionLease writes.
const electionHolder = "lcgc-parity-test"

// holdElectionLease takes the Lease kube-system/leader-election-controller
// for the test, for d, creating it when kube-apiserver has not yet, and
// returns once kube-apiserver has stopped leading. kube-apiserver runs its
// election and LeaseCandidate collector while it holds that Lease, and the
// collector makes one pass as it takes it. With StorageVersionAPI on, a
// kube-apiserver just started refuses writes until its storage versions
// are registered; a pass made then fails every delete and is not tried
// again for 30 minutes. Holding the Lease across the restart puts the new
// kube-apiserver's pass past that registration. A kube-apiserver stopped
// while it still believes it leads would release the Lease on its way out.
func holdElectionLease(t *testing.T, ctx context.Context, d time.Duration) {
	t.Helper()
	leases := kube.CoordinationV1().Leases(metav1.NamespaceSystem)
	holder, seconds := electionHolder, int32(d/time.Second)
	stopsBefore := strings.Count(apiserverLog(t), gcStopped)
	var led bool
	// kube-apiserver renews the Lease every few seconds, and creates it
	// at its start: a write of its between the read and the write is a
	// conflict, and the write is made again.
	e2eutil.Eventually(t, 30*time.Second, func() error {
		now := metav1.NewMicroTime(time.Now())
		l, err := leases.Get(ctx, "leader-election-controller", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "leader-election-controller"}}
		} else if err != nil {
			return err
		}
		led = l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" && *l.Spec.HolderIdentity != holder
		transitions := int32(1)
		if l.Spec.LeaseTransitions != nil {
			transitions += *l.Spec.LeaseTransitions
		}
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = &holder, &seconds
		l.Spec.AcquireTime, l.Spec.RenewTime, l.Spec.LeaseTransitions = &now, &now, &transitions
		if l.ResourceVersion == "" {
			_, err = leases.Create(ctx, l, metav1.CreateOptions{})
		} else {
			_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		}
		if err != nil && !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			return e2eutil.StopError{Err: fmt.Errorf("holding kube-apiserver's election Lease: %w", err)}
		}
		return err
	})
	if !led {
		return
	}
	// It stops leading once its renewals have failed for its renew
	// deadline (10 s), and stops its collector.
	e2eutil.Eventually(t, 30*time.Second, func() error {
		if strings.Count(apiserverLog(t), gcStopped) == stopsBefore {
			return errors.New("kube-apiserver still leads its election")
		}
		return nil
	})
}

// releaseElectionLease ends a hold of holdElectionLease: it deletes the
// Lease and returns once kube-apiserver holds it again, its election and
// its LeaseCandidate collector running.
func releaseElectionLease(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	leases := kube.CoordinationV1().Leases(metav1.NamespaceSystem)
	e2eutil.Eventually(t, time.Minute, func() error {
		l, err := leases.Get(ctx, "leader-election-controller", metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" && *l.Spec.HolderIdentity != electionHolder {
			return nil
		}
		if err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == electionHolder {
			precondition := metav1.Preconditions{UID: &l.UID, ResourceVersion: &l.ResourceVersion}
			if err := leases.Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: &precondition}); err != nil &&
				!apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return err
			}
		}
		return errors.New("kube-apiserver does not hold its election Lease yet")
	})
}

// gcStopped is what kube-apiserver logs as its LeaseCandidate collector
// stops, when it stops leading.
const gcStopped = "Shutting down apiserver leasecandidate garbage collector"

// apiserverLog returns kube-apiserver's log, every run of it.
func apiserverLog(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(cluster.Dir, "apiserver.log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// electionLog returns the lines of kube-apiserver's log about its election
// Lease and its LeaseCandidate collector.
func electionLog() string {
	b, err := os.ReadFile(filepath.Join(cluster.Dir, "apiserver.log"))
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "leader-election-controller") || strings.Contains(line, "leasecandidategc_controller") ||
			strings.HasPrefix(line, "=== ") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// TestLCGCKeepsACandidateRenewedAfterItsPass: a candidate the pass found
// expired in the mirror, then renewed before lcgc read it live, is kept.
// The pass walks the expired candidates by name, one live read and one
// delete at a time, and a client limit of 4 requests a second makes the
// walk over 40 others take about 20 s: the test renews the last one as
// soon as the first is gone, when the pass has read the mirror already.
// kube-apiserver's own collector, which would delete the expired
// candidates too, is kept from running while the test holds its Lease.
func TestLCGCKeepsACandidateRenewedAfterItsPass(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	holdElectionLease(t, ctx, 2*time.Minute)
	// The other tests need kube-apiserver's election: the hold ends with
	// the test.
	t.Cleanup(func() { releaseElectionLease(t) })
	ns := namespaces.New(t, "lcgc-renewed")
	old := metav1.NewMicroTime(time.Now().Add(-31 * time.Minute))
	create := func(name string) {
		t.Helper()
		lc := &coordinationv1beta1.LeaseCandidate{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: coordinationv1beta1.LeaseCandidateSpec{LeaseName: "lcgc-lease", BinaryVersion: "1.36.0", EmulationVersion: "1.36.0",
				Strategy: "OldestEmulationVersion", RenewTime: &old}}
		if _, err := kube.CoordinationV1beta1().LeaseCandidates(ns).Create(ctx, lc, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating LeaseCandidate %s/%s: %v", ns, name, err)
		}
	}
	const others = 40
	for i := range others {
		create(fmt.Sprintf("a-%03d", i))
	}
	create("zz-renewed")
	// One pass, at the start: the next is an hour away.
	d := daemons.Start(t, "", "--dry-run=false", "--controllers=lcgc", "--lease-candidate-gc-period=1h",
		"--leader-elect-name=kubegcd-lcgc-renewed", "--kube-api-qps=4", "--kube-api-burst=1")

	e2eutil.Eventually(t, time.Minute, func() error {
		if slices.Contains(candidateNames(t, ns), "a-000") {
			return errors.New("a-000 is not deleted yet")
		}
		return nil
	})
	lc, err := kube.CoordinationV1beta1().LeaseCandidates(ns).Get(ctx, "zz-renewed", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("zz-renewed before its renewal: %v", err)
	}
	renewed := metav1.NewMicroTime(time.Now())
	lc.Spec.RenewTime = &renewed
	if _, err := kube.CoordinationV1beta1().LeaseCandidates(ns).Update(ctx, lc, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("renewing zz-renewed: %v", err)
	}
	left := candidateNames(t, ns)
	if len(left) < others/2 {
		t.Fatalf("the pass was too quick for the test to renew in its course: only %v are left", left)
	}

	e2eutil.Eventually(t, 2*time.Minute, func() error {
		if got := candidateNames(t, ns); !slices.Equal(got, []string{"zz-renewed"}) {
			return fmt.Errorf("candidates of %s: %d left, want only zz-renewed", ns, len(got))
		}
		return nil
	})
	// The pass reads zz-renewed live, finds it renewed, and keeps it.
	e2eutil.Eventually(t, time.Minute, func() error {
		for _, line := range strings.Split(d.Logs.String(), "\n") {
			if strings.Contains(line, `msg=kept`) && strings.Contains(line, "name=zz-renewed") {
				return nil
			}
		}
		return errors.New("lcgc has not logged keeping zz-renewed")
	})
	var audit api.AuditList
	e2eutil.Eventually(t, 30*time.Second, func() error {
		d.GetJSON(t, "/audit?controller=lcgc&namespace="+ns+"&limit=1000", http.StatusOK, &audit)
		if len(audit.Items) != others {
			return fmt.Errorf("%d audit rows of lcgc in %s, want %d", len(audit.Items), ns, others)
		}
		return nil
	})
	for _, e := range audit.Items {
		if e.Target.Name == "zz-renewed" {
			t.Errorf("an audit row about the renewed candidate: %+v", e)
		}
	}
	if _, err := kube.CoordinationV1beta1().LeaseCandidates(ns).Get(ctx, "zz-renewed", metav1.GetOptions{}); err != nil {
		t.Errorf("the renewed candidate: %v", err)
	}
}
