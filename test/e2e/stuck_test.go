package e2e

// /stuck and the stuck metrics against the real kube-apiserver: a namespace
// held by the finalizers of what is left in it (with kube-controller-
// manager's namespace controller emptying it), a foreground deletion held
// by a blocking dependent that a finalizer holds, and who removes which
// finalizer.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// stuckTimeout bounds waits that span a scrape cache (30 s) of the stuck
// metrics.
const stuckTimeout = 60 * time.Second

type stuckReply struct {
	Items     []api.StuckItem `json:"items"`
	Truncated bool            `json:"truncated"`
}

func getStuck(t *testing.T, d *daemon, query string) stuckReply {
	t.Helper()
	var r stuckReply
	d.GetJSON(t, "/stuck?"+query, 200, &r)
	return r
}

// stuckItem returns the item of /stuck about kind/name, or nil.
func (r stuckReply) item(kind, name string) *api.StuckItem {
	for i := range r.Items {
		if r.Items[i].Target.Kind == kind && r.Items[i].Target.Name == name {
			return &r.Items[i]
		}
	}
	return nil
}

// finalizerBlocker returns the finalizer blocker of bs naming f, or nil.
func finalizerBlocker(bs []api.Blocker, f string) *api.Blocker {
	for i := range bs {
		if bs[i].Type == api.BlockerFinalizer && bs[i].Finalizer == f {
			return &bs[i]
		}
	}
	return nil
}

func targetBlocker(bs []api.Blocker, typ api.BlockerType, kind, name string) *api.Blocker {
	for i := range bs {
		if bs[i].Type == typ && bs[i].Target != nil && bs[i].Target.Kind == kind && bs[i].Target.Name == name {
			return &bs[i]
		}
	}
	return nil
}

func dropFinalizers(t *testing.T, gvr schema.GroupVersionResource, ns, name string) {
	t.Helper()
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	_, err := dyn.Resource(gvr).Namespace(ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}

var (
	configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	pvcsGVR       = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}
	namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// stuckInCluster counts, across the whole cluster, the objects of gvr whose
// deletion was asked for more than after ago: what kubegcd_deletions_stuck
// must say. Other tests leave objects behind, so the metric is compared
// with the cluster rather than with this test's objects alone.
func stuckInCluster(t *testing.T, gvr schema.GroupVersionResource, after time.Duration) int {
	t.Helper()
	list, err := dyn.Resource(gvr).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, o := range list.Items {
		if ts := o.GetDeletionTimestamp(); ts != nil && time.Since(ts.Time) > after {
			n++
		}
	}
	return n
}

// scrape returns the value of a sample of /metrics (0 when absent): name
// alone, or name{labels} exactly.
func scrape(t *testing.T, d *daemon, series string) float64 {
	t.Helper()
	code, body, err := d.Get("/metrics")
	if err != nil || code != 200 {
		t.Fatalf("/metrics: %d %v", code, err)
	}
	for line := range strings.Lines(string(body)) {
		if s, value, ok := strings.Cut(strings.TrimSpace(line), " "); ok && s == series {
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				t.Fatalf("/metrics: %s: %v", line, err)
			}
			return v
		}
	}
	return 0
}

// waitMetric waits until series equals what want computes from the cluster.
func waitMetric(t *testing.T, d *daemon, series string, want func() int) {
	t.Helper()
	eventually(t, stuckTimeout, func() error {
		w, got := want(), scrape(t, d, series)
		if got != float64(w) {
			return fmt.Errorf("%s = %v, want %d", series, got, w)
		}
		return nil
	})
}

