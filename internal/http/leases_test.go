package http

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

// leaseFixture is a namespace under coordinated leader election: a
// coordinated Lease whose holder is not the preferred one, with a live and
// an expired candidate; a coordinated Lease run out whose one candidate
// expired; and two candidates naming a Lease that does not exist.
func leaseFixture(now time.Time) leaseData {
	at := func(d time.Duration) *time.Time { return new(now.Add(d)) }
	oldest := "OldestEmulationVersion"
	rows := []db.LeaseRow{
		{Namespace: "ns", Name: "kcm", UID: "l-kcm", HolderIdentity: new("kcm-a"), LeaseDurationSeconds: new(int32(15)),
			RenewTime: at(-time.Second), Strategy: &oldest, PreferredHolder: new("kcm-b")},
		{Namespace: "ns", Name: "sched", UID: "l-sched", HolderIdentity: new("sched-a"), LeaseDurationSeconds: new(int32(15)),
			RenewTime: at(-time.Hour), Strategy: &oldest},
	}
	created := db.HistoryEntry{UID: "l-kcm", Event: api.HistoryCreated, Time: *at(-time.Hour), Holder: new("kcm-a"), HolderSince: at(-time.Hour),
		PreferredHolder: new("")}
	preferred := db.HistoryEntry{UID: "l-kcm", Event: api.HistoryPreferredHolderChanged, Time: *at(-2 * time.Minute), Holder: new("kcm-a"),
		PreferredHolder: new("kcm-b")}
	cand := func(name, lease string, renewed time.Duration) db.LeaseCandidateRow {
		return db.LeaseCandidateRow{Namespace: "ns", Name: name, UID: "c-" + name, LeaseCandidate: db.LeaseCandidate{LeaseName: lease,
			BinaryVersion: "1.36.0", EmulationVersion: "1.35.0", Strategy: oldest, RenewTime: at(-renewed)}}
	}
	candidates := []db.LeaseCandidateRow{cand("kcm-b", "kcm", time.Minute), cand("kcm-a", "kcm", 40*time.Minute),
		cand("x", "gone", time.Minute), cand("y", "gone", time.Hour), cand("sched-a", "sched", 31*time.Minute)}
	return leaseData{leases: rows, holders: map[string][]db.HistoryEntry{"l-kcm": {created}},
		histories: map[string][]db.HistoryEntry{"l-kcm": {created, preferred}}, candidates: candidates}
}

