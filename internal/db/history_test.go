package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/golang-migrate/migrate/v4"
	"github.com/google/go-cmp/cmp"
	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/testutil"
)

// historyClock sets d's clock to the returned pointer's time.
func historyClock(d *DB) *time.Time {
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	d.Now = func() time.Time { return now }
	return &now
}

// eventLine is one history row in short: "time event owners finalizers
// deleting".
func eventLines(t *testing.T, d *DB, uid string) []string {
	t.Helper()
	h, err := d.History().HistoryOf(context.Background(), uid)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range h {
		var owners []string
		for _, r := range e.OwnerReferences {
			owners = append(owners, r.UID)
		}
		line := e.Time.Format("15:04") + " " + string(e.Event) + " [" + strings.Join(owners, ",") + "] [" + strings.Join(e.Finalizers, ",") + "]"
		if e.DeletionTimestamp != nil {
			line += " deleting"
		}
		out = append(out, line)
	}
	return out
}

func cmWith(uid, rv string, owners ...string) *Object {
	o := &Object{UID: uid, APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: uid, ResourceVersion: rv}
	for _, u := range owners {
		o.OwnerReferences = append(o.OwnerReferences, api.OwnerRef{APIVersion: "v1", Kind: "ConfigMap", Name: u, UID: u})
	}
	return o
}

// TestHistoryLifecycle follows one object through list, relist and watch
// events: only appearing, ownership changes and going write rows.
func TestHistoryLifecycle(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	now := historyClock(d)
	rid, err := d.Mirror().EnsureResource(ctx, Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	list := func(objs ...*Object) { listAll(t, d, rid, objs...) }
	apply := func(evs ...Event) {
		t.Helper()
		if _, err := d.Mirror().ApplyEvents(ctx, evs); err != nil {
			t.Fatal(err)
		}
	}
	// The mirror's owner_refs rows, which an update keeping its owners
	// does not rewrite.
	mirroredOwners := func(want ...string) {
		t.Helper()
		o, err := d.Objects().GetObject(ctx, "x")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range o.OwnerReferences {
			got = append(got, r.UID)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("mirrored owners of x at %s (-want +got):\n%s", now.Format("15:04"), diff)
		}
	}
	at := func(hhmm string) {
		t.Helper()
		tm, err := time.Parse("15:04", hhmm)
		if err != nil {
			t.Fatal(err)
		}
		*now = time.Date(2026, 3, 1, tm.Hour(), tm.Minute(), 0, 0, time.UTC)
	}

	at("10:00")
	list(cmWith("x", "1", "a"), cmWith("a", "1"))
	at("10:01")
	list(cmWith("x", "1", "a"), cmWith("a", "1")) // unchanged: nothing
	at("10:02")
	apply(Event{ResourceID: rid, Object: cmWith("x", "2", "a")}) // a label, say: nothing
	mirroredOwners("a")
	at("10:03")
	apply(Event{ResourceID: rid, Object: cmWith("x", "3", "a", "b")})
	mirroredOwners("a", "b")
	at("10:04")
	fin := cmWith("x", "4", "a", "b")
	fin.Finalizers = []string{"example.com/hold"}
	apply(Event{ResourceID: rid, Object: fin})
	mirroredOwners("a", "b")
	at("10:05")
	del := cmWith("x", "5", "b")
	del.Finalizers = []string{"example.com/hold", "foregroundDeletion"}
	del.DeletionTimestamp = now
	list(del, cmWith("a", "1")) // a relist sees what the watch missed
	mirroredOwners("b")
	at("10:06")
	apply(Event{ResourceID: rid, Deleted: true, Object: &Object{UID: "x"}})
	at("10:07")
	apply(Event{ResourceID: rid, Deleted: true, Object: &Object{UID: "x"}}) // a repeated delete: nothing

	want := []string{
		"10:00 created [a] []",
		"10:03 owners-changed [a,b] []",
		"10:04 finalizers-changed [a,b] [example.com/hold]",
		"10:05 owners-changed [b] [example.com/hold,foregroundDeletion] deleting",
		"10:05 finalizers-changed [b] [example.com/hold,foregroundDeletion] deleting",
		"10:05 deletion-requested [b] [example.com/hold,foregroundDeletion] deleting",
		"10:06 deleted [b] [example.com/hold,foregroundDeletion] deleting",
	}
	if diff := cmp.Diff(want, eventLines(t, d, "x")); diff != "" {
		t.Errorf("history of x (-want +got):\n%s", diff)
	}

	// A relist that no longer returns a, then a resource dropped with b.
	at("11:00")
	list()
	if diff := cmp.Diff([]string{"10:00 created [] []", "11:00 deleted [] []"}, eventLines(t, d, "a")); diff != "" {
		t.Errorf("history of a (-want +got):\n%s", diff)
	}
	apply(Event{ResourceID: rid, Object: cmWith("b", "1")})
	at("12:00")
	if _, err := d.Mirror().DeleteResource(ctx, rid); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"11:00 created [] []", "12:00 deleted [] []"}, eventLines(t, d, "b")); diff != "" {
		t.Errorf("history of b (-want +got):\n%s", diff)
	}
	if got := eventLines(t, d, "never"); len(got) != 0 {
		t.Errorf("history of an unknown uid: %v", got)
	}
}