func TestStuckNamespace(t *testing.T) {
	ctx := context.Background()
	ns := namespaces.New(t, "stuck-ns")
	cm, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "held", Finalizers: []string{"example.com/hold"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "e2e.kubegcd.io/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "kept", "finalizers": []any{"e2e.kubegcd.io/keep"}},
	}}
	if _, err := dyn.Resource(widgetGVR).Namespace(ns).Create(ctx, w, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		dropFinalizers(t, configMapsGVR, ns, "held")
		dropFinalizers(t, widgetGVR, ns, "kept")
	})
	const after = time.Second
	d := daemons.Start(t, "", "--controllers=", "--stuck-after="+after.String())
	d.WaitReady(t, 30*time.Second)
	e2eutil.StartNamespaceController(t, cluster)
	if err := kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// The namespace controller deletes what is in the namespace; the two
	// finalizers keep the ConfigMap and the Widget, and they the namespace.
	var got stuckReply
	eventually(t, stuckTimeout, func() error {
		got = getStuck(t, d, "minAge=0&namespace="+ns)
		nsItem := got.item("Namespace", ns)
		if nsItem == nil {
			return fmt.Errorf("namespace not listed: %+v", got.Items)
		}
		for _, c := range []struct{ kind, name, finalizer string }{
			{"ConfigMap", "held", "example.com/hold"}, {"Widget", "kept", "e2e.kubegcd.io/keep"},
		} {
			b := targetBlocker(nsItem.Blockers, api.BlockerNamespaceContent, c.kind, c.name)
			if b == nil {
				return fmt.Errorf("namespace blockers lack %s %s: %+v", c.kind, c.name, nsItem.Blockers)
			}
			if finalizerBlocker(b.Blockers, c.finalizer) == nil {
				return fmt.Errorf("%s %s in the namespace is not held by %s yet: %+v", c.kind, c.name, c.finalizer, b)
			}
			own := got.item(c.kind, c.name)
			if own == nil {
				return fmt.Errorf("%s %s is not listed on its own", c.kind, c.name)
			}
			if own.State != api.StateFinalizing || finalizerBlocker(own.Blockers, c.finalizer) == nil {
				return fmt.Errorf("%s %s: state %s, blockers %+v", c.kind, c.name, own.State, own.Blockers)
			}
		}
		// The ServiceAccount had no finalizer: the namespace controller
		// deleted it, so only the two held objects are left.
		if n := len(got.Items); n != 3 {
			return fmt.Errorf("%d items, want the namespace and its two held objects: %+v", n, got.Items)
		}
		content := 0
		for _, b := range nsItem.Blockers {
			if b.Type == api.BlockerNamespaceContent {
				content++
			}
		}
		if content != 2 {
			return fmt.Errorf("%d namespace-content blockers, want the two held objects: %+v", content, nsItem.Blockers)
		}
		// The namespace's own spec finalizer and conditions, as mirrored.
		if b := finalizerBlocker(nsItem.Blockers, "kubernetes"); b == nil || !strings.HasSuffix(b.Reason, "(spec.finalizers)") {
			return fmt.Errorf("no mirrored spec finalizer kubernetes: %+v", nsItem.Blockers)
		}
		if !slices.ContainsFunc(nsItem.Conditions, func(c api.Condition) bool {
			return c.Type == "NamespaceFinalizersRemaining" && c.Status == "True" && strings.Contains(c.Message, "example.com/hold") &&
				strings.Contains(c.Message, "e2e.kubegcd.io/keep")
		}) {
			return fmt.Errorf("conditions lack NamespaceFinalizersRemaining naming both finalizers: %+v", nsItem.Conditions)
		}
		return nil
	})
	nsItem := got.item("Namespace", ns)
	if nsItem.State != api.StateNamespaceTerminating || nsItem.Target.UID == "" {
		t.Errorf("namespace item %+v", nsItem)
	}
	for _, words := range []string{"Namespace " + ns + " has been Terminating", "The namespace controller reports NamespaceFinalizersRemaining: ", "ConfigMap " + ns + "/held, held by its finalizer example.com/hold (the controller of example.com)",
		"Widget " + ns + "/kept, held by its finalizer e2e.kubegcd.io/keep (the controller of e2e.kubegcd.io)"} {
		if !strings.Contains(nsItem.Explanation, words) {
			t.Errorf("explanation lacks %q:\n%s", words, nsItem.Explanation)
		}
	}
	if own := got.item("ConfigMap", "held"); own.Target.UID != string(cm.UID) {
		t.Errorf("ConfigMap item names uid %s, want %s", own.Target.UID, cm.UID)
	}

	widgets := func() int { return stuckInCluster(t, widgetGVR, after) }
	namespaces := func() int { return stuckInCluster(t, namespacesGVR, 0) }
	waitMetric(t, d, `kubegcd_deletions_stuck{group="e2e.kubegcd.io",kind="Widget"}`, widgets)
	waitMetric(t, d, `kubegcd_namespaces_terminating`, namespaces)

	// Without their finalizers the objects go, then the namespace.
	dropFinalizers(t, configMapsGVR, ns, "held")
	dropFinalizers(t, widgetGVR, ns, "kept")
	eventually(t, stuckTimeout, func() error {
		if got := getStuck(t, d, "minAge=0&namespace="+ns); len(got.Items) > 0 {
			return fmt.Errorf("still listed: %+v", got.Items)
		}
		return nil
	})
	if _, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s: %v, want it gone", ns, err)
	}
	waitMetric(t, d, `kubegcd_deletions_stuck{group="e2e.kubegcd.io",kind="Widget"}`, widgets)
	waitMetric(t, d, `kubegcd_namespaces_terminating`, namespaces)
}

