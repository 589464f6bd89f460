package db

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kubegcd/kubegcd/internal/testutil"
)

// extractedTables are the tables of the extracted rows.
var extractedTables = []string{"refs", "object_labels", "object_annotations", "jobs", "cronjobs", "secrets", "pvcs",
	"workloads"}

// countWrites makes triggers count every row written to the extracted
// tables, in the table writes (tbl, op). The triggers are the database's,
// so they see the writer's own statements.
func countWrites(t *testing.T, d *DB) (take func() []string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("CREATE TABLE writes (n INTEGER PRIMARY KEY, tbl TEXT, op TEXT);\n")
	for _, tbl := range extractedTables {
		for _, op := range []string{"INSERT", "UPDATE", "DELETE"} {
			b.WriteString("CREATE TRIGGER count_" + tbl + "_" + op + " AFTER " + op + " ON " + tbl +
				" BEGIN INSERT INTO writes (tbl, op) VALUES ('" + tbl + "', '" + op + "'); END;\n")
		}
	}
	if err := d.inWriteTx(context.Background(), opResource, func(tx *sql.Tx) error {
		_, err := tx.Exec(b.String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return func() []string {
		t.Helper()
		var out []string
		if err := d.inWriteTx(context.Background(), opResource, func(tx *sql.Tx) error {
			out = nil
			if err := eachString(context.Background(), tx, `SELECT op || ' ' || tbl FROM writes ORDER BY n`,
				func(s string) { out = append(out, s) }); err != nil {
				return err
			}
			_, err := tx.Exec(`DELETE FROM writes`)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
}

func openPods(t *testing.T) (*DB, int64) {
	t.Helper()
	d := openTemp(t)
	rid, err := d.Mirror().EnsureResource(context.Background(), Resource{Version: "v1", Resource: "pods", Kind: "Pod",
		Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	return d, rid
}

// podWith is a Pod that references a ConfigMap of each name, with a kept
// label.
func podWith(uid, rv string, configMaps ...string) *Object {
	o := &Object{UID: uid, APIVersion: "v1", Kind: "Pod", Namespace: "ns", Name: uid, ResourceVersion: rv,
		Pod:    &Pod{Phase: "Pending"},
		Labels: []KeyValue{{"kubegcd.io/keep", "true"}}}
	for _, cm := range configMaps {
		o.Refs = append(o.Refs, Ref{Kind: "ConfigMap", Namespace: "ns", Name: cm, Via: "spec.volumes[].configMap"})
	}
	return o
}

func apply(t *testing.T, d *DB, evs ...Event) {
	t.Helper()
	if _, err := d.Mirror().ApplyEvents(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
}

// TestExtractedRowsWrittenOnlyWhenChanged: the extracted rows are written
// with their object, and an update that changes none of them (a Pod's
// status, a deletion requested, a relist) writes none of them.
func TestExtractedRowsWrittenOnlyWhenChanged(t *testing.T) {
	ctx := context.Background()
	d, rid := openPods(t)
	take := countWrites(t, d)
	now := time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)

	pod := podWith("p", "1", "a", "b")
	apply(t, d, eventsOf(rid, pod)...)
	want := []string{"INSERT refs", "INSERT refs", "INSERT object_labels"}
	if diff := cmp.Diff(want, take()); diff != "" {
		t.Errorf("first write (-want +got):\n%s", diff)
	}

	steps := []struct {
		name   string
		change func(o *Object)
		want   []string
	}{
		{"status only", func(o *Object) { o.Pod.Phase = "Running" }, nil},
		{"deletion requested", func(o *Object) { o.DeletionTimestamp = &now }, nil},
		{"a reference dropped and one added", func(o *Object) {
			o.Refs = []Ref{o.Refs[0], {Kind: "Secret", Namespace: "ns", Name: "s", Via: "spec.volumes[].secret"}}
		}, []string{"DELETE refs", "INSERT refs", "DELETE object_labels", "INSERT object_labels"}},
		{"a reference made optional", func(o *Object) { o.Refs[1].Optional = true },
			[]string{"UPDATE refs", "DELETE object_labels", "INSERT object_labels"}},
		{"a label changed", func(o *Object) { o.Labels[0].Value = "false" },
			[]string{"DELETE object_labels", "INSERT object_labels"}},
		{"every extracted row dropped", func(o *Object) { o.Refs, o.Labels = nil, nil },
			[]string{"DELETE refs", "DELETE refs", "DELETE object_labels"}},
	}
	for i, s := range steps {
		pod.ResourceVersion = string(rune('2' + i))
		s.change(pod)
		apply(t, d, eventsOf(rid, pod)...)
		if diff := cmp.Diff(s.want, take()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", s.name, diff)
		}
	}

	// A relist of an unchanged object, then of one whose references
	// changed while kubegcd was away.
	pod = podWith("p", "9", "a")
	listAll(t, d, rid, pod)
	take()
	listAll(t, d, rid, pod)
	if got := take(); len(got) != 0 {
		t.Errorf("unchanged relist wrote %v", got)
	}
	pod.ResourceVersion = "10"
	pod.Pod.Phase = "Running"
	listAll(t, d, rid, pod)
	if got := take(); len(got) != 0 {
		t.Errorf("relist of a status change wrote %v", got)
	}
	pod = podWith("p", "11", "c")
	listAll(t, d, rid, pod)
	if diff := cmp.Diff([]string{"DELETE refs", "INSERT refs", "DELETE object_labels", "INSERT object_labels"},
		take()); diff != "" {
		t.Errorf("relist of changed references (-want +got):\n%s", diff)
	}
	if got := refsOf(t, d, "p"); !cmp.Equal(got, []string{"ConfigMap ns/c spec.volumes[].configMap"}) {
		t.Errorf("refs after relist = %v", got)
	}

	// The deletion takes every extracted row with it.
	apply(t, d, Event{ResourceID: rid, Deleted: true, Object: &Object{UID: "p"}})
	if diff := cmp.Diff([]string{"DELETE object_labels", "DELETE refs"}, slices.Sorted(slices.Values(take()))); diff != "" {
		t.Errorf("deletion (-want +got):\n%s", diff)
	}
	if _, err := d.Objects().GetObject(ctx, "p"); err == nil {
		t.Error("the pod is still mirrored")
	}
}

func refsOf(t *testing.T, d *DB, uid string) []string {
	t.Helper()
	var out []string
	if err := eachString(context.Background(), d.read, `SELECT target_kind || ' ' || target_namespace || '/' ||
			target_name || ' ' || via || CASE WHEN optional THEN ' optional' ELSE '' END ||
			CASE WHEN prefix THEN ' prefix' ELSE '' END
		FROM refs WHERE referrer_uid = ? ORDER BY 1`, func(s string) { out = append(out, s) }, uid); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTypedFieldsOfTheRules: jobs, cronjobs, secrets, pvcs and workloads
// hold what the objects carried, and follow a change.
func TestTypedFieldsOfTheRules(t *testing.T) {
	d := openTemp(t)
	ctx := context.Background()
	rid, err := d.Mirror().EnsureResource(ctx, Resource{Group: "batch", Version: "v1", Resource: "jobs", Kind: "Job",
		Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	finished := time.Date(2026, 11, 24, 1, 2, 3, 456789000, time.UTC)
	ttl, three, one, replicas := int32(60), int32(3), int32(1), int32(0)
	obj := func(uid, kind string) *Object {
		return &Object{UID: uid, APIVersion: "v1", Kind: kind, Namespace: "ns", Name: uid, ResourceVersion: "1"}
	}
	job := obj("job", "Job")
	job.Job = &Job{Complete: true, FinishedAt: &finished, TTLSecondsAfterFinished: &ttl}
	cron := obj("cron", "CronJob")
	cron.CronJob = &CronJob{SuccessfulJobsHistoryLimit: &three, FailedJobsHistoryLimit: &one, Suspend: true}
	secret := obj("secret", "Secret")
	secret.Secret = &Secret{Type: "kubernetes.io/tls"}
	pvc := obj("pvc", "PersistentVolumeClaim")
	pvc.PVC = &PVC{Phase: "Bound", VolumeName: "pv-1"}
	deploy := obj("deploy", "Deployment")
	deploy.Workload = &Workload{Replicas: &replicas}
	apply(t, d, eventsOf(rid, job, cron, secret, pvc, deploy)...)

	read := func() []string {
		var out []string
		for _, q := range []string{
			`SELECT 'job ' || complete || ' ' || failed || ' ' || coalesce(finished_at, '-') || ' ' ||
				coalesce(ttl_seconds_after_finished, '-') FROM jobs`,
			`SELECT 'cronjob ' || coalesce(successful_jobs_history_limit, '-') || ' ' ||
				coalesce(failed_jobs_history_limit, '-') || ' ' || suspend FROM cronjobs`,
			`SELECT 'secret ' || type FROM secrets`,
			`SELECT 'pvc ' || phase || ' ' || volume_name FROM pvcs`,
			`SELECT 'workload ' || coalesce(replicas, '-') FROM workloads`,
		} {
			if err := eachString(ctx, d.read, q, func(s string) { out = append(out, s) }); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	want := []string{"job 1 0 2026-11-24T01:02:03.456789Z 60", "cronjob 3 1 1", "secret kubernetes.io/tls",
		"pvc Bound pv-1", "workload 0"}
	if diff := cmp.Diff(want, read()); diff != "" {
		t.Errorf("typed rows (-want +got):\n%s", diff)
	}

	job.ResourceVersion, job.Job = "2", &Job{Failed: true, FinishedAt: &finished}
	cron.ResourceVersion, cron.CronJob = "2", &CronJob{}
	pvc.ResourceVersion, pvc.PVC = "2", &PVC{Phase: "Lost"}
	deploy.ResourceVersion, deploy.Workload = "2", &Workload{}
	apply(t, d, eventsOf(rid, job, cron, pvc, deploy)...)
	want = []string{"job 0 1 2026-11-24T01:02:03.456789Z -", "cronjob - - 0", "secret kubernetes.io/tls",
		"pvc Lost ", "workload -"}
	if diff := cmp.Diff(want, read()); diff != "" {
		t.Errorf("typed rows after a change (-want +got):\n%s", diff)
	}
}

// refHistory reads ref_history's row of the ConfigMap ns/name.
func refHistory(t *testing.T, d *DB, name string) (first, last string) {
	t.Helper()
	if err := d.read.QueryRow(`SELECT first_referenced, last_referenced FROM ref_history
		WHERE target_kind = 'ConfigMap' AND target_namespace = 'ns' AND target_name = ?`, name).Scan(&first,
		&last); err != nil {
		t.Fatalf("ref_history of %s: %v", name, err)
	}
	return first, last
}

// sqliteNow is SQLite's clock as ref_history's triggers read it.
func sqliteNow(t *testing.T, d *DB) string {
	t.Helper()
	var now string
	if err := d.read.QueryRow(`SELECT strftime('%Y-%m-%dT%H:%M:%f000Z', 'now')`).Scan(&now); err != nil {
		t.Fatal(err)
	}
	return now
}

// after waits until SQLite's clock has passed ts, so that a time the
// triggers write next is later than ts.
func after(t *testing.T, d *DB, ts string) string {
	t.Helper()
	var now string
	testutil.Eventually(t, time.Second, func() error {
		if now = sqliteNow(t, d); now <= ts {
			return errNotYet
		}
		return nil
	})
	return now
}

var errNotYet = errors.New("SQLite's clock has not moved on yet")

// TestRefHistoryOutlivesTheReference: ref_history keeps when a target was
// first and last referenced, across an update that drops a reference, an
// update that keeps one, and the deletion of the referrer.
func TestRefHistoryOutlivesTheReference(t *testing.T) {
	d, rid := openPods(t)
	start := sqliteNow(t, d)
	apply(t, d, eventsOf(rid, podWith("p", "1", "kept", "dropped"))...)
	keptFirst, keptLast := refHistory(t, d, "kept")
	droppedFirst, _ := refHistory(t, d, "dropped")
	// Each reference's row is written by its own statement, so SQLite's
	// clock may move on between the two.
	if keptFirst < start || keptLast != keptFirst || droppedFirst < start {
		t.Fatalf("after the first write: kept %s–%s, dropped from %s; want both from %s on", keptFirst, keptLast,
			droppedFirst, start)
	}

	dropAt := after(t, d, keptLast)
	apply(t, d, eventsOf(rid, podWith("p", "2", "kept"))...)
	if first, last := refHistory(t, d, "dropped"); first != droppedFirst || last < dropAt {
		t.Errorf("dropped: %s–%s, want %s and a last time from %s on", first, last, droppedFirst, dropAt)
	}
	if first, last := refHistory(t, d, "kept"); first != keptFirst || last != keptLast {
		t.Errorf("kept across an update that kept it: %s–%s, want %s–%s", first, last, keptFirst, keptLast)
	}

	deleteAt := after(t, d, sqliteNow(t, d))
	apply(t, d, Event{ResourceID: rid, Deleted: true, Object: &Object{UID: "p"}})
	if first, last := refHistory(t, d, "kept"); first != keptFirst || last < deleteAt {
		t.Errorf("kept after its referrer's deletion: %s–%s, want %s and a last time from %s on", first, last,
			keptFirst, deleteAt)
	}
	if got := refsOf(t, d, "p"); len(got) != 0 {
		t.Errorf("references left after the referrer's deletion: %v", got)
	}

	// A relist's sweep counts as a deletion too.
	apply(t, d, eventsOf(rid, podWith("q", "3", "kept"))...)
	sweepAt := after(t, d, sqliteNow(t, d))
	listAll(t, d, rid)
	if _, last := refHistory(t, d, "kept"); last < sweepAt {
		t.Errorf("kept after a relist swept its referrer: last %s, want from %s on", last, sweepAt)
	}
}

// firstSynced reads a resource's first_synced_at and resume point.
func firstSynced(t *testing.T, d *DB, rid int64) (sql.NullString, string) {
	t.Helper()
	var first sql.NullString
	var resume string
	if err := d.read.QueryRow(`SELECT first_synced_at, resume_resource_version FROM resources WHERE id = ?`,
		rid).Scan(&first, &resume); err != nil {
		t.Fatal(err)
	}
	return first, resume
}

// TestFirstSyncedAt: a resource's first complete list sets first_synced_at,
// later ones keep it; extracting its references another way, or a mirror
// of another cluster, starts it over. Keeping other labels only lists the
// resource again.
func TestFirstSyncedAt(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	now := historyClock(d)
	res := Resource{Version: "v1", Resource: "pods", Kind: "Pod", Namespaced: true, Extraction: "v1", KeptKeys: "a"}
	rid, err := d.Mirror().EnsureResource(ctx, res)
	if err != nil {
		t.Fatal(err)
	}
	if first, _ := firstSynced(t, d, rid); first.Valid {
		t.Fatalf("first_synced_at %s before any list", first.String)
	}
	listAll(t, d, rid, podWith("p", "1"))
	want := formatTime(now)
	*now = now.Add(time.Hour)
	listAll(t, d, rid, podWith("p", "2"))
	if first, _ := firstSynced(t, d, rid); first.String != want {
		t.Fatalf("first_synced_at %v after a relist, want %s", first, want)
	}

	ensure := func(r Resource) (sql.NullString, string) {
		t.Helper()
		if err := d.Mirror().SetResumeVersion(ctx, rid, "7"); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Mirror().EnsureResource(ctx, r); err != nil {
			t.Fatal(err)
		}
		return firstSynced(t, d, rid)
	}
	if first, resume := ensure(res); first.String != want || resume != "7" {
		t.Errorf("same extraction: first_synced_at %v, resume point %q; want %s and 7", first, resume, want)
	}
	res.KeptKeys = "a,b"
	if first, resume := ensure(res); first.String != want || resume != "" {
		t.Errorf("other kept keys: first_synced_at %v, resume point %q; want %s and none", first, resume, want)
	}
	res.Extraction = "v2"
	if first, resume := ensure(res); first.Valid || resume != "" {
		t.Errorf("references extracted another way: first_synced_at %v, resume point %q; want neither",
			first, resume)
	}
	listAll(t, d, rid, podWith("p", "3"))
	if first, _ := firstSynced(t, d, rid); first.String != formatTime(now) {
		t.Errorf("first_synced_at %v after the list, want %v", first, formatTime(now))
	}
	if err := d.Mirror().ForgetResumePoints(ctx); err != nil {
		t.Fatal(err)
	}
	if first, _ := firstSynced(t, d, rid); first.Valid {
		t.Errorf("first_synced_at %s after ForgetResumePoints", first.String)
	}
}

// TestExtractedHashSeparatesValues: values that differ only in where one
// ends and the next begins hash apart.
func TestExtractedHashSeparatesValues(t *testing.T) {
	a := &Object{Labels: []KeyValue{{"ab", "c"}}}
	b := &Object{Labels: []KeyValue{{"a", "bc"}}}
	c := &Object{Annotations: []KeyValue{{"ab", "c"}}}
	n := int32(1)
	w1, w2 := &Object{Workload: &Workload{Replicas: &n}}, &Object{Workload: &Workload{}}
	hashes := map[any]string{}
	for name, o := range map[string]*Object{"a": a, "b": b, "c": c, "w1": w1, "w2": w2} {
		h := o.extractedHash()
		if other, ok := hashes[h]; ok {
			t.Errorf("%s and %s hash alike", name, other)
		}
		hashes[h] = name
	}
	if h := (&Object{}).extractedHash(); h != nil {
		t.Errorf("an object with nothing extracted hashes to %v, want nil", h)
	}
}
