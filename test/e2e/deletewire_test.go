package e2e

import (
	"context"
	"net/http"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/kubegcd/kubegcd/internal/reconcile"
)

// sentDelete is one DELETE the client sent and the status it got.
type sentDelete struct {
	path, contentType string
	status            int
}

type recordDeletes struct {
	next http.RoundTripper
	mu   sync.Mutex
	sent []sentDelete
}

func (r *recordDeletes) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err == nil && req.Method == http.MethodDelete {
		r.mu.Lock()
		r.sent = append(r.sent, sentDelete{req.URL.Path, req.Header.Get("Content-Type"), resp.StatusCode})
		r.mu.Unlock()
	}
	return resp, err
}

func (r *recordDeletes) last(t *testing.T) sentDelete {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.sent) == 0 {
		t.Fatal("no DELETE sent")
	}
	return r.sent[len(r.sent)-1]
}

// The controllers' client deletes built-in kinds with protobuf options
// that kube-apiserver honours (preconditions, propagation), and custom
// resources with JSON.
func TestDeleteOptionsOnTheWire(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespaces.New(t, "delete-wire")
	if err := installWidgetCRD(ctx); err != nil {
		t.Fatal(err)
	}
	rec := &recordDeletes{}
	cfg := rest.CopyConfig(cluster.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { rec.next = rt; return rec })
	mc, err := reconcile.NewMetadataClient(cfg)
	if err != nil {
		t.Fatal(err)
	}

	cm, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dep, err := kube.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "dep"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "dep"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "dep"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/c"}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := dyn.Resource(widgetGVR).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "e2e.kubegcd.io/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	bg := metav1.DeletePropagationBackground
	cases := []struct {
		name        string
		gvr         schema.GroupVersionResource
		obj         string
		contentType string
	}{
		{"configmap", schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, cm.Name, runtime.ContentTypeProtobuf},
		{"deployment", schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, dep.Name, runtime.ContentTypeProtobuf},
		{"custom resource", widgetGVR, w.GetName(), runtime.ContentTypeJSON},
	}
	for _, tc := range cases {
		rc := mc.Resource(tc.gvr).Namespace(ns)
		live, err := rc.Get(ctx, tc.obj, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		uid := live.UID
		// A precondition that does not hold: refused, and the object stays.
		wrongRV := "1"
		err = rc.Delete(ctx, tc.obj, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &wrongRV}, PropagationPolicy: &bg})
		if !apierrors.IsConflict(err) {
			t.Errorf("%s: delete with a stale resourceVersion: got %v, want a conflict", tc.name, err)
		}
		if got := rec.last(t); got.contentType != tc.contentType || got.status != http.StatusConflict {
			t.Errorf("%s: sent %s, got %d; want %s and 409", tc.name, got.contentType, got.status, tc.contentType)
		}
		if _, err := rc.Get(ctx, tc.obj, metav1.GetOptions{}); err != nil {
			t.Errorf("%s: gone after a refused delete: %v", tc.name, err)
		}
		// The preconditions that hold: deleted.
		rv := live.ResourceVersion
		if err := rc.Delete(ctx, tc.obj, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}, PropagationPolicy: &bg}); err != nil {
			t.Errorf("%s: delete: %v", tc.name, err)
		}
		if got := rec.last(t); got.contentType != tc.contentType || got.status != http.StatusOK {
			t.Errorf("%s: sent %s, got %d; want %s and 200", tc.name, got.contentType, got.status, tc.contentType)
		}
		if _, err := rc.Get(ctx, tc.obj, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: after the delete: got %v, want not found", tc.name, err)
		}
		// Deleted again: a 404 that names the object.
		err = rc.Delete(ctx, tc.obj, metav1.DeleteOptions{PropagationPolicy: &bg})
		if !apierrors.IsNotFound(err) || reconcile.PathNotServed(err, tc.obj) {
			t.Errorf("%s: second delete: got %v, want a 404 naming the object", tc.name, err)
		}
	}
}
