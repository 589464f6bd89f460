package e2elease

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// mirrorTimeout bounds how long the mirror may take to follow a change.
const mirrorTimeout = 30 * time.Second

// TestMirrorLeaseCandidates: kubegcd mirrors LeaseCandidates through
// v1beta1, every spec field as the API server holds it, and a Lease's
// strategy and preferred holder; it follows a renewal, a hand-over and a
// deletion, and the Lease's history, in the database and through the API,
// records its holder and preferred holder changes.
func TestMirrorLeaseCandidates(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := namespaces.New(t, "mirror")
	d := daemons.Start(t, "")
	store := d.DB(t)
	candidates := kube.CoordinationV1beta1().LeaseCandidates(ns)
	leases := kube.CoordinationV1().Leases(ns)

	// Each candidate was pinged a minute ago and has not answered since:
	// kube-apiserver's election controller, which would ping it or elect
	// it, leaves it as it is.
	now := time.Now().Truncate(time.Second)
	micro := func(d time.Duration, us int) *metav1.MicroTime {
		v := metav1.NewMicroTime(now.Add(d + time.Duration(us)*time.Microsecond))
		return &v
	}
	for _, c := range []coordinationv1beta1.LeaseCandidate{
		{ObjectMeta: metav1.ObjectMeta{Name: "kcm-a"}, Spec: coordinationv1beta1.LeaseCandidateSpec{LeaseName: "standing",
			BinaryVersion: "1.36.3", EmulationVersion: "1.35.0", Strategy: coordinationv1.OldestEmulationVersion,
			PingTime: micro(-time.Minute, 123456), RenewTime: micro(-2*time.Minute, 654321)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "kcm-b"}, Spec: coordinationv1beta1.LeaseCandidateSpec{LeaseName: "standing",
			BinaryVersion: "1.36.3", EmulationVersion: "1.36.0", Strategy: coordinationv1.OldestEmulationVersion,
			PingTime: micro(-time.Minute, 1), RenewTime: micro(-3*time.Minute, 999999)}},
	} {
		if _, err := candidates.Create(ctx, &c, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating LeaseCandidate %s: %v", c.Name, err)
		}
	}
	want := []db.LeaseCandidate{
		{LeaseName: "standing", BinaryVersion: "1.36.3", EmulationVersion: "1.35.0", Strategy: "OldestEmulationVersion",
			PingTime: &micro(-time.Minute, 123456).Time, RenewTime: &micro(-2*time.Minute, 654321).Time},
		{LeaseName: "standing", BinaryVersion: "1.36.3", EmulationVersion: "1.36.0", Strategy: "OldestEmulationVersion",
			PingTime: &micro(-time.Minute, 1).Time, RenewTime: &micro(-3*time.Minute, 999999).Time},
	}
	mirrorShows := func() {
		t.Helper()
		e2eutil.Eventually(t, mirrorTimeout, func() error { return candidatesMatch(ctx, store, ns) })
	}
	mirrorShows()
	rows, err := store.Objects().LeaseCandidates(ctx, db.LeaseCandidateFilter{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	var got []db.LeaseCandidate
	for _, r := range rows {
		got = append(got, r.LeaseCandidate)
	}
	if diff := cmp.Diff(want, got, sameInstant); diff != "" {
		t.Errorf("the mirror's candidates differ from what was written (-want +got):\n%s", diff)
	}
	checkObjectsAPI(t, d, ns)

	// kcm-a answers the ping: the election controller then elects it to
	// the Lease it stands for.
	a, err := candidates.Get(ctx, "kcm-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	if _, err := candidates.Update(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("renewing kcm-a: %v", err)
	}
	mirrorShows()
	e2eutil.Eventually(t, mirrorTimeout, func() error {
		l, err := leases.Get(ctx, "standing", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "kcm-a" {
			return fmt.Errorf("the Lease the candidates stand for is held by %v, want kcm-a", l.Spec.HolderIdentity)
		}
		return leaseMatches(ctx, store, l)
	})

	// A Lease under coordinated election, which no candidate stands for:
	// the election controller leaves it to this test. Its holder hands
	// over to the preferred holder, which a new preference then follows.
	d1h := new(int32(3600))
	lease, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "coordinated"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: new("a"), LeaseDurationSeconds: d1h, AcquireTime: micro(0, 0),
			RenewTime: micro(0, 0), Strategy: new(coordinationv1.OldestEmulationVersion), PreferredHolder: new("b")}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the Lease: %v", err)
	}
	follow := func(step string, change func(*coordinationv1.LeaseSpec)) {
		t.Helper()
		if step != "" {
			change(&lease.Spec)
			if lease, err = leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("%s: %v", step, err)
			}
		}
		e2eutil.Eventually(t, mirrorTimeout, func() error { return leaseMatches(ctx, store, lease) })
	}
	follow("", nil)
	follow("handing over to b", func(s *coordinationv1.LeaseSpec) {
		s.HolderIdentity, s.PreferredHolder, s.AcquireTime, s.RenewTime = new("b"), nil, micro(time.Second, 0), micro(time.Second, 0)
		s.LeaseTransitions = new(int32(1))
	})
	follow("renewing", func(s *coordinationv1.LeaseSpec) { s.RenewTime = micro(2*time.Second, 0) })
	follow("preferring c", func(s *coordinationv1.LeaseSpec) { s.PreferredHolder = new("c") })

	history, err := store.History().HistoryOf(ctx, string(lease.UID))
	if err != nil {
		t.Fatal(err)
	}
	var events []string
	for _, e := range history {
		events = append(events, fmt.Sprintf("%s holder=%s preferred=%s", e.Event, mirrorString(e.Holder), mirrorString(e.PreferredHolder)))
	}
	wantEvents := []string{
		"created holder=a preferred=b",
		"holder-changed holder=b preferred=",
		"preferred-holder-changed holder=b preferred=",
		"preferred-holder-changed holder=b preferred=c",
	}
	if diff := cmp.Diff(wantEvents, events); diff != "" {
		t.Errorf("the Lease's history (-want +got):\n%s", diff)
	}
	var answer api.ObjectHistory
	d.GetJSON(t, "/objects/"+string(lease.UID)+"/history", 200, &answer)
	events = nil
	for _, e := range answer.Items {
		events = append(events, fmt.Sprintf("%s holder=%s preferred=%s", e.Event, mirrorString(e.Holder), mirrorString(e.PreferredHolder)))
	}
	if diff := cmp.Diff(wantEvents, events); diff != "" {
		t.Errorf("/objects/%s/history (-want +got):\n%s", lease.UID, diff)
	}

	// A deleted candidate leaves the mirror; the other stays as it is.
	if err := candidates.Delete(ctx, "kcm-b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	mirrorShows()
	e2eutil.Eventually(t, mirrorTimeout, func() error {
		return e2eutil.MirrorMatches(ctx, store, metadata.NewForConfigOrDie(cluster.Config), ns)
	})
}

// candidatesMatch compares the LeaseCandidates of namespace ns in the
// mirror with the API server's, field by field.
func candidatesMatch(ctx context.Context, store *db.DB, ns string) error {
	live, err := kube.CoordinationV1beta1().LeaseCandidates(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	want := []db.LeaseCandidateRow{}
	for _, c := range live.Items {
		s := c.Spec
		want = append(want, db.LeaseCandidateRow{Namespace: c.Namespace, Name: c.Name, UID: string(c.UID),
			ResourceVersion: c.ResourceVersion, Created: &c.CreationTimestamp.Time,
			LeaseCandidate: db.LeaseCandidate{LeaseName: s.LeaseName, BinaryVersion: s.BinaryVersion,
				EmulationVersion: s.EmulationVersion, Strategy: string(s.Strategy), PingTime: mirrorTime(s.PingTime),
				RenewTime: mirrorTime(s.RenewTime)}})
	}
	got, err := store.Objects().LeaseCandidates(ctx, db.LeaseCandidateFilter{Namespace: ns})
	if err != nil {
		return err
	}
	byName := func(a, b db.LeaseCandidateRow) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(want, byName)
	slices.SortFunc(got, byName)
	if diff := cmp.Diff(want, got, sameInstant); diff != "" {
		return fmt.Errorf("the mirror's LeaseCandidates differ from the API server's (-api +mirror):\n%s", diff)
	}
	return nil
}

// leaseMatches compares the mirror's copy of a Lease with live, field by
// field.
func leaseMatches(ctx context.Context, store *db.DB, live *coordinationv1.Lease) error {
	rows, err := store.Objects().Leases(ctx, db.LeaseFilter{Namespace: live.Namespace, Name: live.Name})
	if err != nil {
		return err
	}
	s := live.Spec
	want := []db.LeaseRow{{Namespace: live.Namespace, Name: live.Name, UID: string(live.UID), HolderIdentity: s.HolderIdentity,
		LeaseDurationSeconds: s.LeaseDurationSeconds, AcquireTime: mirrorTime(s.AcquireTime), RenewTime: mirrorTime(s.RenewTime),
		LeaseTransitions: s.LeaseTransitions, PreferredHolder: s.PreferredHolder}}
	if s.Strategy != nil {
		want[0].Strategy = new(string(*s.Strategy))
	}
	if diff := cmp.Diff(want, rows, sameInstant); diff != "" {
		return fmt.Errorf("the mirror's Lease %s/%s differs from the API server's (-api +mirror):\n%s", live.Namespace, live.Name, diff)
	}
	return nil
}

// checkObjectsAPI reads the candidates of ns through the daemon's API, its
// lookup and each one's detail: both name them as the API server does,
// in the version it serves them.
func checkObjectsAPI(t *testing.T, d *e2eutil.Daemon, ns string) {
	t.Helper()
	live, err := kube.CoordinationV1beta1().LeaseCandidates(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var want []api.Object
	for _, c := range live.Items {
		want = append(want, api.Object{UID: string(c.UID), APIVersion: "coordination.k8s.io/v1beta1", Kind: "LeaseCandidate",
			Namespace: ns, Name: c.Name, ResourceVersion: c.ResourceVersion, CreationTimestamp: &c.CreationTimestamp.Time,
			Finalizers: []string{}, OwnerReferences: []api.ObjectOwnerRef{}})
	}
	var lookup api.Lookup
	d.GetJSON(t, "/objects?kind=leasecandidates&namespace="+url.QueryEscape(ns), 200, &lookup)
	byName := func(a, b api.Object) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(lookup.Items, byName)
	slices.SortFunc(want, byName)
	if diff := cmp.Diff(want, lookup.Items, sameInstant); diff != "" {
		t.Errorf("/objects?kind=leasecandidates (-api server +kubegcd):\n%s", diff)
	}
	for _, w := range want {
		var detail api.ObjectDetail
		d.GetJSON(t, "/objects/"+w.UID, 200, &detail)
		if diff := cmp.Diff(w, detail.Object, sameInstant); diff != "" {
			t.Errorf("/objects/%s (-api server +kubegcd):\n%s", w.UID, diff)
		}
	}
}

// sameInstant compares times by instant, whatever their location.
var sameInstant = cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })

func mirrorTime(t *metav1.MicroTime) *time.Time {
	if t == nil {
		return nil
	}
	return &t.Time
}

func mirrorString(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
