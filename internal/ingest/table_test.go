package ingest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubegcd/kubegcd/internal/db"
)

// tableColumns are the columns kube-apiserver prints of a Secret.
const tableColumns = `"columnDefinitions":[{"name":"Name"},{"name":"Type"},{"name":"Data"},{"name":"Age"}]`

func tableRowJSONOf(name, typ, rv string) string {
	return fmt.Sprintf(`{"cells":[%q,%q,2,"1s"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1",`+
		`"metadata":{"name":%q,"namespace":"ns","uid":"uid-%s","resourceVersion":%q}}}`, name, typ, name, name, rv)
}

// describeItems is what a source's items say: kind of Go value, name,
// resourceVersion and the Secret's type as extracted.
func describeItems(t *testing.T, objs ...runtime.Object) []string {
	t.Helper()
	var out []string
	for _, obj := range objs {
		m, err := metaOf(obj)
		if err != nil {
			t.Fatal(err)
		}
		var o db.Object
		tableResources[secrets].extract(obj, &o)
		typ := "-"
		if o.Secret != nil {
			typ = o.Secret.Type
		}
		out = append(out, fmt.Sprintf("%T %s@%s %s", obj, m.GetName(), m.GetResourceVersion(), typ))
	}
	return out
}

// TestTableSource: a list page and a watch of Tables as kube-apiserver
// sends them: the column found by its name, in a watch from the first
// event's definitions, a bookmark's resourceVersion, an error's Status.
func TestTableSource(t *testing.T) {
	var accept, includeObject []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		accept = append(accept, r.Header.Get("Accept"))
		includeObject = append(includeObject, r.URL.Query().Get("includeObject"))
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") != "true" {
			fmt.Fprintf(w, `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"10",`+
				`"continue":"next"},%s,"rows":[%s,%s]}`, tableColumns, tableRowJSONOf("a", "Opaque", "5"),
				tableRowJSONOf("b", "kubernetes.io/tls", "6"))
			return
		}
		for _, line := range []string{
			`{"type":"ADDED","object":{"kind":"Table",` + tableColumns + `,"rows":[` +
				tableRowJSONOf("c", "kubernetes.io/dockerconfigjson", "11") + `]}}`,
			`{"type":"DELETED","object":{"kind":"Table","rows":[` + tableRowJSONOf("a", "Opaque", "12") + `]}}`,
			`{"type":"BOOKMARK","object":{"kind":"Table","rows":[{"cells":["","",0,"<unknown>"],` +
				`"object":{"kind":"PartialObjectMetadata","metadata":{"resourceVersion":"13"}}}]}}`,
			`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure",` +
				`"message":"too old resource version: 1 (13)","reason":"Expired","code":410}}`,
		} {
			fmt.Fprintln(w, line)
		}
	}))
	defer srv.Close()
	c, err := rest.RESTClientFor(tableConfig(&rest.Config{Host: srv.URL}))
	if err != nil {
		t.Fatal(err)
	}
	src := newTableSource(c, "secrets", "Type")
	items, rv, cont, err := src.list(context.Background(), metav1.ListOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if rv != "10" || cont != "next" {
		t.Errorf("list at %q, continue %q; want 10 and next", rv, cont)
	}
	if diff := cmp.Diff([]string{"*ingest.tableRow a@5 Opaque", "*ingest.tableRow b@6 kubernetes.io/tls"},
		describeItems(t, items...)); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}

	// A watch: the decoder must learn the column afresh.
	src = newTableSource(c, "secrets", "Type")
	wi, err := src.watch(context.Background(), metav1.ListOptions{ResourceVersion: "10"})
	if err != nil {
		t.Fatal(err)
	}
	defer wi.Stop()
	var got []string
	var last error
	for ev := range wi.ResultChan() {
		if ev.Type == watch.Error {
			last = apierrors.FromObject(ev.Object)
			continue
		}
		got = append(got, string(ev.Type)+" "+describeItems(t, ev.Object)[0])
	}
	want := []string{"ADDED *ingest.tableRow c@11 kubernetes.io/dockerconfigjson", "DELETED *ingest.tableRow a@12 Opaque",
		"BOOKMARK *v1.PartialObjectMetadata @13 -"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("watch (-want +got):\n%s", diff)
	}
	if !apierrors.IsResourceExpired(last) {
		t.Errorf("the watch's error: %v, want it expired", last)
	}
	for i := range accept {
		if accept[i] != tableAccept || includeObject[i] != "Metadata" {
			t.Errorf("request %d: Accept %q, includeObject %q", i, accept[i], includeObject[i])
		}
	}
}

