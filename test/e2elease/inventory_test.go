package e2elease

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// TestLeaseInventory: /leases shows each Lease's strategy and preferred
// holder and its candidates as the API server holds them, and the
// findings: an expired candidate, a candidate naming no Lease, a holder
// that is not the preferred one for two renew periods, a coordinated
// Lease without a live candidate. The metrics count the candidates by
// state.
func TestLeaseInventory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := namespaces.New(t, "inventory")
	now := time.Now().Truncate(time.Second)
	micro := func(d time.Duration) *metav1.MicroTime { return new(metav1.NewMicroTime(now.Add(-d))) }
	strategy := coordinationv1.OldestEmulationVersion
	// kcm: held by kcm-a while the election prefers kcm-b; renew period
	// 2s. sched: its candidate is live. lone: coordinated, without a
	// candidate.
	for name, spec := range map[string]coordinationv1.LeaseSpec{
		"kcm": {HolderIdentity: new("kcm-a"), PreferredHolder: new("kcm-b"), Strategy: &strategy, LeaseDurationSeconds: new(int32(2)),
			RenewTime: micro(0)},
		"sched": {HolderIdentity: new("sched-a"), Strategy: &strategy, LeaseDurationSeconds: new(int32(3600)), RenewTime: micro(0)},
		"lone":  {HolderIdentity: new("lone-a"), Strategy: &strategy, LeaseDurationSeconds: new(int32(3600)), RenewTime: micro(0)},
	} {
		if _, err := kube.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec},
			metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating Lease %s: %v", name, err)
		}
	}
	// Each candidate was pinged after its last renewal, a minute ago or
	// more, and has not answered: kube-apiserver's election controller
	// leaves the candidates and the Leases as they are, and creates no
	// Lease gone.
	type spec struct {
		name, lease      string
		renewed, pinged  time.Duration
		binary, emulated string
	}
	create := func(c spec) error {
		_, err := kube.CoordinationV1beta1().LeaseCandidates(ns).Create(ctx, &coordinationv1beta1.LeaseCandidate{
			ObjectMeta: metav1.ObjectMeta{Name: c.name},
			Spec: coordinationv1beta1.LeaseCandidateSpec{LeaseName: c.lease, BinaryVersion: c.binary, EmulationVersion: c.emulated,
				Strategy: strategy, RenewTime: micro(c.renewed), PingTime: micro(c.pinged)},
		}, metav1.CreateOptions{})
		return err
	}
	expired := spec{"kcm-a", "kcm", 40 * time.Minute, 39 * time.Minute, "1.36.3", "1.36.0"}
	for _, c := range []spec{
		expired,
		{"kcm-b", "kcm", 2 * time.Minute, time.Minute, "1.36.3", "1.35.0"},
		{"sched-a", "sched", 2 * time.Minute, time.Minute, "1.36.3", "1.36.3"},
		{"x", "gone", 2 * time.Minute, time.Minute, "1.36.3", "1.36.0"},
	} {
		if err := create(c); err != nil {
			t.Fatalf("creating LeaseCandidate %s: %v", c.name, err)
		}
	}
	// kube-apiserver's LeaseCandidate collector makes its first pass once
	// its informer has synced, soon after kube-apiserver starts, and the
	// next 30 minutes later. A test run just after the start may see the
	// first pass delete the expired candidate: it is written again.
	keepExpired := func() error {
		_, err := kube.CoordinationV1beta1().LeaseCandidates(ns).Get(ctx, expired.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			t.Logf("kube-apiserver's collector deleted %s: writing it again", expired.name)
			err = create(expired)
		}
		return err
	}
	d := daemons.Start(t, "")

	wantFindings := []string{"candidate-without-lease gone/x", "candidate-expired kcm/kcm-a", "holder-not-preferred kcm/",
		"no-live-candidate lone/"}
	var out api.LeaseList
	// The holder-not-preferred finding comes two renew periods (4s) after
	// kubegcd first saw kcm's preferred holder.
	e2eutil.Eventually(t, mirrorTimeout, func() error {
		if err := keepExpired(); err != nil {
			return err
		}
		out = api.LeaseList{}
		d.GetJSON(t, "/leases?namespace="+ns, 200, &out)
		var got []string
		for _, f := range out.Findings {
			got = append(got, string(f.Kind)+" "+f.Lease+"/"+f.Candidate)
		}
		if diff := cmp.Diff(wantFindings, got); diff != "" {
			return fmt.Errorf("findings (-want +got):\n%s", diff)
		}
		return nil
	})
	for _, f := range out.Findings {
		if f.Namespace != ns || f.Message == "" {
			t.Errorf("finding %+v: want namespace %s and a message", f, ns)
		}
	}

	// Strategy, preferred holder and candidates, as the API server holds
	// them now.
	leases, err := kube.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lcs, err := kube.CoordinationV1beta1().LeaseCandidates(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	type candidate struct {
		Name, LeaseName, BinaryVersion, EmulationVersion, Strategy string
		PingTime, RenewTime                                        time.Time
		Expired                                                    bool
	}
	type lease struct {
		Name, Strategy, PreferredHolder string
		Candidates                      []candidate
	}
	asCandidate := func(name string, s coordinationv1beta1.LeaseCandidateSpec) candidate {
		return candidate{Name: name, LeaseName: s.LeaseName, BinaryVersion: s.BinaryVersion, EmulationVersion: s.EmulationVersion,
			Strategy: string(s.Strategy), PingTime: s.PingTime.Time.UTC(), RenewTime: s.RenewTime.Time.UTC(),
			Expired: s.RenewTime.Add(30 * time.Minute).Before(time.Now())}
	}
	var want, got []lease
	var wantWithout, gotWithout []candidate
	for _, l := range leases.Items {
		w := lease{Name: l.Name, Strategy: string(*l.Spec.Strategy)}
		if l.Spec.PreferredHolder != nil {
			w.PreferredHolder = *l.Spec.PreferredHolder
		}
		for _, c := range lcs.Items {
			if c.Spec.LeaseName == l.Name {
				w.Candidates = append(w.Candidates, asCandidate(c.Name, c.Spec))
			}
		}
		want = append(want, w)
	}
	for _, c := range lcs.Items {
		if c.Spec.LeaseName == "gone" {
			wantWithout = append(wantWithout, asCandidate(c.Name, c.Spec))
		}
	}
	fromAPI := func(c api.LeaseCandidate) candidate {
		if c.Namespace != ns || c.UID == "" || c.PingTime == nil || c.RenewTime == nil || c.RenewAgeSeconds == nil {
			t.Errorf("candidate %+v: want its namespace, uid, times and renew age", c)
			return candidate{Name: c.Name}
		}
		return candidate{Name: c.Name, LeaseName: c.LeaseName, BinaryVersion: c.BinaryVersion, EmulationVersion: c.EmulationVersion,
			Strategy: c.Strategy, PingTime: c.PingTime.UTC(), RenewTime: c.RenewTime.UTC(), Expired: c.Expired}
	}
	for _, it := range out.Items {
		g := lease{Name: it.Name}
		if it.Strategy != nil {
			g.Strategy = *it.Strategy
		}
		if it.PreferredHolder != nil {
			g.PreferredHolder = *it.PreferredHolder
		}
		for _, c := range it.Candidates {
			g.Candidates = append(g.Candidates, fromAPI(c))
		}
		got = append(got, g)
	}
	for _, c := range out.CandidatesWithoutLease {
		gotWithout = append(gotWithout, fromAPI(c))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("/leases differs from the API server's Leases and candidates (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantWithout, gotWithout); diff != "" {
		t.Errorf("candidates without a Lease (-want +got):\n%s", diff)
	}

	// ?expired= keeps some Leases and their findings. kcm ran out (it
	// lasts 2s and was renewed before kubegcd saw it 4s ago). The
	// candidates without a Lease go with ?expired= unset only.
	for _, tc := range []struct {
		expired          string
		leases, findings int
	}{{"true", 1, 2}, {"false", 2, 1}} {
		var l api.LeaseList
		d.GetJSON(t, "/leases?expired="+tc.expired+"&namespace="+ns, 200, &l)
		if len(l.Items) != tc.leases || l.CandidatesWithoutLease != nil || len(l.Findings) != tc.findings {
			t.Errorf("?expired=%s: %d Leases, candidates without a Lease %+v, findings %+v; want %d, none, and %d findings",
				tc.expired, len(l.Items), l.CandidatesWithoutLease, l.Findings, tc.leases, tc.findings)
		}
	}

	// The metrics count this namespace's candidates among the cluster's.
	_, body, err := d.Get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for state, least := range map[string]float64{"live": 3, "expired": 1} {
		m := regexp.MustCompile(`(?m)^kubegcd_lease_candidates\{state="` + state + `"\} (\S+)$`).FindSubmatch(body)
		if m == nil {
			t.Errorf("no kubegcd_lease_candidates{state=%q} in /metrics", state)
			continue
		}
		if v, err := strconv.ParseFloat(string(m[1]), 64); err != nil || v < least {
			t.Errorf("kubegcd_lease_candidates{state=%q} = %s, want at least %v", state, m[1], least)
		}
	}
	if !strings.Contains(string(body), `kubegcd_leases{role="leader-election"}`) {
		t.Error("/metrics lost kubegcd_leases")
	}
}
