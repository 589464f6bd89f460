package db

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
)

// fillResource is a resource and the objects its list returns, in order.
type fillResource struct {
	res  Resource
	objs []*Object
}

// firstFillFixture holds every kind of row the mirror writes: owner
// references to objects listed before, after, in another resource and
// nowhere; references to other objects, twice over one key, optional and
// by prefix; kept labels and annotations; each typed table; deletions
// and finalizers; and a UID that two resources return.
func firstFillFixture() []fillResource {
	r := rand.New(rand.NewPCG(4, 8))
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	at := func(min int) *time.Time { v := t0.Add(time.Duration(min) * time.Minute); return &v }
	str := func(s string) *string { return &s }
	i32 := func(v int32) *int32 { return &v }
	cms := randomGraph(r, 120, 4, true)
	for i, o := range cms {
		o.CreationTimestamp = at(i)
		if i%9 == 0 {
			o.Labels = []KeyValue{{"kor/used", "false"}}
			o.Annotations = []KeyValue{{"kubegcd.io/ttl", "1h"}}
		}
	}
	var pods []*Object
	for i := range 60 {
		o := &Object{UID: fmt.Sprint("pod-", i), APIVersion: "v1", Kind: "Pod", Namespace: "ns", Name: fmt.Sprint("p", i),
			ResourceVersion: fmt.Sprint(100 + i), CreationTimestamp: at(i),
			Pod: &Pod{Phase: []string{"Running", "Succeeded", "Failed"}[i%3], NodeName: fmt.Sprint("node-", i%4),
				Generation: int64(i % 2)},
			OwnerReferences: []api.OwnerRef{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs-1",
				Controller: boolp(true), BlockOwnerDeletion: boolp(i%2 == 0)}},
			Refs: []Ref{
				{Kind: "ConfigMap", Namespace: "ns", Name: fmt.Sprint("o", i%7), Via: "spec.volumes[].configMap"},
				{Kind: "ConfigMap", Namespace: "ns", Name: fmt.Sprint("o", i%7), Via: "spec.volumes[].configMap"},
				{Kind: "Secret", Namespace: "ns", Name: "pull", Via: "spec.imagePullSecrets[]", Optional: i%5 == 0},
				{Kind: "PersistentVolumeClaim", Namespace: "ns", Name: "data-web", Via: "spec.volumes[].persistentVolumeClaim",
					Prefix: i%4 == 0},
			},
			Labels: []KeyValue{{"kubegcd.io/keep", fmt.Sprint(i%2 == 0)}}}
		if i%10 == 0 {
			o.DeletionTimestamp, o.DeletionGracePeriodSeconds = at(90), ptr(int64(30))
			o.Finalizers = []string{"example.com/wait"}
		}
		pods = append(pods, o)
	}
	// A UID the configmaps' list returned too: the second list takes
	// upsertObject for it.
	pods[7].UID = cms[3].UID
	typed := []fillResource{
		{Resource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases", Kind: "Lease", Namespaced: true},
			[]*Object{
				{UID: "lease-1", APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Namespace: "kube-system", Name: "kcm",
					ResourceVersion: "7", Lease: &Lease{HolderIdentity: str("a_1"), LeaseDurationSeconds: i32(15),
						AcquireTime: at(1), RenewTime: at(2), LeaseTransitions: i32(3), Strategy: str("OldestEmulationVersion"),
						PreferredHolder: str("b_2")}},
				{UID: "lease-2", APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Namespace: "kube-system", Name: "idle",
					ResourceVersion: "8", Lease: &Lease{RenewTime: at(3)}},
			}},
		{Resource{Version: "v1", Resource: "namespaces", Kind: "Namespace"}, []*Object{
			{UID: "ns-1", APIVersion: "v1", Kind: "Namespace", Name: "ns", ResourceVersion: "9",
				NamespaceStatus: &NamespaceStatus{Phase: "Active", SpecFinalizers: []string{"kubernetes"}}},
			{UID: "ns-2", APIVersion: "v1", Kind: "Namespace", Name: "gone", ResourceVersion: "10", DeletionTimestamp: at(5),
				NamespaceStatus: &NamespaceStatus{Phase: "Terminating", Conditions: []Condition{{Type: "NamespaceContentRemaining",
					Status: "True", Reason: "SomeResourcesRemain"}}}},
		}},
		{Resource{Version: "v1", Resource: "nodes", Kind: "Node"}, []*Object{
			{UID: "node-1", APIVersion: "v1", Kind: "Node", Name: "node-1", ResourceVersion: "11",
				Node: &Node{Ready: "False", Taints: []Taint{{Key: "k", Effect: "NoExecute"}}, TTLAnnotation: str("5")}},
		}},
		{Resource{Group: "internal.apiserver.k8s.io", Version: "v1alpha1", Resource: "storageversions", Kind: "StorageVersion"},
			[]*Object{{UID: "sv-1", APIVersion: "internal.apiserver.k8s.io/v1alpha1", Kind: "StorageVersion", Name: "apps.deployments",
				ResourceVersion: "12", StorageVersion: &StorageVersion{CommonEncodingVersion: str("apps/v1"),
					Entries: []StorageVersionEntry{{APIServerID: "kas-1", EncodingVersion: "apps/v1",
						DecodableVersions: []string{"apps/v1"}, ServedVersions: []string{"apps/v1"}}}}}}},
		{Resource{Group: "coordination.k8s.io", Version: "v1beta1", Resource: "leasecandidates", Kind: "LeaseCandidate", Namespaced: true},
			[]*Object{{UID: "cand-1", APIVersion: "coordination.k8s.io/v1beta1", Kind: "LeaseCandidate", Namespace: "kube-system",
				Name: "kcm-a", ResourceVersion: "13", LeaseCandidate: &LeaseCandidate{LeaseName: "kcm", BinaryVersion: "1.35.0",
					EmulationVersion: "1.35.0", Strategy: "OldestEmulationVersion", PingTime: at(4), RenewTime: at(4)}}}},
		{Resource{Group: "batch", Version: "v1", Resource: "jobs", Kind: "Job", Namespaced: true}, []*Object{
			{UID: "job-1", APIVersion: "batch/v1", Kind: "Job", Namespace: "ns", Name: "j", ResourceVersion: "14",
				Job:             &Job{Complete: true, FinishedAt: at(6), TTLSecondsAfterFinished: i32(60)},
				OwnerReferences: []api.OwnerRef{{APIVersion: "batch/v1", Kind: "CronJob", Name: "c", UID: "cron-1", Controller: boolp(true)}}},
		}},
		{Resource{Group: "batch", Version: "v1", Resource: "cronjobs", Kind: "CronJob", Namespaced: true}, []*Object{
			{UID: "cron-1", APIVersion: "batch/v1", Kind: "CronJob", Namespace: "ns", Name: "c", ResourceVersion: "15",
				CronJob: &CronJob{SuccessfulJobsHistoryLimit: i32(3), Suspend: true}},
		}},
		{Resource{Version: "v1", Resource: "secrets", Kind: "Secret", Namespaced: true}, []*Object{
			{UID: "secret-1", APIVersion: "v1", Kind: "Secret", Namespace: "ns", Name: "pull", ResourceVersion: "16",
				Secret: &Secret{Type: "kubernetes.io/dockerconfigjson"}},
		}},
		{Resource{Version: "v1", Resource: "persistentvolumeclaims", Kind: "PersistentVolumeClaim", Namespaced: true}, []*Object{
			{UID: "pvc-1", APIVersion: "v1", Kind: "PersistentVolumeClaim", Namespace: "ns", Name: "data-web-0",
				ResourceVersion: "17", PVC: &PVC{Phase: "Bound", VolumeName: "pv-1"}},
		}},
		{Resource{Group: "apps", Version: "v1", Resource: "replicasets", Kind: "ReplicaSet", Namespaced: true}, []*Object{
			{UID: "rs-1", APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: "ns", Name: "rs", ResourceVersion: "18",
				Workload: &Workload{Replicas: i32(0)}},
		}},
	}
	return append([]fillResource{
		{Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}, cms},
		{Resource{Version: "v1", Resource: "pods", Kind: "Pod", Namespaced: true}, pods},
	}, typed...)
}

