package diagnose

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

func TestClassifyLeases(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	ago := func(s int) *time.Time { v := now.Add(-time.Duration(s) * time.Second); return &v }
	secs := func(s int32) *int32 { return &s }
	for _, tc := range []struct {
		name    string
		lease   db.LeaseRow
		role    api.LeaseRole
		expired bool
		age     float64 // -1: none
	}{
		{"a node's heartbeat, renewed 10s ago for 40s", db.LeaseRow{Namespace: "kube-node-lease", Name: "n1", RenewTime: ago(10),
			LeaseDurationSeconds: secs(40)}, api.LeaseRoleNodeHeartbeat, false, 10},
		{"a node's heartbeat, run out", db.LeaseRow{Namespace: "kube-node-lease", Name: "n1", RenewTime: ago(41),
			LeaseDurationSeconds: secs(40)}, api.LeaseRoleNodeHeartbeat, true, 41},
		{"a kube-apiserver's identity", db.LeaseRow{Namespace: "kube-system", Name: "apiserver-x", IdentityLabel: "kube-apiserver",
			RenewTime: ago(5), LeaseDurationSeconds: secs(3600)}, api.LeaseRoleAPIServerIdentity, false, 5},
		{"another identity label in kube-system is a leader election", db.LeaseRow{Namespace: "kube-system", Name: "x",
			IdentityLabel: "sample-controller", RenewTime: ago(5), LeaseDurationSeconds: secs(15)}, api.LeaseRoleLeaderElection, false, 5},
		{"a leader election elsewhere", db.LeaseRow{Namespace: "apps", Name: "kubegcd", RenewTime: ago(20),
			LeaseDurationSeconds: secs(15)}, api.LeaseRoleLeaderElection, true, 20},
		{"never renewed: expired", db.LeaseRow{Namespace: "apps", Name: "new", LeaseDurationSeconds: secs(15)},
			api.LeaseRoleLeaderElection, true, -1},
		{"no duration: expired", db.LeaseRow{Namespace: "apps", Name: "odd", RenewTime: ago(1)}, api.LeaseRoleLeaderElection, true, 1},
		{"renewed exactly a duration ago: not yet", db.LeaseRow{Namespace: "apps", Name: "edge", RenewTime: ago(15),
			LeaseDurationSeconds: secs(15)}, api.LeaseRoleLeaderElection, false, 15},
	} {
		l := ClassifyLeases([]db.LeaseRow{tc.lease}, now)[0]
		row := tc.lease
		if l.Namespace != row.Namespace || l.Name != row.Name || l.UID != row.UID || l.HolderIdentity != row.HolderIdentity ||
			l.LeaseDurationSeconds != row.LeaseDurationSeconds || l.AcquireTime != row.AcquireTime || l.RenewTime != row.RenewTime ||
			l.LeaseTransitions != row.LeaseTransitions {
			t.Errorf("%s: the row became %+v", tc.name, l)
		}
		if l.Role != tc.role || l.Expired != tc.expired {
			t.Errorf("%s: role %q expired %v, want %q %v", tc.name, l.Role, l.Expired, tc.role, tc.expired)
		}
		switch {
		case tc.age < 0 && l.RenewAgeSeconds != nil:
			t.Errorf("%s: renewed %vs ago, want never", tc.name, *l.RenewAgeSeconds)
		case tc.age >= 0 && (l.RenewAgeSeconds == nil || *l.RenewAgeSeconds != tc.age):
			t.Errorf("%s: renew age %v, want %vs", tc.name, l.RenewAgeSeconds, tc.age)
		}
	}
}

// TestLeaseCandidateExpired: upstream's rule, to the second: valid for 30
// minutes after renewTime, expired when never renewed.
func TestLeaseCandidateExpired(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	renewed := clk.Now()
	for _, tc := range []struct {
		name    string
		step    time.Duration
		renew   *time.Time
		expired bool
	}{
		{"just renewed", 0, &renewed, false},
		{"29 minutes on", 29 * time.Minute, &renewed, false},
		{"exactly 30 minutes on: not yet", time.Minute, &renewed, false},
		{"a second later", time.Second, &renewed, true},
		{"never renewed", 0, nil, true},
	} {
		clk.Step(tc.step)
		if got := LeaseCandidateExpired(tc.renew, clk.Now()); got != tc.expired {
			t.Errorf("%s: expired %v, want %v", tc.name, got, tc.expired)
		}
	}
}