// TestSecretsAsTablesFromKubeAPIServer: kube-apiserver serves Secrets as
// Tables to a list and to a watch, each row with the Secret's type and no
// data, and its errors decode as API errors.
func TestSecretsAsTablesFromKubeAPIServer(t *testing.T) {
	cluster := controlPlane(t)
	ctx := context.Background()
	kube := kubernetes.NewForConfigOrDie(cluster.Config)
	ns := fmt.Sprintf("tables-%d", time.Now().UnixNano())
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const value = "tables-secret-value-7f3c"
	mk := func(name string, typ corev1.SecretType, data map[string][]byte) {
		t.Helper()
		if _, err := kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name},
			Type: typ, Data: data}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mk("opaque", corev1.SecretTypeOpaque, map[string][]byte{"k": []byte(value)})
	mk("tls", corev1.SecretTypeTLS, map[string][]byte{"tls.crt": []byte(value), "tls.key": []byte(value)})

	c, err := rest.RESTClientFor(tableConfig(cluster.Config))
	if err != nil {
		t.Fatal(err)
	}
	src := newTableSource(c, "secrets", "Type")
	// mine says what an item of ns is: its name and type.
	mine := func(obj runtime.Object) (string, bool) {
		t.Helper()
		m, err := metaOf(obj)
		if err != nil || m.GetNamespace() != ns {
			return "", false
		}
		var o db.Object
		tableResources[secrets].extract(obj, &o)
		if o.Secret == nil {
			t.Errorf("%s: no type", m.GetName())
			return m.GetName(), true
		}
		return m.GetName() + " " + o.Secret.Type, true
	}
	// Pages of one, as a list across continue tokens.
	var listed []string
	opts := metav1.ListOptions{Limit: 1}
	var rv string
	for {
		items, pageRV, cont, err := src.list(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range items {
			if d, ok := mine(obj); ok {
				listed = append(listed, d)
			}
		}
		rv = pageRV
		if cont == "" {
			break
		}
		opts.Continue = cont
	}
	if diff := cmp.Diff([]string{"opaque Opaque", "tls kubernetes.io/tls"}, listed); diff != "" {
		t.Errorf("listed (-want +got):\n%s", diff)
	}

	timeout := int64(10)
	wi, err := src.watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true,
		TimeoutSeconds: &timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer wi.Stop()
	mk("pull", corev1.SecretTypeDockerConfigJson, map[string][]byte{".dockerconfigjson": []byte(`{"auths":{}}`)})
	if err := kube.CoreV1().Secrets(ns).Delete(ctx, "opaque", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var events []string
	for ev := range wi.ResultChan() {
		if ev.Type == watch.Error {
			t.Fatalf("watch: %v", apierrors.FromObject(ev.Object))
		}
		if d, ok := mine(ev.Object); ok && ev.Type != watch.Bookmark {
			events = append(events, string(ev.Type)+" "+d)
		}
		if len(events) == 2 {
			break
		}
	}
	if diff := cmp.Diff([]string{"ADDED pull kubernetes.io/dockerconfigjson", "DELETED opaque Opaque"},
		events); diff != "" {
		t.Errorf("watch (-want +got):\n%s", diff)
	}

	// The API server's refusals decode as API errors.
	if _, _, _, err := src.list(ctx, metav1.ListOptions{Limit: 1, Continue: "bogus"}); !apierrors.IsBadRequest(err) {
		t.Errorf("a bogus continue token: %v, want a bad request", err)
	}
}
