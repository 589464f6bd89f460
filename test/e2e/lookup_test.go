package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
)

type lookupItem struct {
	UID        string `json:"uid"`
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
}

type lookupReply struct {
	Items     []lookupItem `json:"items"`
	Truncated bool         `json:"truncated"`
}

// TestLookupByName finds objects by kind, plural, singular or short name,
// with and without apiVersion, among them a kind two API groups serve,
// against the real API server's discovery. Dry-run only (the default).
func TestLookupByName(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespaces.New(t, "lookup-"+string(uuid.NewUUID())[:8])
	// Gadget is served by two groups: a lookup without apiVersion finds both.
	groups := []string{"a.lookup.e2e.kubegcd.io", "b.lookup.e2e.kubegcd.io"}
	gadgets := map[string]string{}
	for _, g := range groups {
		if err := createCRD(ctx, g, "gadgets", "Gadget", "Namespaced"); err != nil {
			t.Fatal(err)
		}
		gvr := schema.GroupVersionResource{Group: g, Version: "v1", Resource: "gadgets"}
		obj, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": g + "/v1", "kind": "Gadget", "metadata": map[string]any{"name": "g"},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		gadgets[g] = string(obj.GetUID())
	}
	cm, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-x"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	widget, err := dyn.Resource(widgetGVR).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "e2e.kubegcd.io/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	namespace, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	d := daemons.Start(t, "", "--discovery-interval=2s")
	q := url.Values{"namespace": {ns}}.Encode()
	// Everything created before the start is mirrored once both gadget
	// groups are discovered and every watched resource has been listed.
	eventually(t, 60*time.Second, func() error {
		code, body, err := d.Get("/objects?kind=Gadget&" + q)
		if err != nil || code != http.StatusOK {
			return fmt.Errorf("GET /objects: %d %s %v", code, body, err)
		}
		if !strings.Contains(string(body), gadgets[groups[0]]) || !strings.Contains(string(body), gadgets[groups[1]]) {
			return fmt.Errorf("gadgets not mirrored yet: %s", body)
		}
		return nil
	})
	d.WaitReady(t, 60*time.Second)

	tests := []struct {
		name, query string
		want        []string
	}{
		{"kind", "kind=ConfigMap&name=cm-x&" + q, []string{string(cm.UID)}},
		{"plural", "kind=configmaps&name=cm-x&" + q, []string{string(cm.UID)}},
		{"singular", "kind=configmap&name=cm-x&" + q, []string{string(cm.UID)}},
		{"short name from discovery", "kind=cm&name=cm-x&" + q, []string{string(cm.UID)}},
		{"short name in upper case", "kind=CM&name=cm-x&" + q, []string{string(cm.UID)}},
		{"with apiVersion", "kind=ConfigMap&apiVersion=v1&name=cm-x&" + q, []string{string(cm.UID)}},
		{"apiVersion of another group", "kind=ConfigMap&apiVersion=apps/v1&name=cm-x&" + q, []string{}},
		{"two groups", "kind=Gadget&name=g&" + q, []string{gadgets[groups[0]], gadgets[groups[1]]}},
		{"plural of one group", "kind=gadgets&apiVersion=" + groups[1] + "/v1&name=g&" + q, []string{gadgets[groups[1]]}},
		{"plural.group", "kind=gadgets." + groups[0] + "&name=g&" + q, []string{gadgets[groups[0]]}},
		{"custom resource without a name", "kind=Widget&" + q, []string{string(widget.GetUID())}},
		{"cluster-scoped, namespace ignored", "kind=namespaces&name=" + ns + "&" + q, []string{string(namespace.UID)}},
		{"unknown kind", "kind=NoSuchKind&" + q, []string{}},
		{"unknown name", "kind=ConfigMap&name=no-such&" + q, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got lookupReply
			d.GetJSON(t, "/objects?"+tt.query, http.StatusOK, &got)
			uids := []string{}
			for _, it := range got.Items {
				uids = append(uids, it.UID)
			}
			if got.Items == nil || !slices.Equal(uids, tt.want) {
				t.Errorf("GET /objects?%s: uids %v, want %v", tt.query, uids, tt.want)
			}
			// Each uid found leads to /objects/{uid}.
			for _, uid := range uids {
				d.GetJSON(t, "/objects/"+uid, http.StatusOK, nil)
			}
		})
	}
	t.Run("bad parameters", func(t *testing.T) {
		for _, query := range []string{"", "name=cm-x", "kind=ConfigMap&apiVersion=a/b/c", "kind=ConfigMap&apiVersion=/v1",
			"kind=ConfigMap&nmespace=" + ns, "kind=ConfigMap&limit=0", "kind=ConfigMap&limit=ten"} {
			var e struct {
				Error string `json:"error"`
			}
			d.GetJSON(t, "/objects?"+query, http.StatusBadRequest, &e)
			if e.Error == "" {
				t.Errorf("GET /objects?%s: no error message", query)
			}
		}
	})
}