func TestClassifyLeaseCandidates(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) *time.Time { return new(now.Add(-d)) }
	rows := []db.LeaseCandidateRow{
		{Namespace: "kube-system", Name: "kcm-a", UID: "u1", LeaseCandidate: db.LeaseCandidate{LeaseName: "kcm", BinaryVersion: "1.36.0",
			EmulationVersion: "1.35.0", Strategy: "OldestEmulationVersion", PingTime: ago(time.Minute), RenewTime: ago(10 * time.Second)}},
		{Namespace: "kube-system", Name: "kcm-b", UID: "u2", LeaseCandidate: db.LeaseCandidate{LeaseName: "kcm", RenewTime: ago(40 * time.Minute)}},
		{Namespace: "kube-system", Name: "kcm-c", UID: "u3", LeaseCandidate: db.LeaseCandidate{LeaseName: "kcm"}},
	}
	want := []api.LeaseCandidate{
		{Namespace: "kube-system", Name: "kcm-a", UID: "u1", LeaseName: "kcm", BinaryVersion: "1.36.0", EmulationVersion: "1.35.0",
			Strategy: "OldestEmulationVersion", PingTime: ago(time.Minute), RenewTime: ago(10 * time.Second), RenewAgeSeconds: new(10.0)},
		{Namespace: "kube-system", Name: "kcm-b", UID: "u2", LeaseName: "kcm", RenewTime: ago(40 * time.Minute), RenewAgeSeconds: new(2400.0),
			Expired: true},
		{Namespace: "kube-system", Name: "kcm-c", UID: "u3", LeaseName: "kcm", Expired: true},
	}
	if diff := cmp.Diff(want, ClassifyLeaseCandidates(rows, now)); diff != "" {
		t.Errorf("candidates (-want +got):\n%s", diff)
	}
}

