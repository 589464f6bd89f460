package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/testcluster"
)

const identityLabel = "apiserver.kubernetes.io/identity"

// identityLease creates a kube-apiserver identity lease in kube-system, as
// a second API server would, and removes it at the end of the test.
func identityLease(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	now := metav1.NewMicroTime(time.Now())
	_, err := kube.CoordinationV1().Leases("kube-system").Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{identityLabel: "kube-apiserver"}},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &name, LeaseDurationSeconds: new(int32(3600)), RenewTime: &now},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.CoordinationV1().Leases("kube-system").Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

func deleteLease(t *testing.T, ns, name string) {
	t.Helper()
	if err := kube.CoordinationV1().Leases(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// entry is a StorageVersion entry of server at encoding version v.
func entry(server, v string) apiserverinternalv1alpha1.ServerStorageVersion {
	return apiserverinternalv1alpha1.ServerStorageVersion{APIServerID: server, EncodingVersion: v, DecodableVersions: []string{v},
		ServedVersions: []string{v}}
}

// storageVersion creates a StorageVersion with entries, as API servers
// would record them, and removes it at the end of the test.
func storageVersion(t *testing.T, name string, entries ...apiserverinternalv1alpha1.ServerStorageVersion) {
	t.Helper()
	ctx := context.Background()
	svs := kube.InternalV1alpha1().StorageVersions()
	sv, err := svs.Create(ctx, &apiserverinternalv1alpha1.StorageVersion{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svs.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	sv.Status.StorageVersions = entries
	// The API server requires commonEncodingVersion when every entry agrees.
	common := entries[0].EncodingVersion
	for _, e := range entries {
		if e.EncodingVersion != common {
			common = ""
		}
	}
	if common != "" {
		sv.Status.CommonEncodingVersion = &common
	}
	if _, err := svs.UpdateStatus(ctx, sv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// servers returns the server ids of a StorageVersion's entries, nil when
// it is gone, and the StorageVersion.
func servers(t *testing.T, name string) ([]string, *apiserverinternalv1alpha1.StorageVersion) {
	t.Helper()
	sv, err := kube.InternalV1alpha1().StorageVersions().Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, e := range sv.Status.StorageVersions {
		out = append(out, e.APIServerID)
	}
	return out, sv
}

// realServer returns the identity of the test cluster's kube-apiserver and
// a snapshot of its StorageVersion entries.
func realServer(t *testing.T) (string, map[string]string) {
	t.Helper()
	ctx := context.Background()
	var id string
	eventually(t, 60*time.Second, func() error {
		l, err := kube.CoordinationV1().Leases("kube-system").List(ctx, metav1.ListOptions{LabelSelector: identityLabel + "=kube-apiserver"})
		if err != nil {
			return err
		}
		for _, lease := range l.Items {
			if !strings.ContainsAny(lease.Name, "_") && !slices.ContainsFunc([]string{"fake", "keep", "dry", "nolease"}, func(m string) bool {
				return strings.Contains(lease.Name, m)
			}) {
				id = lease.Name
				return nil
			}
		}
		return fmt.Errorf("no identity lease of the test apiserver among %d", len(l.Items))
	})
	entries := map[string]string{}
	eventually(t, 60*time.Second, func() error {
		svs, err := kube.InternalV1alpha1().StorageVersions().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, sv := range svs.Items {
			for _, e := range sv.Status.StorageVersions {
				if e.APIServerID == id {
					b, _ := json.Marshal(e)
					entries[sv.Name] = string(b)
				}
			}
		}
		if len(entries) == 0 {
			return fmt.Errorf("no StorageVersion entries of %s yet", id)
		}
		return nil
	})
	return id, entries
}

func TestStorageVersionGC(t *testing.T) {
	real, before := realServer(t)
	for _, l := range []string{"kube-apiserver-fake1", "kube-apiserver-fake2", "kube-apiserver-keep"} {
		identityLease(t, l)
	}
	storageVersion(t, "e2e.kubegcd.io.gizmos", entry("kube-apiserver-fake1", "e2e.kubegcd.io/v1"), entry("kube-apiserver-fake2", "e2e.kubegcd.io/v2"))
	storageVersion(t, "e2e.kubegcd.io.gadgets", entry("kube-apiserver-fake1", "e2e.kubegcd.io/v1"))
	storageVersion(t, "e2e.kubegcd.io.doohickeys", entry("kube-apiserver-nolease", "e2e.kubegcd.io/v1"), entry("kube-apiserver-fake2", "e2e.kubegcd.io/v2"))
	storageVersion(t, "e2e.kubegcd.io.whatsits", entry("kube-apiserver-keep", "e2e.kubegcd.io/v1"))
	d := daemons.Start(t, "", "--controllers=svgc", "--dry-run=false", "--resync-period=1s")
	d.WaitReady(t, 60*time.Second)

	// An entry of a server that never had a lease goes; the condition is
	// recomputed.
	commonIs := func(name, version string) error {
		ids, sv := servers(t, name)
		if sv == nil || sv.Status.CommonEncodingVersion == nil || *sv.Status.CommonEncodingVersion != version {
			return fmt.Errorf("%s: entries %v, common %v", name, ids, sv)
		}
		for _, c := range sv.Status.Conditions {
			if c.Type == apiserverinternalv1alpha1.AllEncodingVersionsEqual && c.Status == apiserverinternalv1alpha1.ConditionTrue &&
				c.Reason == "CommonEncodingVersionSet" {
				return nil
			}
		}
		return fmt.Errorf("%s: conditions %+v", name, sv.Status.Conditions)
	}
	eventually(t, 20*time.Second, func() error {
		if ids, _ := servers(t, "e2e.kubegcd.io.doohickeys"); !slices.Equal(ids, []string{"kube-apiserver-fake2"}) {
			return fmt.Errorf("doohickeys entries %v", ids)
		}
		return commonIs("e2e.kubegcd.io.doohickeys", "e2e.kubegcd.io/v2")
	})

	// A StorageVersion created while kubegcd runs, naming a server without
	// a lease, loses that entry.
	storageVersion(t, "e2e.kubegcd.io.thingamajigs", entry("kube-apiserver-nolease2", "e2e.kubegcd.io/v1"), entry("kube-apiserver-fake2", "e2e.kubegcd.io/v1"))
	eventually(t, 20*time.Second, func() error {
		if ids, _ := servers(t, "e2e.kubegcd.io.thingamajigs"); !slices.Equal(ids, []string{"kube-apiserver-fake2"}) {
			return fmt.Errorf("thingamajigs entries %v", ids)
		}
		return commonIs("e2e.kubegcd.io.thingamajigs", "e2e.kubegcd.io/v1")
	})

	// A lease deleted: its server's entries go from every StorageVersion;
	// one left with none is deleted.
	deleteLease(t, "kube-system", "kube-apiserver-fake1")
	// A lease deleted and re-created at once keeps its entries.
	deleteLease(t, "kube-system", "kube-apiserver-keep")
	identityLease(t, "kube-apiserver-keep")
	eventually(t, 20*time.Second, func() error {
		if ids, _ := servers(t, "e2e.kubegcd.io.gizmos"); !slices.Equal(ids, []string{"kube-apiserver-fake2"}) {
			return fmt.Errorf("gizmos entries %v", ids)
		}
		if ids, _ := servers(t, "e2e.kubegcd.io.gadgets"); ids != nil {
			return fmt.Errorf("gadgets still there with %v", ids)
		}
		return commonIs("e2e.kubegcd.io.gizmos", "e2e.kubegcd.io/v2")
	})
	// Through several resyncs (one a second), the re-created lease keeps
	// its entries.
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
		if ids, _ := servers(t, "e2e.kubegcd.io.whatsits"); !slices.Equal(ids, []string{"kube-apiserver-keep"}) {
			t.Fatalf("whatsits entries %v: a re-created lease lost its entries", ids)
		}
	}
	_, after := realServer(t)
	for name, e := range before {
		if after[name] != e {
			t.Errorf("the real apiserver %s's entry of %s changed:\nbefore %s\nafter  %s", real, name, e, after[name])
		}
	}
	var audit struct{ Items []api.AuditEntry }
	d.GetJSON(t, "/audit?controller=svgc", 200, &audit)
	got := map[string]string{}
	for _, r := range audit.Items {
		if !strings.HasPrefix(r.Target.Name, "e2e.kubegcd.io.") || r.Outcome != api.OutcomeApplied {
			t.Errorf("unexpected svgc decision %+v", r)
		}
		got[r.Target.Name] = r.Rule + " " + string(r.Action)
	}
	want := map[string]string{"e2e.kubegcd.io.doohickeys": "KG-06-01 remove-entries", "e2e.kubegcd.io.gizmos": "KG-06-01 remove-entries",
		"e2e.kubegcd.io.thingamajigs": "KG-06-01 remove-entries",
		"e2e.kubegcd.io.gadgets":      "KG-06-02 delete"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("audit of %s: %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
}

func TestStorageVersionGCDryRun(t *testing.T) {
	identityLease(t, "kube-apiserver-dry1")
	storageVersion(t, "e2e.kubegcd.io.sprockets", entry("kube-apiserver-dry1", "e2e.kubegcd.io/v1"), entry("kube-apiserver-drynone", "e2e.kubegcd.io/v1"))
	_, before := servers(t, "e2e.kubegcd.io.sprockets")
	d := daemons.Start(t, "", "--controllers=svgc", "--dry-run=true", "--resync-period=1s")
	d.WaitReady(t, 60*time.Second)
	deleteLease(t, "kube-system", "kube-apiserver-dry1")
	eventually(t, 20*time.Second, func() error {
		var p struct{ Items []api.Pending }
		d.GetJSON(t, "/pending?controller=svgc", 200, &p)
		var a struct{ Items []api.AuditEntry }
		d.GetJSON(t, "/audit?controller=svgc", 200, &a)
		for _, r := range a.Items {
			if r.Target.Name == "e2e.kubegcd.io.sprockets" && r.Rule == "KG-06-02" && r.Action == "delete" && r.DryRun &&
				r.Outcome == api.OutcomeDryRun && len(p.Items) > 0 {
				return nil
			}
		}
		return fmt.Errorf("pending %+v, audit %+v", p.Items, a.Items)
	})
	if _, after := servers(t, "e2e.kubegcd.io.sprockets"); after == nil || after.ResourceVersion != before.ResourceVersion {
		t.Fatalf("dry-run changed the StorageVersion: before %+v, after %+v", before, after)
	}
	// The server's Lease is back: the decision to delete the StorageVersion
	// leaves /pending.
	identityLease(t, "kube-apiserver-dry1")
	eventually(t, 20*time.Second, func() error {
		var p struct{ Items []api.Pending }
		d.GetJSON(t, "/pending?controller=svgc", 200, &p)
		for _, it := range p.Items {
			if it.Target.Name == "e2e.kubegcd.io.sprockets" && it.Action == "delete" {
				return fmt.Errorf("its Lease is back, and the deletion is still pending: %+v", it)
			}
		}
		return nil
	})
}

// instance is a kubegcd binary run for the leader-election tests.
type instance struct {
	url string
	k   *testcluster.Kubegcd
}

type leaderStatus struct {
	Leader         bool
	LeaderElection struct {
		Identity, Holder string
		HolderSince      *time.Time
	}
}

func (in *instance) status(t *testing.T) (leaderStatus, error) {
	var st leaderStatus
	b, err := testcluster.HTTPGet(context.Background(), in.url+"/status")
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal(b, &st)
}

func startInstance(t *testing.T, name string, args ...string) *instance {
	t.Helper()
	dir := t.TempDir()
	addr := freeAddr(t)
	full := append([]string{"run", "--kubeconfig", cluster.Kubeconfig, "--db", filepath.Join(dir, "kubegcd.db"), "--listen", addr,
		"--dry-run=false"}, args...)
	mustEnforceAlone(t, full)
	k, err := testcluster.StartKubegcd(kubegcdBin, filepath.Join(dir, name+".log"), full...)
	if err != nil {
		t.Fatal(err)
	}
	in := &instance{url: "http://" + addr, k: k}
	t.Cleanup(func() {
		_ = k.Stop(10 * time.Second)
		if t.Failed() {
			t.Logf("%s log: see %s", name, filepath.Join(dir, name+".log"))
		}
	})
	if err := k.WaitReady(context.Background(), in.url+"/readyz", 50*time.Millisecond, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	return in
}

// leaderOf waits until exactly one of the instances leads, and returns it.
func leaderOf(t *testing.T, timeout time.Duration, ins ...*instance) (*instance, string) {
	t.Helper()
	var leader *instance
	var identity string
	eventually(t, timeout, func() error {
		leader = nil
		for _, in := range ins {
			st, err := in.status(t)
			if err != nil {
				return err
			}
			if st.Leader {
				if leader != nil {
					return stopError{Err: fmt.Errorf("two leaders: %s and %s", identity, st.LeaderElection.Identity)}
				}
				leader, identity = in, st.LeaderElection.Identity
			}
		}
		if leader == nil {
			return fmt.Errorf("no leader among %d", len(ins))
		}
		return nil
	})
	return leader, identity
}

// collected makes garbage in ns (a ConfigMap whose owner never existed)
// and returns the instance that audited its deletion.
func collected(t *testing.T, ns, name string, ins ...*instance) string {
	t.Helper()
	ctx := context.Background()
	_, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "never", UID: types.UID("00000000-0000-0000-0000-" + fmt.Sprintf("%012d", time.Now().UnixNano()%1e12))}},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var by []string
	eventually(t, 30*time.Second, func() error {
		by = nil
		for _, in := range ins {
			b, err := testcluster.HTTPGet(ctx, in.url+"/audit?namespace="+ns)
			if err != nil {
				return err
			}
			var a struct{ Items []api.AuditEntry }
			if err := json.Unmarshal(b, &a); err != nil {
				return err
			}
			for _, r := range a.Items {
				if r.Target.Name == name && r.Outcome == api.OutcomeApplied {
					by = append(by, r.Instance)
				}
			}
		}
		if len(by) == 0 {
			return fmt.Errorf("%s not collected yet", name)
		}
		return nil
	})
	if len(by) != 1 {
		t.Fatalf("%s collected by %v, want exactly one instance", name, by)
	}
	return by[0]
}

func TestLeaderElection(t *testing.T) {
	ns := namespaces.New(t, "leader-election")
	const lease, retry = 6 * time.Second, time.Second
	args := []string{"--controllers=ownergc", "--resync-period=1s", "--leader-elect-name=kubegcd-e2e",
		"--leader-elect-lease-duration=" + lease.String(), "--leader-elect-renew-deadline=4s", "--leader-elect-retry-period=" + retry.String()}
	a, b := startInstance(t, "a", args...), startInstance(t, "b", args...)
	leader, id := leaderOf(t, 30*time.Second, a, b)
	follower := a
	if leader == a {
		follower = b
	}
	if st, _ := follower.status(t); st.LeaderElection.Holder != id || st.LeaderElection.HolderSince == nil {
		t.Errorf("follower sees holder %q since %v, want %q", st.LeaderElection.Holder, st.LeaderElection.HolderSince, id)
	}
	if by := collected(t, ns, "garbage-1", a, b); by != id {
		t.Fatalf("garbage-1 collected by %s, not by the leader %s", by, id)
	}
	// The follower sent nothing: no action of its applier reached the API.
	for _, in := range []*instance{leader, follower} {
		body, err := testcluster.HTTPGet(context.Background(), in.url+"/metrics")
		if err != nil {
			t.Fatal(err)
		}
		wrote := strings.Contains(string(body), `outcome="applied"`)
		if wrote != (in == leader) {
			t.Errorf("%s: applied actions in /metrics: %v, want %v", in.url, wrote, in == leader)
		}
	}

	// kill -9: the follower takes over once the lease expires.
	if err := leader.k.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	next, nextID := leaderOf(t, 3*lease, follower)
	took := time.Since(killed)
	t.Logf("takeover after kill -9: %s", took.Round(10*time.Millisecond))
	// A follower times the lease from when it last saw it renewed, which
	// it checks every retry period: it takes over within the lease
	// duration plus one retry period of that sighting, which is itself up
	// to a retry period after the last renewal. 1.2: client-go's jitter on
	// the retry period; 1.5 s: this poll, and the follower's read and
	// update of the Lease, which took 0.8 s on a busy API server.
	if limit := lease + 2*time.Duration(1.2*float64(retry)) + 1500*time.Millisecond; took > limit {
		t.Errorf("takeover after kill -9 took %s, want at most %s", took, limit)
	}
	if by := collected(t, ns, "garbage-2", next); by != nextID {
		t.Fatalf("garbage-2 collected by %s, want %s", by, nextID)
	}

	// SIGTERM: the leader releases the lease, and a follower takes over at
	// its next retry.
	c := startInstance(t, "c", args...)
	if l, _ := leaderOf(t, 10*time.Second, next, c); l != next {
		t.Fatal("the new instance took the lease from a live leader")
	}
	stopped := time.Now()
	if err := next.k.Stop(10 * time.Second); err != nil {
		t.Fatalf("graceful stop: %v", err)
	}
	_, cID := leaderOf(t, 10*time.Second, c)
	if took := time.Since(stopped); took > 5*time.Second {
		t.Errorf("takeover after SIGTERM took %s, want under 5s", took)
	} else {
		t.Logf("takeover after SIGTERM: %s", took.Round(10*time.Millisecond))
	}
	if by := collected(t, ns, "garbage-3", c); by != cID {
		t.Fatalf("garbage-3 collected by %s, want %s", by, cID)
	}
}

func TestLeaseInventory(t *testing.T) {
	ctx := context.Background()
	real, _ := realServer(t)
	for name, age := range map[string]time.Duration{"e2e-node-fresh": 0, "e2e-node-stale": 5 * time.Minute} {
		renew := metav1.NewMicroTime(time.Now().Add(-age))
		_, err := kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: new(name), LeaseDurationSeconds: new(int32(40)), RenewTime: &renew},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	d := daemons.Start(t, "", "--controllers=svgc", "--dry-run=false", "--leader-elect-name=kubegcd-inventory")
	d.WaitReady(t, 60*time.Second)
	var st leaderStatus
	eventually(t, 30*time.Second, func() error {
		d.GetJSON(t, "/status", 200, &st)
		if !st.Leader {
			return fmt.Errorf("not leading yet")
		}
		return nil
	})
	type row struct {
		role    api.LeaseRole
		expired bool
		holder  string
	}
	want := map[string]row{
		"kube-system/" + real:            {api.LeaseRoleAPIServerIdentity, false, ""}, // holder: any
		"kube-system/kubegcd-inventory":  {api.LeaseRoleLeaderElection, false, st.LeaderElection.Identity},
		"kube-node-lease/e2e-node-fresh": {api.LeaseRoleNodeHeartbeat, false, "e2e-node-fresh"},
		"kube-node-lease/e2e-node-stale": {api.LeaseRoleNodeHeartbeat, true, "e2e-node-stale"},
	}
	eventually(t, 20*time.Second, func() error {
		var out struct{ Items []api.Lease }
		d.GetJSON(t, "/leases", 200, &out)
		seen := 0
		for _, l := range out.Items {
			w, ok := want[l.Namespace+"/"+l.Name]
			if !ok {
				continue
			}
			seen++
			if l.Role != w.role || l.Expired != w.expired || l.HolderIdentity == nil || (w.holder != "" && *l.HolderIdentity != w.holder) ||
				l.RenewAgeSeconds == nil || l.LeaseDurationSeconds == nil {
				return fmt.Errorf("%s/%s: %+v, want %+v", l.Namespace, l.Name, l, w)
			}
		}
		if seen != len(want) {
			return fmt.Errorf("%d of %d leases listed", seen, len(want))
		}
		return nil
	})
	var stale struct{ Items []api.Lease }
	d.GetJSON(t, "/leases?namespace=kube-node-lease&expired=true", 200, &stale)
	for _, l := range stale.Items {
		if l.Namespace != corev1.NamespaceNodeLease || !l.Expired || l.Name == "e2e-node-fresh" {
			t.Errorf("?namespace=kube-node-lease&expired=true listed %+v", l)
		}
	}
	if !slices.ContainsFunc(stale.Items, func(l api.Lease) bool { return l.Name == "e2e-node-stale" }) {
		t.Errorf("?expired=true lacks e2e-node-stale: %+v", stale.Items)
	}
	for _, bad := range []string{"/leases?expired=maybe", "/leases?holder=x"} {
		d.GetJSON(t, bad, http.StatusBadRequest, nil)
	}
	code, body, err := d.Get("/metrics")
	if err != nil || code != 200 || !strings.Contains(string(body), `kubegcd_leases_expired{role="node-heartbeat"}`) {
		t.Errorf("/metrics lacks kubegcd_leases_expired: %d %v", code, err)
	}
}