func TestLeaseListOf(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	d := leaseFixture(now)
	yes, no := true, false
	for _, tc := range []struct {
		name       string
		expired    *bool
		items      []string // "lease: candidates"
		without    []string
		findings   []string // "kind lease/candidate"
		noFindings bool
	}{
		{
			name:    "every Lease",
			items:   []string{"kcm: kcm-a kcm-b", "sched: sched-a"},
			without: []string{"x", "y"},
			findings: []string{"candidate-expired gone/y", "candidate-without-lease gone/x", "candidate-without-lease gone/y",
				"candidate-expired kcm/kcm-a", "holder-not-preferred kcm/", "candidate-expired sched/sched-a", "no-live-candidate sched/"},
		},
		{
			name:     "expired Leases: their findings only",
			expired:  &yes,
			items:    []string{"sched: sched-a"},
			findings: []string{"candidate-expired sched/sched-a", "no-live-candidate sched/"},
		},
		{
			name:     "live Leases: their findings only",
			expired:  &no,
			items:    []string{"kcm: kcm-a kcm-b"},
			findings: []string{"candidate-expired kcm/kcm-a", "holder-not-preferred kcm/"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := leaseListOf(d, tc.expired, now)
			var items, without, findings []string
			for _, it := range out.Items {
				s := it.Name + ":"
				for _, c := range it.Candidates {
					s += " " + c.Name
				}
				items = append(items, s)
			}
			for _, c := range out.CandidatesWithoutLease {
				without = append(without, c.Name)
			}
			for _, f := range out.Findings {
				findings = append(findings, string(f.Kind)+" "+f.Lease+"/"+f.Candidate)
			}
			if diff := cmp.Diff(tc.items, items); diff != "" {
				t.Errorf("items (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.without, without); diff != "" {
				t.Errorf("candidates without a Lease (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.findings, findings); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
	// The preferred holder's first sight dates the mismatch, 2 minutes
	// ago; the holder's acquireTime, an hour ago, does not.
	out := leaseListOf(d, nil, now)
	for _, f := range out.Findings {
		if f.Kind == api.LeaseFindingHolderNotPreferred && !strings.Contains(f.Message, "for 2m:") {
			t.Errorf("holder-not-preferred: %q, want it dated by the preferred holder's first sight, 2m ago", f.Message)
		}
	}
	// The Lease's fields and holder changes are what they were.
	kcm := out.Items[0]
	if *kcm.Strategy != "OldestEmulationVersion" || *kcm.PreferredHolder != "kcm-b" || len(kcm.HolderChanges) != 1 || len(kcm.Gaps) != 0 {
		t.Errorf("kcm: strategy %v, preferred holder %v, holder changes %+v, gaps %+v", kcm.Strategy, kcm.PreferredHolder,
			kcm.HolderChanges, kcm.Gaps)
	}
	if c := kcm.Candidates[1]; c.BinaryVersion != "1.36.0" || c.EmulationVersion != "1.35.0" || c.Expired || c.RenewAgeSeconds == nil ||
		*c.RenewAgeSeconds != 60 {
		t.Errorf("candidate kcm-b: %+v", c)
	}
}

// A mirror without LeaseCandidates (a cluster without coordinated leader
// election) answers as before: no candidates, no findings.
func TestLeaseListOfWithoutCandidates(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	rows := []db.LeaseRow{{Namespace: "kube-system", Name: "kcm", UID: "l", HolderIdentity: new("a"), LeaseDurationSeconds: new(int32(15)),
		RenewTime: new(now)}}
	out := leaseListOf(leaseData{leases: rows, candidates: []db.LeaseCandidateRow{}}, nil, now)
	if len(out.Items) != 1 || out.Items[0].Candidates != nil || out.CandidatesWithoutLease != nil || out.Findings != nil {
		t.Errorf("got %+v, want the Lease alone", out)
	}
}

// fakeLeases is a leaseLister of fixed rows, or of an error.
type fakeLeases struct {
	leases     []db.LeaseRow
	candidates []db.LeaseCandidateRow
	err        error
}

func (f fakeLeases) Leases(context.Context, db.LeaseFilter) ([]db.LeaseRow, error) {
	return f.leases, nil
}

func (f fakeLeases) LeaseCandidates(context.Context, db.LeaseCandidateFilter) ([]db.LeaseCandidateRow, error) {
	return f.candidates, f.err
}

func TestLeaseCollector(t *testing.T) {
	now := time.Now()
	d := leaseFixture(now)
	c := newLeaseCollector(fakeLeases{leases: d.leases, candidates: d.candidates})
	want := `
# HELP kubegcd_lease_candidates LeaseCandidates in the cluster, by state: live, or expired (never renewed, or renewed more than 30 minutes ago).
# TYPE kubegcd_lease_candidates gauge
kubegcd_lease_candidates{state="expired"} 3
kubegcd_lease_candidates{state="live"} 2
# HELP kubegcd_leases Leases in the cluster, by role: leader-election, node-heartbeat, apiserver-identity.
# TYPE kubegcd_leases gauge
kubegcd_leases{role="apiserver-identity"} 0
kubegcd_leases{role="leader-election"} 2
kubegcd_leases{role="node-heartbeat"} 0
# HELP kubegcd_leases_expired Leases whose renewTime + leaseDurationSeconds is past, by role.
# TYPE kubegcd_leases_expired gauge
kubegcd_leases_expired{role="apiserver-identity"} 0
kubegcd_leases_expired{role="leader-election"} 1
kubegcd_leases_expired{role="node-heartbeat"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
	// A failing read of the candidates fails the scrape, not the Leases'
	// counts silently.
	failing := newLeaseCollector(fakeLeases{leases: d.leases, err: errors.New("disk")})
	if err := testutil.CollectAndCompare(failing, strings.NewReader(want)); err == nil || !strings.Contains(err.Error(), "disk") {
		t.Errorf("collect with the candidates unreadable: %v, want the error", err)
	}
}

// TestLeasesHandler: /leases reads the Leases, their candidates and their
// histories from the store. A preferred holder set after the Lease was
// created is dated by its own history row, which LeaseHolderHistory does
// not give.
func TestLeasesHandler(t *testing.T) {
	srv, store := testServer(t)
	ctx := context.Background()
	leases, err := store.Mirror().EnsureResource(ctx, db.Resource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases",
		Kind: "Lease", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	candidates, err := store.Mirror().EnsureResource(ctx, db.Resource{Group: "coordination.k8s.io", Version: "v1beta1",
		Resource: "leasecandidates", Kind: "LeaseCandidate", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	// A duration of zero: two renew periods have passed as soon as the
	// preferred holder is seen.
	lease := func(rv, preferred string) db.Event {
		l := &db.Lease{HolderIdentity: new("a"), LeaseDurationSeconds: new(int32(0)), RenewTime: new(now),
			Strategy: new("OldestEmulationVersion")}
		if preferred != "" {
			l.PreferredHolder = &preferred
		}
		return db.Event{ResourceID: leases, Object: &db.Object{UID: "l", APIVersion: "coordination.k8s.io/v1", Kind: "Lease",
			Namespace: "ns", Name: "kcm", ResourceVersion: rv, Lease: l}}
	}
	candidate := func(name, leaseName string, renewed time.Duration) db.Event {
		return db.Event{ResourceID: candidates, Object: &db.Object{UID: "c-" + name, APIVersion: "coordination.k8s.io/v1beta1",
			Kind: "LeaseCandidate", Namespace: "ns", Name: name, ResourceVersion: "1", LeaseCandidate: &db.LeaseCandidate{
				LeaseName: leaseName, BinaryVersion: "1.36.0", EmulationVersion: "1.36.0", Strategy: "OldestEmulationVersion",
				RenewTime: new(now.Add(-renewed))}}}
	}
	for _, evs := range [][]db.Event{
		{lease("1", ""), candidate("a", "kcm", time.Hour), candidate("b", "kcm", time.Minute), candidate("x", "gone", time.Minute)},
		{lease("2", "b")},
	} {
		if _, err := store.Mirror().ApplyEvents(ctx, evs); err != nil {
			t.Fatal(err)
		}
	}
	var got api.LeaseList
	getJSON(t, srv, "/leases?namespace=ns", 200, &got)
	if len(got.Items) != 1 || *got.Items[0].PreferredHolder != "b" || len(got.Items[0].Candidates) != 2 {
		t.Fatalf("items %+v, want Lease kcm preferring b, with its candidates a and b", got.Items)
	}
	var kinds []string
	for _, f := range got.Findings {
		kinds = append(kinds, string(f.Kind)+" "+f.Lease+"/"+f.Candidate)
	}
	want := []string{"candidate-without-lease gone/x", "candidate-expired kcm/a", "holder-not-preferred kcm/"}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	if len(got.CandidatesWithoutLease) != 1 || got.CandidatesWithoutLease[0].Name != "x" {
		t.Errorf("candidates without a Lease: %+v, want x", got.CandidatesWithoutLease)
	}
}