func TestInventoryLeases(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	start := clk.Now()
	at := func(d time.Duration) *time.Time { return new(start.Add(d)) }
	lease := func(name, holder, preferred, strategy string, duration int32) api.Lease {
		l := api.Lease{Namespace: "ns", Name: name, Role: api.LeaseRoleLeaderElection, LeaseDurationSeconds: &duration}
		if holder != "" {
			l.HolderIdentity = &holder
		}
		if preferred != "" {
			l.PreferredHolder = &preferred
		}
		if strategy != "" {
			l.Strategy = &strategy
		}
		return l
	}
	cand := func(name, leaseName string, renewed time.Duration) api.LeaseCandidate {
		c := api.LeaseCandidate{Namespace: "ns", Name: name, LeaseName: leaseName, RenewTime: at(renewed)}
		return c
	}
	live := func(c api.LeaseCandidate) api.LeaseCandidate { return c }
	expired := func(c api.LeaseCandidate) api.LeaseCandidate { c.Expired = true; return c }
	const oldest = "OldestEmulationVersion"
	type check struct {
		step  time.Duration // the fake clock's step before this check
		kinds []string      // "kind lease/candidate", in order
	}
	for _, tc := range []struct {
		name       string
		leases     []LeaseFacts
		candidates []api.LeaseCandidate
		checks     []check
		byLease    map[LeaseKey][]string
		without    []string
	}{
		{
			name:   "a plain Lease: nothing",
			leases: []LeaseFacts{{Lease: lease("l", "a", "", "", 15)}},
			checks: []check{{0, nil}, {time.Hour, nil}},
		},
		{
			name:       "holder is not the preferred holder: said after two durations from the preferred holder's first sight",
			leases:     []LeaseFacts{{Lease: lease("l", "a", "b", oldest, 15), HolderSince: at(-time.Hour), PreferredSince: at(0)}},
			candidates: []api.LeaseCandidate{live(cand("a", "l", 0)), live(cand("b", "l", 0))},
			checks: []check{{0, nil}, {30 * time.Second, nil}, {time.Second, []string{"holder-not-preferred l/"}},
				{time.Hour, []string{"holder-not-preferred l/"}}},
			byLease: map[LeaseKey][]string{{"ns", "l"}: {"a", "b"}},
		},
		{
			name:       "the holder took the Lease after the preferred holder was first seen: from when it took it",
			leases:     []LeaseFacts{{Lease: lease("l", "a", "b", oldest, 10), HolderSince: at(time.Minute), PreferredSince: at(0)}},
			candidates: []api.LeaseCandidate{live(cand("b", "l", 0))},
			checks:     []check{{80 * time.Second, nil}, {time.Second, []string{"holder-not-preferred l/"}}},
		},
		{
			name:       "nobody holds it while a preferred holder waits",
			leases:     []LeaseFacts{{Lease: lease("l", "", "b", oldest, 10), PreferredSince: at(0)}},
			candidates: []api.LeaseCandidate{live(cand("b", "l", 0))},
			checks:     []check{{21 * time.Second, []string{"holder-not-preferred l/"}}},
		},
		{
			name:       "the preferred holder holds it",
			leases:     []LeaseFacts{{Lease: lease("l", "b", "b", oldest, 10), PreferredSince: at(0)}},
			candidates: []api.LeaseCandidate{live(cand("b", "l", 0))},
			checks:     []check{{time.Hour, nil}},
		},
		{
			name:       "history does not date the preferred holder: nothing said",
			leases:     []LeaseFacts{{Lease: lease("l", "a", "b", oldest, 10), HolderSince: at(-time.Hour)}},
			candidates: []api.LeaseCandidate{live(cand("b", "l", 0))},
			checks:     []check{{time.Hour, nil}},
		},
		{
			name: "no duration: nothing said",
			leases: []LeaseFacts{{Lease: func() api.Lease { l := lease("l", "a", "b", oldest, 0); l.LeaseDurationSeconds = nil; return l }(),
				PreferredSince: at(0)}},
			candidates: []api.LeaseCandidate{live(cand("b", "l", 0))},
			checks:     []check{{time.Hour, nil}},
		},
		{
			name:   "a coordinated Lease without candidates",
			leases: []LeaseFacts{{Lease: lease("l", "a", "", oldest, 10)}},
			checks: []check{{0, []string{"no-live-candidate l/"}}},
		},
		{
			name:       "a coordinated Lease whose candidates all expired",
			leases:     []LeaseFacts{{Lease: lease("l", "a", "", oldest, 10)}},
			candidates: []api.LeaseCandidate{expired(cand("a", "l", -31*time.Minute)), expired(cand("b", "l", -time.Hour))},
			checks:     []check{{0, []string{"candidate-expired l/a", "candidate-expired l/b", "no-live-candidate l/"}}},
			byLease:    map[LeaseKey][]string{{"ns", "l"}: {"a", "b"}},
		},
		{
			name:       "a coordinated Lease with one live candidate of two",
			leases:     []LeaseFacts{{Lease: lease("l", "a", "", oldest, 10)}},
			candidates: []api.LeaseCandidate{expired(cand("b", "l", -time.Hour)), live(cand("a", "l", 0))},
			checks:     []check{{0, []string{"candidate-expired l/b"}}},
			byLease:    map[LeaseKey][]string{{"ns", "l"}: {"a", "b"}},
		},
		{
			name:       "an uncoordinated Lease needs no candidate",
			leases:     []LeaseFacts{{Lease: lease("l", "a", "", "", 10)}},
			candidates: []api.LeaseCandidate{expired(cand("a", "l", -time.Hour))},
			checks:     []check{{0, []string{"candidate-expired l/a"}}},
		},
		{
			name:   "candidates naming no Lease, one of them expired",
			leases: []LeaseFacts{{Lease: lease("l", "a", "", "", 10)}},
			candidates: []api.LeaseCandidate{live(cand("x", "gone", 0)), expired(cand("y", "gone", -time.Hour)),
				{Namespace: "other", Name: "z", LeaseName: "l"}},
			checks: []check{{0, []string{"candidate-expired gone/y", "candidate-without-lease gone/x", "candidate-without-lease gone/y",
				"candidate-without-lease l/z"}}},
			without: []string{"ns/x", "ns/y", "other/z"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk.SetTime(start)
			for _, c := range tc.checks {
				clk.Step(c.step)
				inv := InventoryLeases(tc.leases, tc.candidates, clk.Now())
				var got []string
				for _, f := range inv.Findings {
					got = append(got, string(f.Kind)+" "+f.Lease+"/"+f.Candidate)
					if f.Message == "" || f.Namespace == "" {
						t.Errorf("finding %+v: no message or namespace", f)
					}
				}
				if diff := cmp.Diff(c.kinds, got); diff != "" {
					t.Errorf("after %s: findings (-want +got):\n%s", clk.Since(start), diff)
				}
				byLease := map[LeaseKey][]string{}
				for k, cs := range inv.Candidates {
					for _, c := range cs {
						byLease[k] = append(byLease[k], c.Name)
					}
				}
				if tc.byLease != nil {
					if diff := cmp.Diff(tc.byLease, byLease); diff != "" {
						t.Errorf("candidates by Lease (-want +got):\n%s", diff)
					}
				}
				var without []string
				for _, c := range inv.WithoutLease {
					without = append(without, c.Namespace+"/"+c.Name)
				}
				if diff := cmp.Diff(tc.without, without); diff != "" {
					t.Errorf("candidates without a Lease (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestLeaseFindingMessages: the messages say who, how long and why, in
// words.
func TestLeaseFindingMessages(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { return new(now.Add(d)) }
	leases := []LeaseFacts{
		{Lease: api.Lease{Namespace: "ns", Name: "kcm", HolderIdentity: new("kcm-a"), PreferredHolder: new("kcm-b"), Strategy: new("OldestEmulationVersion"),
			LeaseDurationSeconds: new(int32(15))}, HolderSince: at(-time.Hour), PreferredSince: at(-3*time.Minute - 10*time.Second)},
		{Lease: api.Lease{Namespace: "ns", Name: "sched", Strategy: new("OldestEmulationVersion")}},
	}
	candidates := []api.LeaseCandidate{
		{Namespace: "ns", Name: "kcm-b", LeaseName: "kcm", RenewTime: at(-time.Minute)},
		{Namespace: "ns", Name: "sched-a", LeaseName: "sched", RenewTime: at(-42 * time.Minute), Expired: true},
		{Namespace: "ns", Name: "sched-b", LeaseName: "sched", Expired: true},
		{Namespace: "ns", Name: "x", LeaseName: "gone", RenewTime: at(-time.Minute)},
	}
	var got []string
	for _, f := range InventoryLeases(leases, candidates, now).Findings {
		got = append(got, f.Message)
	}
	want := []string{
		"Candidate x stands for Lease gone, which does not exist in namespace ns.",
		"kcm-a holds the Lease, but the election prefers kcm-b, for 3m: longer than two lease durations (30s).",
		"Candidate sched-a last renewed 42m ago, more than 30m ago. The election passes it over, and a LeaseCandidate collector deletes it.",
		"Candidate sched-b never renewed. The election passes it over, and a LeaseCandidate collector deletes it.",
		"The Lease follows strategy OldestEmulationVersion, but all its 2 candidates have expired: no election can name its holder.",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}

func TestLeaseFactsOf(t *testing.T) {
	base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	at := func(s int) *time.Time { return new(base.Add(time.Duration(s) * time.Second)) }
	row := func(event api.HistoryEvent, holder, preferred string, seen int, since *time.Time) db.HistoryEntry {
		return db.HistoryEntry{Event: event, Holder: &holder, PreferredHolder: &preferred, Time: *at(seen), HolderSince: since}
	}
	lease := func(holder, preferred string, acquired *time.Time) api.Lease {
		return api.Lease{HolderIdentity: &holder, PreferredHolder: &preferred, AcquireTime: acquired}
	}
	for _, tc := range []struct {
		name                   string
		lease                  api.Lease
		rows                   []db.HistoryEntry
		holderSince, preferred *time.Time
	}{
		{"no history: the acquireTime", lease("a", "b", at(5)), nil, at(5), nil},
		{"no history, no acquireTime", lease("a", "b", nil), nil, nil, nil},
		{"the holder's acquireTime when history saw it take the Lease", lease("a", "", at(50)),
			[]db.HistoryEntry{row(api.HistoryCreated, "a", "", 10, at(3))}, at(3), nil},
		{"else when history saw it", lease("a", "", nil),
			[]db.HistoryEntry{row(api.HistoryCreated, "z", "", 1, nil), row(api.HistoryHolderChanged, "a", "", 10, nil)}, at(10), nil},
		{"the preferred holder since its first row of the last run; the holder since it took the Lease back", lease("a", "b", nil),
			[]db.HistoryEntry{row(api.HistoryCreated, "a", "b", 1, nil), row(api.HistoryPreferredHolderChanged, "a", "c", 10, nil),
				row(api.HistoryPreferredHolderChanged, "a", "b", 20, nil), row(api.HistoryHolderChanged, "a", "b", 30, nil)},
			at(30), at(20)},
		{"the last row names another preferred holder: undated", lease("a", "b", nil),
			[]db.HistoryEntry{row(api.HistoryCreated, "a", "b", 1, nil), row(api.HistoryPreferredHolderChanged, "a", "c", 10, nil)}, at(1), nil},
		{"rows written before history kept the preferred holder: undated", lease("a", "b", nil),
			[]db.HistoryEntry{{Event: api.HistoryCreated, Holder: new("a"), Time: *at(1)}}, at(1), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			changes, _ := LeaseTimeline(tc.rows, tc.lease)
			f := LeaseFactsOf(tc.lease, tc.rows, changes)
			if diff := cmp.Diff(tc.holderSince, f.HolderSince); diff != "" {
				t.Errorf("holder since (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.preferred, f.PreferredSince); diff != "" {
				t.Errorf("preferred since (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPreferredElsewhere(t *testing.T) {
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		holder, preferred *string
		want              bool
	}{
		{nil, nil, false},
		{s("a"), nil, false},
		{s("a"), s(""), false},
		{s("a"), s("a"), false},
		{s("a"), s("b"), true},
		{nil, s("b"), true},
		{s(""), s("b"), true},
	} {
		if got := PreferredElsewhere(tc.holder, tc.preferred); got != tc.want {
			t.Errorf("PreferredElsewhere(%v, %v) = %v, want %v", tc.holder, tc.preferred, got, tc.want)
		}
	}
}