// TestHistoryAt reads the neighbourhood of an object at several times:
// x owned by a, then by b, then deleted; b owned by root throughout.
func TestHistoryAt(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	now := historyClock(d)
	rid, err := d.Mirror().EnsureResource(ctx, Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	step := func(evs ...Event) time.Time {
		t.Helper()
		*now = now.Add(time.Minute)
		if _, err := d.Mirror().ApplyEvents(ctx, evs); err != nil {
			t.Fatal(err)
		}
		return *now
	}
	t0 := step(eventsOf(rid, cmWith("root", "1"), cmWith("a", "1"), cmWith("b", "1", "root"), cmWith("x", "1", "a"))...)
	t1 := step(eventsOf(rid, cmWith("x", "2", "b"))...)
	t2 := step(Event{ResourceID: rid, Deleted: true, Object: &Object{UID: "x"}})

	type snap struct {
		Closure, States []string
		Truncated       bool
	}
	summary := func(s *HistorySnapshot) snap {
		out := snap{Closure: s.Closure, Truncated: s.Truncated}
		for _, e := range s.States {
			out.States = append(out.States, e.UID+":"+string(e.Event))
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		uids  []string
		at    time.Time
		limit int
		want  snap
	}{
		{"before anything", []string{"x"}, t0.Add(-time.Second), 100, snap{Closure: []string{"x"}}},
		{"owned by a", []string{"x"}, t0, 100, snap{Closure: []string{"a", "x"}, States: []string{"a:created", "x:created"}}},
		{"owned by b", []string{"x"}, t1, 100,
			snap{Closure: []string{"b", "root", "x"}, States: []string{"b:created", "root:created", "x:owners-changed"}}},
		{"gone", []string{"x"}, t2, 100, snap{Closure: []string{"x"}}},
		{"a's dependents then", []string{"a"}, t0, 100, snap{Closure: []string{"a", "x"}, States: []string{"a:created", "x:created"}}},
		{"a's dependents later", []string{"a"}, t1, 100, snap{Closure: []string{"a"}, States: []string{"a:created"}}},
		{"root down two levels", []string{"root"}, t1, 100,
			snap{Closure: []string{"b", "root", "x"}, States: []string{"b:created", "root:created", "x:owners-changed"}}},
		{"limit", []string{"root"}, t1, 1, snap{Closure: []string{"b", "root"}, States: []string{"b:created", "root:created"}, Truncated: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := d.History().HistoryAt(ctx, tc.uids, tc.at, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, summary(s)); diff != "" {
				t.Errorf("HistoryAt (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := d.History().HistoryAt(ctx, []string{"nobody"}, t2, 100); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown uid: err %v, want ErrNotFound", err)
	}
}

// TestPruneHistory keeps each object's state at the cutoff and drops the
// objects gone before it.
func TestPruneHistory(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	now := historyClock(d)
	rid, err := d.Mirror().EnsureResource(ctx, Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	at := func(h int, evs ...Event) {
		t.Helper()
		*now = time.Date(2026, 3, 1, h, 0, 0, 0, time.UTC)
		if _, err := d.Mirror().ApplyEvents(ctx, evs); err != nil {
			t.Fatal(err)
		}
	}
	gone := Event{ResourceID: rid, Deleted: true, Object: &Object{UID: "old-gone"}}
	at(1, eventsOf(rid, cmWith("old-gone", "1", "o"), cmWith("old-live", "1", "o"), cmWith("recent-gone", "1", "o"))...)
	at(2, append(eventsOf(rid, cmWith("old-live", "2", "o", "p")), gone)...)
	at(5, eventsOf(rid, cmWith("old-live", "3", "p"))...)
	at(6, Event{ResourceID: rid, Deleted: true, Object: &Object{UID: "recent-gone"}})

	n, err := d.History().PruneHistory(ctx, time.Date(2026, 3, 1, 4, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("pruned %d rows, want 3 (old-gone's two, old-live's first)", n)
	}
	for uid, want := range map[string][]string{
		"old-gone":    nil,
		"old-live":    {"02:00 owners-changed [o,p] []", "05:00 owners-changed [p] []"},
		"recent-gone": {"01:00 created [o] []", "06:00 deleted [o] []"},
	} {
		if diff := cmp.Diff(want, eventLines(t, d, uid)); diff != "" {
			t.Errorf("history of %s after pruning (-want +got):\n%s", uid, diff)
		}
	}
	pairs := testutil.StringRows(t, d.read, `SELECT owner_uid || '<-' || dependent_uid FROM history_owner_refs ORDER BY 1`)
	if diff := cmp.Diff([]string{"o<-old-live", "o<-recent-gone", "p<-old-live"}, pairs); diff != "" {
		t.Errorf("owner pairs after pruning (-want +got):\n%s", diff)
	}
}

// TestLeaseHolderHistory: renewals write nothing; a change of holder, a
// renewal after the lease ran out and a release each write a row, with
// the lapse only where a watch saw both sides of it.
func TestLeaseHolderHistory(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	now := historyClock(d)
	rid, err := d.Mirror().EnsureResource(ctx, Resource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases", Kind: "Lease", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	base := *now
	sec := func(s int) *time.Time { return ptr(base.Add(time.Duration(s) * time.Second)) }
	rv := 0
	lease := func(holder string, acquire, renew int) *Object {
		rv++
		l := &Lease{LeaseDurationSeconds: ptr(int32(10)), AcquireTime: sec(acquire), RenewTime: sec(renew)}
		if holder != "" {
			l.HolderIdentity = &holder
		}
		return &Object{UID: "l", APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Namespace: "ns", Name: "l",
			ResourceVersion: fmt.Sprint(rv), Lease: l}
	}
	watch := func(o *Object) {
		t.Helper()
		if _, err := d.Mirror().ApplyEvents(ctx, eventsOf(rid, o)); err != nil {
			t.Fatal(err)
		}
	}
	list := func(o *Object) {
		t.Helper()
		epoch, err := d.Mirror().BeginList(ctx, rid)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Mirror().WriteListPage(ctx, rid, epoch, []*Object{o}); err != nil {
			t.Fatal(err)
		}
	}
	list(lease("a", 0, 0))
	watch(lease("a", 0, 5))    // renewed in time: nothing
	watch(lease("a", 0, 30))   // renewed after it ran out at 15: lapsed 15..30
	watch(lease("b", 50, 50))  // taken over after a's ran out at 40: lapsed 40..50
	list(lease("c", 100, 100)) // after a gap in what kubegcd saw: no lapse claimed
	watch(lease("", 100, 105)) // released
	watch(lease("d", 120, 120))

	rows, err := d.History().LeaseHolderHistory(ctx, []string{"l", "other"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows["l"] {
		line := string(r.Event) + " " + *r.Holder + " since " + r.HolderSince.Sub(base).String()
		if r.LapsedAt != nil {
			line += " lapsed " + r.LapsedAt.Sub(base).String()
		}
		got = append(got, line)
	}
	want := []string{
		"created a since 0s",
		"holder-changed a since 30s lapsed 15s",
		"holder-changed b since 50s lapsed 40s",
		"holder-changed c since 1m40s",
		"holder-changed  since 1m45s",
		"holder-changed d since 2m0s",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lease holder history (-want +got):\n%s", diff)
	}
	if len(rows) != 1 {
		t.Errorf("history for %d leases, want only l's", len(rows))
	}

	// The whole history, renewals aside, in one read: HistoriesOf.
	all, err := d.History().HistoriesOf(ctx, []string{"l", "other"})
	if err != nil {
		t.Fatal(err)
	}
	one, err := d.History().HistoryOf(ctx, "l")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]HistoryEntry{"l": one}, all); diff != "" || len(one) < len(want) {
		t.Errorf("HistoriesOf (-HistoryOf +got), %d rows:\n%s", len(one), diff)
	}
	if none, err := d.History().HistoriesOf(ctx, nil); err != nil || len(none) != 0 {
		t.Errorf("HistoriesOf(nil) = %v, %v; want an empty map", none, err)
	}
}

// TestHistoryOwnerRefsStored pins the JSON that object_history keeps of a
// row's ownerReferences (an unset flag absent), and that it reads back:
// rows written before an API change must still read.
func TestHistoryOwnerRefsStored(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	historyClock(d)
	rid, err := d.Mirror().EnsureResource(ctx, Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	yes, no := true, false
	refs := []api.OwnerRef{
		{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", UID: "u-1", Controller: &yes, BlockOwnerDeletion: &no},
		{APIVersion: "v1", Kind: "ConfigMap", Name: "c", UID: "u-2"},
	}
	o := &Object{UID: "dep", APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: "dep", ResourceVersion: "1", OwnerReferences: refs}
	if _, err := d.Mirror().ApplyEvents(ctx, []Event{{ResourceID: rid, Object: o}}); err != nil {
		t.Fatal(err)
	}
	var stored string
	if err := d.read.QueryRowContext(ctx, `SELECT owner_refs FROM object_history WHERE uid = 'dep'`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	const want = `[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-1","uid":"u-1","controller":true,"blockOwnerDeletion":false},` +
		`{"apiVersion":"v1","kind":"ConfigMap","name":"c","uid":"u-2"}]`
	if stored != want {
		t.Fatalf("stored %s, want %s", stored, want)
	}
	h, err := d.History().HistoryOf(ctx, "dep")
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 1 || !cmp.Equal(h[0].OwnerReferences, refs) {
		t.Errorf("read back %+v, want %+v", h, refs)
	}
}

// TestLeasePreferredHolderHistory: a change of a Lease's preferred holder
// writes a preferred-holder-changed row; every row of the Lease, its
// deletion included, carries the preferred holder after it; renewals and
// other kinds write no preferred holder.
func TestLeasePreferredHolderHistory(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	now := historyClock(d)
	rid, err := d.Mirror().EnsureResource(ctx, Resource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases", Kind: "Lease", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	rv := 0
	lease := func(holder, preferred string, renew int) *Object {
		rv++
		l := &Lease{HolderIdentity: &holder, LeaseDurationSeconds: ptr(int32(15)), Strategy: ptr("OldestEmulationVersion"),
			RenewTime: ptr(now.Add(time.Duration(renew) * time.Second))}
		if preferred != "" {
			l.PreferredHolder = &preferred
		}
		return &Object{UID: "l", APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Namespace: "kube-system", Name: "l",
			ResourceVersion: fmt.Sprint(rv), Lease: l}
	}
	apply := func(ev Event) {
		t.Helper()
		*now = now.Add(time.Minute)
		if _, err := d.Mirror().ApplyEvents(ctx, []Event{ev}); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range []*Object{
		lease("a", "", 0),
		lease("a", "", 5),  // renewed: nothing
		lease("a", "b", 6), // the election controller prefers b
		lease("a", "b", 7), // renewed: nothing
		lease("b", "", 8),  // a handed over to b, which cleared it: two rows
		lease("b", "c", 9),
		lease("b", "d", 10),
	} {
		apply(Event{ResourceID: rid, Object: o})
	}
	apply(Event{ResourceID: rid, Deleted: true, Object: &Object{UID: "l"}})
	cm := cmWith("cm", "1")
	cmID, err := d.Mirror().EnsureResource(ctx, Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	apply(Event{ResourceID: cmID, Object: cm})

	line := func(e HistoryEntry) string {
		s := e.Time.Format("15:04") + " " + string(e.Event)
		for _, f := range []struct {
			name string
			v    *string
		}{{"holder", e.Holder}, {"preferred", e.PreferredHolder}} {
			if f.v != nil {
				s += " " + f.name + "=" + *f.v
			}
		}
		return s
	}
	var got []string
	for _, uid := range []string{"l", "cm"} {
		h, err := d.History().HistoryOf(ctx, uid)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range h {
			got = append(got, line(e))
		}
	}
	want := []string{
		"10:01 created holder=a preferred=",
		"10:03 preferred-holder-changed holder=a preferred=b",
		"10:05 holder-changed holder=b preferred=",
		"10:05 preferred-holder-changed holder=b preferred=",
		"10:06 preferred-holder-changed holder=b preferred=c",
		"10:07 preferred-holder-changed holder=b preferred=d",
		"10:08 deleted holder=b preferred=d",
		"10:09 created",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
}

// TestPreferredHolderMigration: migration 0017 leaves the history rows
// written before it without a preferred holder, which reads as none, and
// makes the next start list coordination.k8s.io again so that Leases and
// LeaseCandidates gain the fields kept since 0016. Other resources keep
// their resume points.
func TestPreferredHolderMigration(t *testing.T) {
	ctx := context.Background()
	path, m := emptyMigrate(t)
	if err := m.Migrate(16); err != nil {
		t.Fatal(err)
	}
	conn, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{
		`INSERT INTO resources (id, api_group, version, resource, kind, namespaced, resume_resource_version) VALUES
			(1, 'coordination.k8s.io', 'v1', 'leases', 'Lease', 1, '100'),
			(2, 'coordination.k8s.io', 'v1beta1', 'leasecandidates', 'LeaseCandidate', 1, '100'),
			(3, '', 'v1', 'configmaps', 'ConfigMap', 1, '100')`,
		`INSERT INTO objects (uid, resource_id, api_version, kind, namespace, name, resource_version) VALUES
			('l', 1, 'coordination.k8s.io/v1', 'Lease', 'ns', 'l', '7'),
			('c', 2, 'coordination.k8s.io/v1beta1', 'LeaseCandidate', 'ns', 'c', '8'),
			('cm', 3, 'v1', 'ConfigMap', 'ns', 'cm', '9')`,
		`INSERT INTO leases (uid, holder_identity) VALUES ('l', 'a')`,
		`INSERT INTO object_history (uid, time, event, api_version, kind, namespace, name, holder) VALUES
			('l', '2026-03-01T09:00:00.000000Z', 'created', 'coordination.k8s.io/v1', 'Lease', 'ns', 'l', 'a')`,
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := m.Migrate(17); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, q := range []string{
		`SELECT group_concat(resource || '@' || resume_resource_version, ' ') FROM (SELECT * FROM resources ORDER BY id)`,
		`SELECT group_concat(uid || '@' || resource_version, ' ') FROM (SELECT * FROM objects ORDER BY uid)`,
		`SELECT coalesce(preferred_holder, 'NULL') FROM object_history`,
	} {
		var s string
		if err := conn.QueryRowContext(ctx, q).Scan(&s); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		got = append(got, s)
	}
	want := []string{"leases@ leasecandidates@ configmaps@100", "c@ cm@9 l@", "NULL"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after 0017 (-want +got):\n%s", diff)
	}

	// The Lease's next write compares with that row: without a preferred
	// holder, nothing changed.
	if err := m.Migrate(LatestVersion()); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		t.Fatal(err)
	}
	conn.Close()
	m.Close()
	d, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	historyClock(d)
	lease := &Object{UID: "l", APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Namespace: "ns", Name: "l", ResourceVersion: "10",
		Lease: &Lease{HolderIdentity: ptr("a")}}
	if _, err := d.Mirror().ApplyEvents(ctx, []Event{{ResourceID: 1, Object: lease}}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"09:00 created [] []"}, eventLines(t, d, "l")); diff != "" {
		t.Errorf("history after a write without a preferred holder (-want +got):\n%s", diff)
	}
}

// TestRecordComparesWithMirror checks that a write finds the same changes
// whether it compares with the object's mirrored row or with its last
// history row. With the history rows removed before each write, only the
// mirrored row can tell an update from a creation. With owners_hash
// cleared, as in a row written before the column, only the history can.
func TestRecordComparesWithMirror(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	sec := func(s int) *time.Time { return ptr(base.Add(time.Duration(s) * time.Second)) }
	lease := func(rv int, holder string, renew int, owners ...string) *Object {
		o := cmWith("l", fmt.Sprint(rv), owners...)
		o.APIVersion, o.Kind = "coordination.k8s.io/v1", "Lease"
		o.Lease = &Lease{HolderIdentity: &holder, LeaseDurationSeconds: ptr(int32(10)), RenewTime: sec(renew)}
		return o
	}
	withFinalizers := func(o *Object, f ...string) *Object { o.Finalizers = f; return o }
	deleting := func(o *Object) *Object { o.DeletionTimestamp = sec(1); return o }
	steps := []struct {
		name string
		obj  *Object
		want string // the events the write records
	}{
		{"a status", cmWith("c", "2", "a"), ""},
		{"another owner", cmWith("c", "3", "b"), "owners-changed"},
		{"owners dropped", cmWith("c", "4"), "owners-changed"},
		{"a finalizer", withFinalizers(cmWith("c", "5"), "f"), "finalizers-changed"},
		{"deletion", deleting(withFinalizers(cmWith("c", "6"), "f")), "deletion-requested"},
		{"renewed in time", lease(2, "h", 5, "n"), ""},
		{"renewed after it ran out", lease(3, "h", 30, "n"), "holder-changed"},
		{"another holder", lease(4, "i", 31, "n"), "holder-changed"},
		{"another owner of the lease", lease(5, "i", 32, "m"), "owners-changed"},
	}
	for _, source := range []string{"mirror", "history"} {
		t.Run(source, func(t *testing.T) {
			d := openTemp(t)
			cms, err := d.Mirror().EnsureResource(ctx, Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap",
				Namespaced: true})
			if err != nil {
				t.Fatal(err)
			}
			leases, err := d.Mirror().EnsureResource(ctx, Resource{Group: "coordination.k8s.io", Version: "v1",
				Resource: "leases", Kind: "Lease", Namespaced: true})
			if err != nil {
				t.Fatal(err)
			}
			ridOf := func(o *Object) int64 {
				if o.Lease != nil {
					return leases
				}
				return cms
			}
			apply := func(o *Object) string {
				t.Helper()
				switch source {
				case "mirror":
					if _, err := d.write.ExecContext(ctx, `DELETE FROM object_history WHERE uid = ?`, o.UID); err != nil {
						t.Fatal(err)
					}
				case "history":
					if _, err := d.write.ExecContext(ctx, `UPDATE objects SET owners_hash = NULL WHERE uid = ?`,
						o.UID); err != nil {
						t.Fatal(err)
					}
				}
				// After the delete: ids are not AUTOINCREMENT, and are taken
				// again once the last rows are gone.
				var before int64
				if err := d.write.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM object_history`).Scan(
					&before); err != nil {
					t.Fatal(err)
				}
				if _, err := d.Mirror().ApplyEvents(ctx, eventsOf(ridOf(o), o)); err != nil {
					t.Fatal(err)
				}
				return strings.Join(testutil.StringRows(t, d.write,
					`SELECT event FROM object_history WHERE uid = ? AND id > ? ORDER BY id`, o.UID, before), ",")
			}
			for _, o := range []*Object{cmWith("c", "1", "a"), lease(1, "h", 0, "n")} {
				if got := apply(o); got != "created" {
					t.Fatalf("first write of %s recorded %q, want created", o.UID, got)
				}
			}
			for _, s := range steps {
				if got := apply(s.obj); got != s.want {
					t.Errorf("%s: recorded %q, want %q", s.name, got, s.want)
				}
			}
		})
	}
}