func TestStuckForegroundChain(t *testing.T) {
	ctx := context.Background()
	ns := namespaces.New(t, "stuck-chain")
	cms := kube.CoreV1().ConfigMaps(ns)
	owner, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dep, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dep", Finalizers: []string{"example.com/hold"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
			BlockOwnerDeletion: ptr.To(true)}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropFinalizers(t, configMapsGVR, ns, dep.Name) })
	// ownergc in dry-run records what it would do and removes nothing, so
	// the chain stays while the test looks at it.
	d := daemons.Start(t, "", "--controllers=ownergc", "--dry-run=true", "--stuck-after=1h")
	d.WaitReady(t, 30*time.Second)
	if err := cms.Delete(ctx, owner.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, dep.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	var item *api.StuckItem
	eventually(t, stuckTimeout, func() error {
		got := getStuck(t, d, "minAge=0&namespace="+ns)
		if item = got.item("ConfigMap", "owner"); item == nil {
			return fmt.Errorf("owner not listed: %+v", got.Items)
		}
		b := targetBlocker(item.Blockers, api.BlockerDependent, "ConfigMap", "dep")
		if b == nil || finalizerBlocker(b.Blockers, "example.com/hold") == nil {
			return fmt.Errorf("owner's blockers lack dep held by example.com/hold: %+v", item.Blockers)
		}
		if got.item("ConfigMap", "dep") == nil {
			return fmt.Errorf("dep not listed on its own: %+v", got.Items)
		}
		return nil
	})
	if item.State != api.StateDeletingDependents || item.Target.UID != string(owner.UID) {
		t.Errorf("owner: state %s, uid %s", item.State, item.Target.UID)
	}
	fg := finalizerBlocker(item.Blockers, "foregroundDeletion")
	if fg == nil || !strings.Contains(fg.Reason, "kubegcd's ownergc is in dry-run") {
		t.Errorf("foregroundDeletion blocker %+v, want it to say ownergc only records", fg)
	}
	b := targetBlocker(item.Blockers, api.BlockerDependent, "ConfigMap", "dep")
	if b.Target.UID != string(dep.UID) || finalizerBlocker(b.Blockers, "example.com/hold").Reason != "the controller of example.com" {
		t.Errorf("dependent blocker %+v", b)
	}
	// owner ← dep ← example.com/hold, in words.
	want := "It waits for its dependent ConfigMap " + ns + "/dep, which has blockOwnerDeletion: true and was asked to be deleted"
	if !strings.Contains(item.Explanation, want) || !strings.Contains(item.Explanation, "held by its finalizer example.com/hold (the controller of example.com)") {
		t.Errorf("explanation:\n%s\nwant the chain owner ← dep ← example.com/hold", item.Explanation)
	}

	// --stuck-after=1h is the default minAge: nothing here is that old.
	if got := getStuck(t, d, "namespace="+ns); len(got.Items) != 0 {
		t.Errorf("without minAge, /stuck lists %+v; --stuck-after=1h should hide them", got.Items)
	}
	// Nor do the metrics count them: the ConfigMaps stuck for an hour are
	// other tests' leftovers, if any.
	waitMetric(t, d, `kubegcd_deletions_stuck{group="",kind="ConfigMap"}`, func() int { return stuckInCluster(t, configMapsGVR, time.Hour) })

	dropFinalizers(t, configMapsGVR, ns, dep.Name)
	eventually(t, stuckTimeout, func() error {
		got := getStuck(t, d, "minAge=0&namespace="+ns)
		if it := got.item("ConfigMap", "owner"); it == nil || targetBlocker(it.Blockers, api.BlockerDependent, "ConfigMap", "dep") != nil {
			return fmt.Errorf("want the owner listed without its gone dependent: %+v", got.Items)
		}
		if got.item("ConfigMap", "dep") != nil {
			return fmt.Errorf("dep still listed")
		}
		return nil
	})
	// Nothing removes the owner's finalizer here (no collector enforces).
	dropFinalizers(t, configMapsGVR, ns, owner.Name)
}

