package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kubegcd/kubegcd/internal/db"
)

// mirrorLatency is the most the mirror may lag behind the cluster.
const mirrorLatency = 2 * time.Second

// matchesMirror compares what the mirror holds of obj with obj itself,
// owner references field for field.
func matchesMirror(store *db.DB, obj metav1.Object, apiVersion, kind string) error {
	got, err := store.Objects().GetObject(context.Background(), string(obj.GetUID()))
	if err != nil {
		return fmt.Errorf("%s %s/%s: %w", kind, obj.GetNamespace(), obj.GetName(), err)
	}
	if got.ResourceVersion != obj.GetResourceVersion() {
		return fmt.Errorf("%s %s: resourceVersion %s in mirror, %s in cluster", kind, obj.GetName(), got.ResourceVersion, obj.GetResourceVersion())
	}
	if got.APIVersion != apiVersion || got.Kind != kind || got.Namespace != obj.GetNamespace() || got.Name != obj.GetName() {
		return fmt.Errorf("identity %s %s %s/%s, want %s %s %s/%s", got.APIVersion, got.Kind, got.Namespace, got.Name,
			apiVersion, kind, obj.GetNamespace(), obj.GetName())
	}
	if !slices.Equal(got.Finalizers, obj.GetFinalizers()) {
		return fmt.Errorf("finalizers %v, want %v", got.Finalizers, obj.GetFinalizers())
	}
	if (got.DeletionTimestamp == nil) != (obj.GetDeletionTimestamp() == nil) {
		return fmt.Errorf("deletionTimestamp %v, want %v", got.DeletionTimestamp, obj.GetDeletionTimestamp())
	}
	if !got.CreationTimestamp.Equal(obj.GetCreationTimestamp().Time) {
		return fmt.Errorf("creationTimestamp %v, want %v", got.CreationTimestamp, obj.GetCreationTimestamp())
	}
	want := obj.GetOwnerReferences()
	if len(got.OwnerReferences) != len(want) {
		return fmt.Errorf("%d owner refs in mirror, %d in cluster", len(got.OwnerReferences), len(want))
	}
	for i, w := range want {
		g := got.OwnerReferences[i]
		if g.APIVersion != w.APIVersion || g.Kind != w.Kind || g.Name != w.Name || g.UID != string(w.UID) ||
			!ptrEqual(g.Controller, w.Controller) || !ptrEqual(g.BlockOwnerDeletion, w.BlockOwnerDeletion) {
			return fmt.Errorf("owner ref %d: mirror %+v, cluster %+v", i, g, w)
		}
	}
	return nil
}

