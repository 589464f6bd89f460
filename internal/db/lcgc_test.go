package db

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// lcgcFixture mirrors objs as LeaseCandidates of coordination.k8s.io/v1beta1.
func lcgcFixture(t testing.TB, d *DB, objs []*Object) {
	t.Helper()
	ctx := context.Background()
	rid, err := d.Mirror().EnsureResource(ctx, Resource{Group: "coordination.k8s.io", Version: "v1beta1", Resource: "leasecandidates",
		Kind: "LeaseCandidate", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(objs); i += 500 {
		if _, err := d.Mirror().ApplyWatchEvents(ctx, rid, "1", eventsOf(rid, objs[i:min(i+500, len(objs))]...)); err != nil {
			t.Fatal(err)
		}
	}
}

// leaseCandidate is a LeaseCandidate of namespace ns renewed at renew
// (never when nil), being deleted when deleting.
func leaseCandidate(ns, name string, renew *time.Time, deleting bool) *Object {
	o := &Object{UID: ns + "/" + name, APIVersion: "coordination.k8s.io/v1beta1", Kind: "LeaseCandidate", Namespace: ns, Name: name,
		ResourceVersion: "1", LeaseCandidate: &LeaseCandidate{LeaseName: "lease", BinaryVersion: "1.36.0", EmulationVersion: "1.36.0",
			Strategy: "OldestEmulationVersion", RenewTime: renew}}
	if deleting {
		o.DeletionTimestamp = renew
	}
	return o
}

// TestExpiredLeaseCandidates: the candidates renewed never or before the
// cutoff, and not being deleted, by namespace and name; one renewed at
// the cutoff itself is not expired.
func TestExpiredLeaseCandidates(t *testing.T) {
	d := openTemp(t)
	cutoff := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { t := cutoff.Add(d); return &t }
	lcgcFixture(t, d, []*Object{
		leaseCandidate("a", "fresh", at(time.Minute), false),
		leaseCandidate("a", "at-cutoff", at(0), false),
		leaseCandidate("a", "just-before", at(-time.Microsecond), false),
		leaseCandidate("b", "old", at(-time.Hour), false),
		leaseCandidate("a", "never", nil, false),
		leaseCandidate("a", "old-deleting", at(-time.Hour), true),
	})
	got, err := d.LCGC().ExpiredLeaseCandidates(context.Background(), cutoff)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range got {
		names = append(names, r.Namespace+"/"+r.Name)
	}
	if want := []string{"a/just-before", "a/never", "b/old"}; !slices.Equal(names, want) {
		t.Errorf("expired candidates %v, want %v", names, want)
	}
	if len(got) == 3 && (got[2].UID != "b/old" || got[2].ResourceVersion != "1" || got[2].LeaseName != "lease" ||
		got[2].RenewTime == nil || !got[2].RenewTime.Equal(cutoff.Add(-time.Hour))) {
		t.Errorf("b/old read as %+v", got[2])
	}
}

// TestExpiredLeaseCandidatesPlan keeps the collector's query on the
// renew_time index: it must not scan every candidate, nor every object.
func TestExpiredLeaseCandidatesPlan(t *testing.T) {
	d := openTemp(t)
	lcgcFixture(t, d, nil)
	rows, err := d.read.QueryContext(context.Background(), `EXPLAIN QUERY PLAN SELECT o.uid FROM lease_candidates c JOIN objects o ON o.uid = c.uid
		WHERE `+expiredCandidates, "2026-01-01T00:00:00.000000Z")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	joined := strings.Join(plan, "\n")
	if !strings.Contains(joined, "lease_candidates_renew_time (renew_time<?)") ||
		!strings.Contains(joined, "lease_candidates_renew_time (renew_time=?)") {
		t.Errorf("the query does not search the renew_time index for both terms; plan:\n%s", joined)
	}
	for _, p := range plan {
		if strings.HasPrefix(p, "SCAN c") || strings.HasPrefix(p, "SCAN o") {
			t.Errorf("the query scans a table; plan:\n%s", joined)
		}
	}
}

// BenchmarkExpiredLeaseCandidates is the SQL part of one lcgc pass over a
// mirror of 10,000 LeaseCandidates: none expired (a healthy cluster),
// a tenth expired, and every one expired.
func BenchmarkExpiredLeaseCandidates(b *testing.B) {
	const n = 10000
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cutoff := now.Add(-30 * time.Minute)
	for _, bc := range []struct {
		name    string
		expired int
	}{{"none", 0}, {"tenth", n / 10}, {"all", n}} {
		b.Run(bc.name, func(b *testing.B) {
			d, err := Open(context.Background(), b.TempDir()+"/bench.db", Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { d.Close() })
			objs := make([]*Object, n)
			for i := range objs {
				renew := now.Add(-time.Duration(i%600) * time.Second)
				if i < bc.expired {
					renew = cutoff.Add(-time.Duration(i+1) * time.Second)
				}
				objs[i] = leaseCandidate(fmt.Sprintf("ns-%03d", i%100), fmt.Sprintf("candidate-%05d", i), &renew, false)
			}
			lcgcFixture(b, d, objs)
			ctx := context.Background()
			for b.Loop() {
				got, err := d.LCGC().ExpiredLeaseCandidates(ctx, cutoff)
				if err != nil {
					b.Fatal(err)
				}
				if len(got) != bc.expired {
					b.Fatalf("%d expired, want %d", len(got), bc.expired)
				}
			}
		})
	}
}