// fillMirror lists every resource of fixture into a new database, pages
// of each list interleaved, and returns its rows (see dumpMirror) and how
// many objects took the first-fill path.
func fillMirror(t *testing.T, fixture []fillResource, firstFill bool) (rows []string, filled int64) {
	t.Helper()
	ctx := context.Background()
	d := openTemp(t)
	if err := d.inWriteTx(ctx, opResource, func(*sql.Tx) error { d.lists.off = !firstFill; return nil }); err != nil {
		t.Fatal(err)
	}
	m := d.Mirror()
	ids, epochs := make([]int64, len(fixture)), make([]int64, len(fixture))
	for i, f := range fixture {
		var err error
		if ids[i], err = m.EnsureResource(ctx, f.res); err != nil {
			t.Fatal(err)
		}
		if epochs[i], err = m.BeginList(ctx, ids[i]); err != nil {
			t.Fatal(err)
		}
	}
	const page = 7
	for from := 0; ; from += page {
		more := false
		for i, f := range fixture {
			if from >= len(f.objs) {
				continue
			}
			more = true
			if err := m.WriteListPage(ctx, ids[i], epochs[i], f.objs[from:min(from+page, len(f.objs))]); err != nil {
				t.Fatal(err)
			}
		}
		if !more {
			break
		}
	}
	for i := range fixture {
		if _, err := m.FinishList(ctx, ids[i], epochs[i], "99"); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.inWriteTx(ctx, opResource, func(*sql.Tx) error { filled = d.lists.filled; return nil }); err != nil {
		t.Fatal(err)
	}
	// The first fill writes with foreign keys off: every key must hold.
	var broken int
	if err := d.read.QueryRow(`SELECT count(*) FROM pragma_foreign_key_check`).Scan(&broken); err != nil || broken != 0 {
		t.Errorf("%d rows break a foreign key (%v)", broken, err)
	}
	return dumpMirror(t, d), filled
}

// nowColumns hold when kubegcd wrote a row, which differs between two
// fills of one fixture.
var nowColumns = map[string]bool{"time": true, "first_referenced": true, "last_referenced": true,
	"synced_at": true, "first_synced_at": true}

// dumpMirror returns every row of every table, as "table: col=value …",
// with the columns of nowColumns left out, sorted. audit_store, the
// database's random id among the audit copies, is left out.
func dumpMirror(t *testing.T, d *DB) []string {
	t.Helper()
	ctx := context.Background()
	var tables []string
	if err := eachString(ctx, d.read, `SELECT name FROM sqlite_master WHERE type = 'table'
		AND name NOT IN ('schema_migrations', 'audit_store') AND name NOT LIKE 'sqlite_%' ORDER BY name`,
		func(s string) { tables = append(tables, s) }); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tbl := range tables {
		rows, err := d.read.QueryContext(ctx, `SELECT * FROM "`+tbl+`"`)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			b.WriteString(tbl + ":")
			for i, c := range cols {
				if !nowColumns[c] {
					fmt.Fprintf(&b, " %s=%v", c, vals[i])
				}
			}
			out = append(out, b.String())
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(out)
	return out
}

// TestFirstFillEqualsUpsertPath: a mirror filled by lists into empty
// resources, on the first-fill path, holds row for row what upsertObject
// writes: objects, owner edges, references and their history, kept keys,
// typed rows, the history's first rows, counts.
func TestFirstFillEqualsUpsertPath(t *testing.T) {
	fixture := firstFillFixture()
	total := 0
	for _, f := range fixture {
		total += len(f.objs)
	}
	fast, filled := fillMirror(t, fixture, true)
	slow, none := fillMirror(t, fixture, false)
	if filled != int64(total) || none != 0 {
		t.Fatalf("the first-fill path took %d and %d objects, want %d and 0", filled, none, total)
	}
	perTable := map[string]int{}
	for _, r := range fast {
		perTable[r[:strings.IndexByte(r, ':')]]++
	}
	for _, tbl := range []string{"objects", "owner_refs", "refs", "ref_history", "object_history", "history_owner_refs",
		"object_labels", "object_annotations", "pods", "nodes", "leases", "lease_candidates", "storage_versions",
		"storage_version_entries", "namespaces", "jobs", "cronjobs", "secrets", "pvcs", "workloads"} {
		if perTable[tbl] == 0 {
			t.Errorf("the fixture wrote no row of %s", tbl)
		}
	}
	if slices.Equal(fast, slow) {
		t.Logf("%d rows, %d objects", len(fast), total)
		return
	}
	fastSet, slowSet := map[string]bool{}, map[string]bool{}
	for _, r := range fast {
		fastSet[r] = true
	}
	for _, r := range slow {
		slowSet[r] = true
	}
	n := 0
	for _, r := range fast {
		if !slowSet[r] && n < 20 {
			t.Errorf("only the first fill wrote %s", r)
			n++
		}
	}
	for _, r := range slow {
		if !fastSet[r] && n < 40 {
			t.Errorf("only upsertObject wrote %s", r)
			n++
		}
	}
	t.Errorf("%d rows against %d", len(fast), len(slow))
}

// TestListsEndedRunsOnceListsEnd: Options.ListsEnded runs when the last
// list under way ends, by FinishList or EndList, and not before.
func TestListsEndedRunsOnceListsEnd(t *testing.T) {
	ctx := context.Background()
	ended := make(chan struct{}, 4)
	d, err := Open(ctx, t.TempDir()+"/lists.db", Options{ListsEnded: func() { ended <- struct{}{} }})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	m := d.Mirror()
	cms, pods := configMapsAndPods(t, m)
	cmEpoch, err := m.BeginList(ctx, cms)
	if err != nil {
		t.Fatal(err)
	}
	podEpoch, err := m.BeginList(ctx, pods)
	if err != nil {
		t.Fatal(err)
	}
	for rid, epoch := range map[int64]int64{cms: cmEpoch, pods: podEpoch} {
		if err := m.WriteListPage(ctx, rid, epoch, []*Object{{UID: fmt.Sprint("u", rid), APIVersion: "v1",
			Kind: "ConfigMap", Namespace: "ns", Name: fmt.Sprint("o", rid), ResourceVersion: "1"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.FinishList(ctx, cms, cmEpoch, "2"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
		t.Fatal("ListsEnded ran while the list of pods was under way")
	case <-time.After(100 * time.Millisecond):
	}
	if err := m.EndList(ctx, pods); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("ListsEnded did not run within 10s of the last list's end")
	}
}