func TestStuckWhoRemoves(t *testing.T) {
	ctx := context.Background()
	ns := namespaces.New(t, "stuck-who")
	// The StorageObjectInUseProtection admission plugin gives every claim
	// kubernetes.io/pvc-protection; no controller-manager runs to remove it.
	pvc, err := kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "claim"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pvc.Finalizers, "kubernetes.io/pvc-protection") {
		t.Fatalf("claim finalizers %v: the admission plugin did not add kubernetes.io/pvc-protection", pvc.Finalizers)
	}
	if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "held", Finalizers: []string{"example.com/hold"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// An owner deleted with orphan propagation waits for the garbage
	// collector (none runs here) to drop the reference its dependent holds.
	parent, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "parent"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "child",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: parent.Name, UID: parent.UID}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		dropFinalizers(t, pvcsGVR, ns, "claim")
		dropFinalizers(t, configMapsGVR, ns, "held")
		dropFinalizers(t, configMapsGVR, ns, "parent")
	})
	const after = time.Second
	d := daemons.Start(t, "", "--controllers=", "--stuck-after="+after.String())
	d.WaitReady(t, 30*time.Second)
	if err := kube.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "claim", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := kube.CoreV1().ConfigMaps(ns).Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := kube.CoreV1().ConfigMaps(ns).Delete(ctx, "parent", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)}); err != nil {
		t.Fatal(err)
	}

	tests := []struct{ kind, name, finalizer, who string }{
		{"PersistentVolumeClaim", "claim", "kubernetes.io/pvc-protection", "the PVC protection controller (kube-controller-manager), once no pod uses the claim"},
		{"ConfigMap", "held", "example.com/hold", "the controller of example.com"},
		{"ConfigMap", "parent", "orphan", "the garbage collector (kube-controller-manager's, if it runs: kubegcd's ownergc does not), once it has removed the ownerReference to this object from every dependent"},
	}
	var got stuckReply
	eventually(t, stuckTimeout, func() error {
		// The default minAge is --stuck-after: 1 s.
		got = getStuck(t, d, "namespace="+ns)
		for _, tt := range tests {
			if got.item(tt.kind, tt.name) == nil {
				return fmt.Errorf("%s %s not listed: %+v", tt.kind, tt.name, got.Items)
			}
		}
		return nil
	})
	for _, tt := range tests {
		it := got.item(tt.kind, tt.name)
		b := finalizerBlocker(it.Blockers, tt.finalizer)
		if b == nil || b.Reason != tt.who {
			t.Errorf("%s %s: blocker %+v, want %s removed by %q", tt.kind, tt.name, b, tt.finalizer, tt.who)
		}
		if want := "held by its finalizer " + tt.finalizer + ", to be removed by " + tt.who; !strings.Contains(it.Explanation, want) {
			t.Errorf("%s %s: explanation %q lacks %q", tt.kind, tt.name, it.Explanation, want)
		}
		if it.Age < after.Seconds() || it.DeletionRequested.IsZero() {
			t.Errorf("%s %s: age %v, requested %v", tt.kind, tt.name, it.Age, it.DeletionRequested)
		}
	}
	if it := got.item("ConfigMap", "parent"); it.State != api.StateOrphaningDependents ||
		targetBlocker(it.Blockers, api.BlockerDependent, "ConfigMap", "child") == nil {
		t.Errorf("parent: state %s, blockers %+v; want orphaning, held by child", it.State, it.Blockers)
	}
	waitMetric(t, d, `kubegcd_deletions_stuck{group="",kind="PersistentVolumeClaim"}`, func() int { return stuckInCluster(t, pvcsGVR, after) })
	oldest := scrape(t, d, `kubegcd_deletion_stuck_oldest_seconds{group="",kind="PersistentVolumeClaim"}`)
	if mine := got.item("PersistentVolumeClaim", "claim").Age; oldest < mine {
		t.Errorf("kubegcd_deletion_stuck_oldest_seconds for claims = %v, less than this claim's age %v", oldest, mine)
	}
	// Filters: kind by plural, any case.
	if r := getStuck(t, d, "minAge=0&kind=PersistentVolumeClaims&namespace="+ns); len(r.Items) != 1 || r.Items[0].Target.Name != "claim" {
		t.Errorf("kind=PersistentVolumeClaims lists %+v", r.Items)
	}
}

