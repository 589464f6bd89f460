package ingest

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/refs"
)

func mustPath(t *testing.T, s string) refs.Path {
	t.Helper()
	p, err := refs.ParsePath(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestExtractionOf: how each kind is read and what is kept of it. Custom
// kinds with declared paths come through the dynamic client; a built-in
// kind with a declared path stays typed and gets both; a path never makes
// Secrets be read in full; a target kind discovery finds cluster-scoped
// has references without a namespace.
func TestExtractionOf(t *testing.T) {
	labels, err := ParseKeyAllowList("*=[app]")
	if err != nil {
		t.Fatal(err)
	}
	i, err := New(Options{Config: offlineConfig, MirrorLabels: labels, ReferencePaths: []refs.Path{
		mustPath(t, "Gateway.gateway.networking.k8s.io:{.spec.listeners[*].tls.certificateRefs[*]}:Secret"),
		mustPath(t, "Certificate.cert-manager.io:{.spec.issuerRef.name}:ClusterIssuer.cert-manager.io"),
		mustPath(t, "Deployment.apps:{.metadata.annotations.example\\.com/config}:ConfigMap"),
		mustPath(t, "Secret:{.metadata.annotations.x}:ConfigMap"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	i.setKindScopes(map[schema.GroupVersionResource]resourceInfo{
		{Version: "v1", Resource: "secrets"}:                                  {kind: "Secret", namespaced: true},
		{Group: "cert-manager.io", Version: "v1", Resource: "clusterissuers"}: {kind: "ClusterIssuer"},
	})
	source := func(x *extraction) string {
		switch x.src.(type) {
		case clientSource[*unstructured.UnstructuredList]:
			return "dynamic"
		case clientSource[*metav1.PartialObjectMetadataList]:
			return "metadata"
		case tableSource:
			return "table"
		}
		return "typed"
	}
	gvr := func(group, version, resource string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: group, Version: version, Resource: resource}
	}

	gw := i.extractionOf(gvr("gateway.networking.k8s.io", "v1", "gateways"), "Gateway", "gateways")
	if got := source(gw); got != "dynamic" {
		t.Errorf("Gateways read through %s, want dynamic", got)
	}
	var o db.Object
	gw.extract(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
		"metadata": map[string]any{"namespace": "ns", "name": "gw", "labels": map[string]any{"app": "a", "x": "y"}},
		"spec": map[string]any{"listeners": []any{map[string]any{"tls": map[string]any{"certificateRefs": []any{
			map[string]any{"name": "cert"}}}}}}}}, &o)
	want := db.Object{Labels: []db.KeyValue{{Key: "app", Value: "a"}}, Refs: []db.Ref{{Kind: "Secret",
		Namespace: "ns", Name: "cert", Via: "{.spec.listeners[*].tls.certificateRefs[*]}"}}}
	if diff := cmp.Diff(want, o); diff != "" {
		t.Errorf("Gateway (-want +got):\n%s", diff)
	}

	cert := i.extractionOf(gvr("cert-manager.io", "v1", "certificates"), "Certificate", "certificates")
	o = db.Object{}
	cert.extract(&unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"namespace": "ns", "name": "c"},
		"spec":     map[string]any{"issuerRef": map[string]any{"name": "letsencrypt"}}}}, &o)
	if want := []db.Ref{{Group: "cert-manager.io", Kind: "ClusterIssuer", Name: "letsencrypt",
		Via: "{.spec.issuerRef.name}"}}; !cmp.Equal(o.Refs, want) {
		t.Errorf("Certificate refs %+v, want %+v (a cluster-scoped target)", o.Refs, want)
	}

	deploy := i.extractionOf(gvr("apps", "v1", "deployments"), "Deployment", "apps/deployments")
	if got := source(deploy); got != "typed" {
		t.Errorf("Deployments read through %s, want typed", got)
	}
	o = db.Object{}
	deploy.extract(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "d",
		Annotations: map[string]string{"example.com/config": "settings"}},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{ServiceAccountName: "sa"}}}}, &o)
	if want := []db.Ref{
		{Kind: "ServiceAccount", Namespace: "ns", Name: "sa", Via: "spec.template.spec.serviceAccountName"},
		{Kind: "ConfigMap", Namespace: "ns", Name: "settings", Via: "{.metadata.annotations.example\\.com/config}"},
	}; !cmp.Equal(o.Refs, want) {
		t.Errorf("Deployment refs %+v, want %+v", o.Refs, want)
	}

	secret := i.extractionOf(gvr("", "v1", "secrets"), "Secret", "secrets")
	if got := source(secret); got != "table" || len(secret.paths) != 0 {
		t.Errorf("Secrets read through %s with %d paths, want a table and none", got, len(secret.paths))
	}
	cm := i.extractionOf(gvr("", "v1", "configmaps"), "ConfigMap", "configmaps")
	if got := source(cm); got != "metadata" || cm.extracted != "" {
		t.Errorf("ConfigMaps read through %s, extraction %q; want metadata and nothing", got, cm.extracted)
	}

	// The fingerprints change with what is extracted and kept.
	if deploy.extracted == gw.extracted || deploy.extracted == i.extractionOf(gvr("apps", "v1", "replicasets"),
		"ReplicaSet", "rs").extracted {
		t.Errorf("fingerprints alike: %q, %q", deploy.extracted, gw.extracted)
	}
	keys := slices.Sorted(slices.Values(append([]string{"app"}, db.KeptLabelKeys...)))
	if want := "labels=" + strings.Join(keys, ",") + ";annotations="; !strings.HasPrefix(cm.keptKeys, want) {
		t.Errorf("kept keys %q, want them to start %q", cm.keptKeys, want)
	}
}
