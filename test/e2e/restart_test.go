package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/test/e2eutil"
)

func TestRestartOnSameDatabaseLeavesNoGhosts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespaces.New(t, "restart")
	cms := kube.CoreV1().ConfigMaps(ns)
	for i := range 20 {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before-" + strconv.Itoa(i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	d := daemons.Start(t, "")
	d.WaitReady(t, 60*time.Second)
	eventually(t, 15*time.Second, func() error { return e2eutil.MirrorMatches(ctx, d.DB(t), meta, "") })
	if code := d.Stop(); code != 0 {
		t.Fatalf("kubegcd exited with %d", code)
	}

	// While kubegcd is down: delete half, update some, create new ones.
	deleteAndUpdate(t, cms, 10, 5)
	for i := range 5 {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-" + strconv.Itoa(i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	d2 := daemons.Start(t, d.DBPath)
	d2.WaitReady(t, 60*time.Second)
	eventually(t, 15*time.Second, func() error { return e2eutil.MirrorMatches(ctx, d2.DB(t), meta, "") })
}

// TestAPIServerRestart restarts the shared kube-apiserver, so it must not
// run in parallel with other tests (no t.Parallel: it runs before them).
func TestAPIServerRestart(t *testing.T) {
	ctx := context.Background()
	ns := namespaces.New(t, "apiserver-restart")
	d := daemons.Start(t, "")
	d.WaitReady(t, 60*time.Second)

	if err := cluster.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	d.WaitUnready(t, 30*time.Second, "")
	if code, _, err := d.Get("/status"); err != nil || code != http.StatusOK {
		t.Fatalf("/status while the API server is down: %d %v", code, err)
	}

	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := cluster.StartAPIServer(startCtx); err != nil {
		t.Fatal(err)
	}
	d.WaitReady(t, 60*time.Second)

	cm, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-restart"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	within(t, "configmap after restart", func() error { return matchesMirror(d.DB(t), cm, "v1", "ConfigMap") })
	eventually(t, 15*time.Second, func() error { return e2eutil.MirrorMatches(ctx, d.DB(t), meta, "") })
	if code, exited := d.Exited(); exited {
		t.Fatalf("kubegcd exited with %d during the API server restart", code)
	}
}

// deleteAndUpdate deletes the ConfigMaps before-0 to before-(deleted-1) and
// changes the data of the updated ones after them, as a test does while
// kubegcd is down.
func deleteAndUpdate(t *testing.T, cms typedcorev1.ConfigMapInterface, deleted, updated int) {
	t.Helper()
	ctx := context.Background()
	for i := range deleted {
		if err := cms.Delete(ctx, "before-"+strconv.Itoa(i), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := deleted; i < deleted+updated; i++ {
		cm, err := cms.Get(ctx, "before-"+strconv.Itoa(i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data = map[string]string{"changed": "while stopped"}
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// configMapsMatch compares the uid and resourceVersion of every ConfigMap
// the mirror holds in namespace ns with a fresh list from the API server.
func configMapsMatch(ctx context.Context, store *db.DB, ns string) error {
	list, err := kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var want, got []string
	for _, cm := range list.Items {
		want = append(want, cm.Name+"@"+cm.ResourceVersion)
	}
	core := ""
	objs, _, err := store.Objects().LookupObjects(ctx, db.LookupFilter{Kind: "configmaps", Group: &core, Namespace: ns, Limit: 1000})
	if err != nil {
		return err
	}
	for _, o := range objs {
		got = append(got, o.Name+"@"+o.ResourceVersion)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		return fmt.Errorf("the mirror has %v, the cluster %v", got, want)
	}
	return nil
}

// TestRestartResumesWatches: a restart on the same database resumes the
// watches from the resourceVersions the last run stored instead of listing,
// and by the time it is ready the mirror has every change made while it
// was down: objects created, updated, deleted (no ghosts) and re-owned.
func TestRestartResumesWatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespaces.New(t, "resume")
	cms := kube.CoreV1().ConfigMaps(ns)
	create := func(name string, owner *corev1.ConfigMap) *corev1.ConfigMap {
		t.Helper()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if owner != nil {
			cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}
		}
		cm, err := cms.Create(ctx, cm, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm
	}
	ownerA, ownerB := create("owner-a", nil), create("owner-b", nil)
	dep := create("dep", ownerA)
	for i := range 6 {
		create("before-"+strconv.Itoa(i), nil)
	}
	d := daemons.Start(t, "")
	d.WaitReady(t, 60*time.Second)
	eventually(t, 15*time.Second, func() error { return configMapsMatch(ctx, d.DB(t), ns) })
	if code := d.Stop(); code != 0 {
		t.Fatalf("kubegcd exited with %d", code)
	}

	deleteAndUpdate(t, cms, 3, 3)
	create("after", nil)
	dep.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: ownerB.Name, UID: ownerB.UID}}
	if _, err := cms.Update(ctx, dep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	d2 := daemons.Start(t, d.DBPath)
	d2.WaitReady(t, 60*time.Second)
	// Ready means caught up: no waiting for the mirror from here.
	if err := configMapsMatch(ctx, d2.DB(t), ns); err != nil {
		t.Fatalf("ready after the restart, but: %v", err)
	}
	for _, tt := range []struct {
		owner *corev1.ConfigMap
		want  []string
	}{{ownerA, nil}, {ownerB, []string{"dep"}}} {
		deps, err := d2.DB(t).OwnerGC().DependentsOf(ctx, string(tt.owner.UID))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, d := range deps {
			got = append(got, d.Name)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("dependents of %s in the mirror: %v, want %v", tt.owner.Name, got, tt.want)
		}
	}
	if n := sample(t, d2, `kubegcd_ingest_resumes_total{resource="configmaps"}`); n != 1 {
		t.Errorf("configmaps resumed %v times, want 1", n)
	}
	code, body, err := d2.Get("/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("/metrics: %d %v", code, err)
	}
	if lines := grepLines(string(body), "kubegcd_ingest_relists_total{"); strings.Contains(lines, `resource="configmaps"`) {
		t.Errorf("configmaps relisted after the restart:\n%s", lines)
	}
}
