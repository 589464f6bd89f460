package e2efaults

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/discovery"

	"github.com/kubegcd/kubegcd/internal/api"
)

var apiServiceGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// deadAPIService registers group/version gv as served by a Service of ns
// that has no endpoints, as when an aggregated API server is down, and
// waits until discovery of gv fails. It returns the APIService's name.
func deadAPIService(t *testing.T, ns string, gv schema.GroupVersion) string {
	t.Helper()
	ctx := context.Background()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "dead"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 443, TargetPort: intstr.FromInt32(443)}}}}
	if _, err := kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	name := gv.Version + "." + gv.Group
	api := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"group": gv.Group, "version": gv.Version, "groupPriorityMinimum": int64(1000),
			"versionPriority": int64(15), "insecureSkipTLSVerify": true,
			"service": map[string]any{"namespace": ns, "name": "dead", "port": int64(443)}},
	}}
	if _, err := dyn.Resource(apiServiceGVR).Create(ctx, api, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dyn.Resource(apiServiceGVR).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	dc := discovery.NewDiscoveryClientForConfigOrDie(cluster.Config)
	eventually(t, 60*time.Second, func() error {
		_, err := dc.ServerPreferredResources()
		var gdf *discovery.ErrGroupDiscoveryFailed
		if errors.As(err, &gdf) && gdf.Groups[gv] != nil {
			return nil
		}
		return fmt.Errorf("discovery of %s does not fail yet: %v", gv, err)
	})
	return name
}

// TestAggregatedAPIDiscoveryFails registers an aggregated API whose
// backend is down, and dependents whose owner kind lives in it. Their
// owner can be neither found nor ruled out, so kubegcd must never take it
// for absent: it keeps them, and says why (/objects, /lint) and which group
// fails (/status), while it collects an ordinary orphan of the same
// namespace. With the APIService gone, the kind is not served at all:
// upstream's collector then cannot map it, an error it retries, so the
// dependents stay.
func TestAggregatedAPIDiscoveryFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespaces.New(t, "discovery")
	gv := schema.GroupVersion{Group: "dead.kubegcd.test", Version: "v1"}
	apiService := deadAPIService(t, ns, gv)
	widget := metav1.OwnerReference{APIVersion: gv.String(), Kind: "Widget", Name: "w", UID: uuid.NewUUID()}
	deps := map[string]types.UID{}
	for i := range 3 {
		name := fmt.Sprintf("dep-%d", i)
		deps[name] = createCM(t, ns, name, widget).UID
	}
	orphan := createCM(t, ns, "orphan", ref("never-was", uuid.NewUUID()))

	config := kubeconfig(t, cluster.Config.Host, confinedToken(t, ns))
	d := daemons.WithKubeconfig(config).Start(t, "", append(enforcing, "--discovery-interval=2s")...)
	eventually(t, 30*time.Second, func() error {
		if cmExists(t, ns, "orphan", orphan.UID) {
			return fmt.Errorf("the orphan is still there")
		}
		return nil
	})
	if s := status(t, d); s.DiscoveryFailures[gv.String()] == "" {
		t.Errorf("/status does not name %s among the groups failing discovery: %+v", gv, s.DiscoveryFailures)
	}
	failing := func() float64 {
		return d.Metric(t, "kubegcd_ingest_discovery_failed", "group_version="+gv.String())
	}
	if v := failing(); v != 1 {
		t.Errorf("kubegcd_ingest_discovery_failed{group_version=%q} = %v, want 1", gv, v)
	}
	kept := func(want string) func() error {
		return func() error {
			for name, uid := range deps {
				if !cmExists(t, ns, name, uid) {
					return fmt.Errorf("%s, whose owner cannot be resolved, was deleted", name)
				}
				var obj struct{ Lint []api.LintFinding }
				d.GetJSON(t, "/objects/"+string(uid), 200, &obj)
				if len(obj.Lint) != 1 || obj.Lint[0].Rule != api.LintOwnerKindUnserved.ID || !strings.Contains(obj.Lint[0].Message, want) {
					return fmt.Errorf("/objects/%s: lint %+v, want %s saying %q", uid, obj.Lint, api.LintOwnerKindUnserved.ID, want)
				}
			}
			return nil
		}
	}
	stable(t, 5*time.Second, kept("discovery of dead.kubegcd.test/v1 fails right now"))
	for _, r := range auditOf(t, d, ns) {
		if _, ok := deps[r.Target.Name]; ok {
			t.Fatalf("a decision about %s, whose owner cannot be resolved: %+v", r.Target.Name, r)
		}
	}

	// The APIService goes: the group is no longer failing, it is gone.
	if err := dyn.Resource(apiServiceGVR).Delete(ctx, apiService, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		if f := status(t, d).DiscoveryFailures; len(f) > 0 {
			return fmt.Errorf("/status still lists groups failing discovery: %v", f)
		}
		if v := failing(); v != 0 {
			return fmt.Errorf("kubegcd_ingest_discovery_failed{group_version=%q} = %v", gv, v)
		}
		return nil
	})
	stable(t, 5*time.Second, kept("no resource in the mirror serves Widget.dead.kubegcd.test"))
	for _, r := range auditOf(t, d, ns) {
		if _, ok := deps[r.Target.Name]; ok {
			t.Fatalf("a decision about %s, whose owner kind is not served: %+v", r.Target.Name, r)
		}
	}
}