func ptrEqual[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func absentFromMirror(store *db.DB, uid types.UID) error {
	_, err := store.Objects().GetObject(context.Background(), string(uid))
	if errors.Is(err, db.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("object %s still mirrored", uid)
}

func within(t *testing.T, what string, fn func() error) {
	t.Helper()
	took := eventually(t, mirrorLatency, fn)
	t.Logf("%s: mirrored in %v", what, took.Round(time.Millisecond))
}

func TestMirrorFollowsCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespaces.New(t, "mirror")
	d := daemons.Start(t, "")
	d.WaitReady(t, 60*time.Second)
	store := d.DB(t)

	t.Run("configmaps with owner references", func(t *testing.T) {
		cms := kube.CoreV1().ConfigMaps(ns)
		owner, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		within(t, "owner created", func() error { return matchesMirror(store, owner, "v1", "ConfigMap") })
		dep, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name:       "dependent",
			Finalizers: []string{"e2e.kubegcd.io/hold"},
			OwnerReferences: []metav1.OwnerReference{
				{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: owner.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)},
				{APIVersion: "apps/v1", Kind: "Deployment", Name: "never", UID: "00000000-0000-0000-0000-000000000001"},
				{APIVersion: "e2e.kubegcd.io/v1", Kind: "Widget", Name: "w", UID: "00000000-0000-0000-0000-000000000002", BlockOwnerDeletion: ptr.To(false)},
			},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		within(t, "dependent created", func() error { return matchesMirror(store, dep, "v1", "ConfigMap") })

		dep.OwnerReferences = dep.OwnerReferences[1:]
		dep.Labels = map[string]string{"changed": "yes"}
		if dep, err = cms.Update(ctx, dep, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		within(t, "dependent updated", func() error { return matchesMirror(store, dep, "v1", "ConfigMap") })

		// Deleting an object held by a finalizer only sets deletionTimestamp.
		if err := cms.Delete(ctx, "dependent", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if dep, err = cms.Get(ctx, "dependent", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		within(t, "dependent terminating", func() error { return matchesMirror(store, dep, "v1", "ConfigMap") })
		dep.Finalizers = nil
		if _, err := cms.Update(ctx, dep, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		within(t, "dependent deleted", func() error { return absentFromMirror(store, dep.UID) })
		if err := cms.Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		within(t, "owner deleted", func() error { return absentFromMirror(store, owner.UID) })
	})

	t.Run("pods with typed columns", func(t *testing.T) {
		pods := kube.CoreV1().Pods(ns)
		pod, err := pods.Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p"},
			Spec:       corev1.PodSpec{NodeName: "node-x", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		within(t, "pod created", func() error {
			if err := matchesMirror(store, pod, "v1", "Pod"); err != nil {
				return err
			}
			got, _ := store.Objects().GetObject(ctx, string(pod.UID))
			if got.Pod == nil || got.Pod.NodeName != "node-x" || got.Pod.Phase != "Pending" {
				return fmt.Errorf("pod columns %+v", got.Pod)
			}
			return nil
		})
		pod.Status.Phase = corev1.PodFailed
		pod.Status.Reason = "Evicted"
		if pod, err = pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		within(t, "pod status", func() error {
			got, err := store.Objects().GetObject(ctx, string(pod.UID))
			if err != nil {
				return err
			}
			if got.ResourceVersion != pod.ResourceVersion || got.Pod.Phase != "Failed" || got.Pod.Reason != "Evicted" {
				return fmt.Errorf("pod columns %+v at %s", got.Pod, got.ResourceVersion)
			}
			return nil
		})
		if err := pods.Delete(ctx, "p", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
		within(t, "pod deleted", func() error { return absentFromMirror(store, pod.UID) })
	})

	t.Run("nodes with typed columns", func(t *testing.T) {
		nodes := kube.CoreV1().Nodes()
		node, err := nodes.Create(ctx, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "mirror-node", Annotations: map[string]string{"node.alpha.kubernetes.io/ttl": "15"}},
			Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: "node.kubernetes.io/out-of-service", Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nodes.Delete(context.Background(), "mirror-node", metav1.DeleteOptions{}) })
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		if node, err = nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		within(t, "node", func() error {
			if err := matchesMirror(store, node, "v1", "Node"); err != nil {
				return err
			}
			got, _ := store.Objects().GetObject(ctx, string(node.UID))
			n := got.Node
			if n == nil || n.Ready != "False" || n.TTLAnnotation == nil || *n.TTLAnnotation != "15" || len(n.Taints) != len(node.Spec.Taints) {
				return fmt.Errorf("node columns %+v", n)
			}
			// Admission adds the not-ready taint beside ours.
			for i, taint := range node.Spec.Taints {
				if n.Taints[i] != (db.Taint{Key: taint.Key, Value: taint.Value, Effect: string(taint.Effect)}) {
					return fmt.Errorf("taint %d: %+v, want %+v", i, n.Taints[i], taint)
				}
			}
			if n.Taints[0].Key != "node.kubernetes.io/out-of-service" {
				return fmt.Errorf("out-of-service taint missing: %+v", n.Taints)
			}
			return nil
		})
		if err := nodes.Delete(ctx, "mirror-node", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		within(t, "node deleted", func() error { return absentFromMirror(store, node.UID) })
	})

	t.Run("leases with typed columns", func(t *testing.T) {
		leases := kube.CoordinationV1().Leases(ns)
		renew := metav1.NewMicroTime(time.Now().Truncate(time.Microsecond))
		lease, err := leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: "l", Labels: map[string]string{"apiserver.kubernetes.io/identity": "kube-apiserver"}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("holder-1"), LeaseDurationSeconds: ptr.To[int32](15),
				RenewTime: &renew, AcquireTime: &renew, LeaseTransitions: ptr.To[int32](3)},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		within(t, "lease", func() error {
			if err := matchesMirror(store, lease, "coordination.k8s.io/v1", "Lease"); err != nil {
				return err
			}
			got, _ := store.Objects().GetObject(ctx, string(lease.UID))
			l := got.Lease
			if l == nil || *l.HolderIdentity != "holder-1" || *l.LeaseDurationSeconds != 15 || *l.LeaseTransitions != 3 ||
				!l.RenewTime.Equal(renew.Time) || *l.IdentityLabel != "kube-apiserver" {
				return fmt.Errorf("lease columns %+v", l)
			}
			return nil
		})
		if err := leases.Delete(ctx, "l", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		within(t, "lease deleted", func() error { return absentFromMirror(store, lease.UID) })
	})

	t.Run("custom resources", func(t *testing.T) {
		owner, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "widget-owner"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "e2e.kubegcd.io/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "w1", "ownerReferences": []any{map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap", "name": "widget-owner", "uid": string(owner.UID), "controller": true,
			}}},
			"spec": map[string]any{"size": 3},
		}}
		widgets := dyn.Resource(widgetGVR).Namespace(ns)
		w, err = widgets.Create(ctx, w, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		within(t, "widget", func() error { return matchesMirror(store, w, "e2e.kubegcd.io/v1", "Widget") })
		if err := widgets.Delete(ctx, "w1", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		within(t, "widget deleted", func() error { return absentFromMirror(store, w.GetUID()) })
	})

	t.Run("status", func(t *testing.T) {
		var st struct {
			Version   string    `json:"version"`
			StartedAt time.Time `json:"startedAt"`
			Synced    bool      `json:"synced"`
			Resources []struct {
				Group, Version, Resource, Kind string
				Namespaced, Synced             bool
				Objects                        int64
			} `json:"resources"`
		}
		d.GetJSON(t, "/status", http.StatusOK, &st)
		if st.Version == "" || st.StartedAt.IsZero() || !st.Synced {
			t.Fatalf("status header wrong: %+v", st)
		}
		seen := map[string]bool{}
		for _, r := range st.Resources {
			if !r.Synced {
				t.Errorf("resource %s not synced", r.Resource)
			}
			seen[r.Group+"/"+r.Resource] = true
			if r.Resource == "namespaces" && (r.Objects < 4 || r.Namespaced || r.Kind != "Namespace") {
				t.Errorf("namespaces row wrong: %+v", r)
			}
		}
		for _, want := range []string{"/configmaps", "/pods", "/nodes", "/secrets", "coordination.k8s.io/leases", "apps/deployments",
			"e2e.kubegcd.io/widgets", "internal.apiserver.k8s.io/storageversions"} {
			if !seen[want] {
				t.Errorf("/status does not list %s", want)
			}
		}
		for _, ignored := range []string{"/events", "events.k8s.io/events"} {
			if seen[ignored] {
				t.Errorf("/status lists ignored resource %s", ignored)
			}
		}
	})

	t.Run("http errors and metrics", func(t *testing.T) {
		var e struct{ Error string }
		d.GetJSON(t, "/status/nope", http.StatusNotFound, &e)
		if e.Error == "" {
			t.Error("404 without an error message")
		}
		code, body, err := d.Get("/metrics")
		if err != nil || code != http.StatusOK {
			t.Fatalf("/metrics: %d %v", code, err)
		}
		for _, want := range []string{`kubegcd_ingest_events_total{resource="configmaps",type="added"}`,
			`kubegcd_ingest_resource_synced{resource="pods"} 1`, "kubegcd_db_write_duration_seconds_bucket"} {
			if !strings.Contains(string(body), want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
		// The checkpointer copies the mirror's writes into the database
		// file, within its 2 s of a commit, without an error.
		eventually(t, 30*time.Second, func() error {
			if n := scrape(t, d, "kubegcd_db_checkpoint_duration_seconds_count"); n < 1 {
				return fmt.Errorf("%v checkpoints", n)
			}
			return nil
		})
		if n := scrape(t, d, "kubegcd_db_checkpoint_errors_total"); n != 0 {
			t.Errorf("%v checkpoint errors", n)
		}
		code, body, _ = d.Get("/")
		if code != http.StatusOK || !strings.Contains(string(body), "<title>kubegcd</title>") {
			t.Errorf("UI: %d %.100s", code, body)
		}
	})
}