func TestStuckBadParameters(t *testing.T) {
	d := daemons.Start(t, "", "--controllers=")
	for _, q := range []string{"minAge=5", "minAge=yesterday", "minAge=-5m", "limit=none", "owner=me", "namespace=a&namespace=b"} {
		code, body, err := d.Get("/stuck?" + q)
		if err != nil || code != 400 || !strings.HasPrefix(string(body), "{") || !strings.Contains(string(body), `"error"`) {
			t.Errorf("/stuck?%s: %d %s %v, want a JSON 400", q, code, body, err)
		}
	}
}

var apiServicesGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

func TestStuckDiscoveryFailure(t *testing.T) {
	ctx := context.Background()
	// An aggregated API whose service does not exist: discovery of its
	// group fails, as when an extension API server is down.
	const group, version = "stuck.e2e.kubegcd.io", "v1"
	svc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": version + "." + group},
		"spec": map[string]any{
			"group": group, "version": version, "groupPriorityMinimum": int64(1000), "versionPriority": int64(15),
			"insecureSkipTLSVerify": true, "service": map[string]any{"namespace": "default", "name": "no-such-service"},
		},
	}}
	if _, err := dyn.Resource(apiServicesGVR).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	removed := false
	removeAPIService := func() {
		if removed {
			return
		}
		removed = true
		if err := dyn.Resource(apiServicesGVR).Delete(ctx, svc.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	}
	t.Cleanup(removeAPIService)
	ns := namespaces.New(t, "stuck-discovery")
	d := daemons.Start(t, "", "--controllers=", "--discovery-interval=1s")
	// No namespace controller runs: the namespace stays Terminating.
	if err := kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	discoveryBlocker := func() (*api.StuckItem, *api.Blocker) {
		it := getStuck(t, d, "minAge=0&kind=Namespace&namespace="+ns).item("Namespace", ns)
		if it == nil {
			return nil, nil
		}
		for i := range it.Blockers {
			if it.Blockers[i].Type == api.BlockerDiscovery && it.Blockers[i].GroupVersion == group+"/"+version {
				return it, &it.Blockers[i]
			}
		}
		return it, nil
	}
	eventually(t, stuckTimeout, func() error {
		it, b := discoveryBlocker()
		if b == nil {
			return fmt.Errorf("no discovery blocker for %s/%s: %+v", group, version, it)
		}
		if !strings.Contains(it.Explanation, "discovery of "+group+"/"+version+" fails") {
			return fmt.Errorf("explanation lacks the failed discovery: %s", it.Explanation)
		}
		return nil
	})
	removeAPIService()
	eventually(t, stuckTimeout, func() error {
		if it, b := discoveryBlocker(); it == nil || b != nil {
			return fmt.Errorf("want the namespace listed without the discovery blocker: %+v", it)
		}
		return nil
	})
}
