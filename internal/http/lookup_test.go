package http

import (
	"context"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/diff"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

func TestLookup(t *testing.T) {
	srv, store := testServer(t)
	ctx := context.Background()
	// A second group serving a kind named ConfigMap, with a short name, and
	// a cluster-scoped kind, to see several groups match and namespaces not
	// apply.
	other, err := store.Mirror().EnsureResource(ctx, db.Resource{Group: "example.com", Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true,
		ShortNames: []string{"ecm"}})
	if err != nil {
		t.Fatal(err)
	}
	crs, err := store.Mirror().EnsureResource(ctx, db.Resource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles", Kind: "ClusterRole"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Mirror().ApplyEvents(ctx, []db.Event{
		{ResourceID: other, Object: &db.Object{UID: "uid-ex-A", APIVersion: "example.com/v1", Kind: "ConfigMap", Namespace: "a", Name: "A", ResourceVersion: "1"}},
		{ResourceID: crs, Object: &db.Object{UID: "uid-cr", APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "view", ResourceVersion: "1"}},
	}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		query         string
		want          []string
		wantTruncated bool
	}{
		{query: "kind=ConfigMap&namespace=a&name=A", want: []string{"uid-A", "uid-ex-A"}},
		{query: "kind=configmap&namespace=a&name=A", want: []string{"uid-A", "uid-ex-A"}},
		{query: "kind=CONFIGMAP&name=A", want: []string{"uid-A", "uid-ex-A"}},
		{query: "kind=configmaps&namespace=a&name=A&apiVersion=v1", want: []string{"uid-A"}},
		{query: "kind=ConfigMap&name=A&apiVersion=example.com/v1", want: []string{"uid-ex-A"}},
		{query: "kind=ConfigMap&name=A&apiVersion=example.com/v2", want: []string{"uid-ex-A"}},
		{query: "kind=ConfigMap&name=A&apiVersion=apps/v1", want: []string{}},
		{query: "kind=ConfigMap&namespace=b&name=A", want: []string{}},
		{query: "kind=Nope", want: []string{}},
		{query: "kind=ConfigMaps&apiVersion=v1&name=A", want: []string{"uid-A"}}, // kubectl ignores case in plurals too
		{query: "kind=configmap.v1", want: []string{}},
		{query: "kind=configmaps.example.com&name=A", want: []string{"uid-ex-A"}},
		{query: "kind=ConfigMap.example.com&name=A&apiVersion=v1", want: []string{}},
		{query: "kind=clusterrole.rbac.authorization.k8s.io", want: []string{"uid-cr"}},
		{query: "kind=ConfigMap&apiVersion=v1&namespace=a", want: []string{"uid-A", "uid-B", "uid-D", "uid-E", "uid-G", "uid-L"}},
		{query: "kind=ConfigMap&apiVersion=v1&limit=2", want: []string{"uid-A", "uid-B"}, wantTruncated: true},
		{query: "kind=ConfigMap&apiVersion=v1&limit=6", want: []string{"uid-A", "uid-B", "uid-D", "uid-E", "uid-G", "uid-L"}},
		{query: "kind=clusterroles&namespace=a&name=view", want: []string{"uid-cr"}},
		{query: "kind=ecm&name=A", want: []string{"uid-ex-A"}},
		{query: "kind=ECM&name=A", want: []string{"uid-ex-A"}},
		{query: "kind=ecm&name=A&apiVersion=v1", want: []string{}},
		{query: "kind=ec&name=A", want: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			var out struct {
				Items []struct {
					UID             string           `json:"uid"`
					Name            string           `json:"name"`
					Finalizers      []string         `json:"finalizers"`
					OwnerReferences []map[string]any `json:"ownerReferences"`
				} `json:"items"`
				Truncated bool `json:"truncated"`
			}
			getJSON(t, srv, "/objects?"+tt.query, 200, &out)
			got := []string{}
			for _, it := range out.Items {
				got = append(got, it.UID)
				if it.Finalizers == nil || it.OwnerReferences == nil {
					t.Errorf("%s: finalizers or ownerReferences null, want []", it.UID)
				}
			}
			if !reflect.DeepEqual(tt.want, got) {
				t.Errorf("uids (-want +got):\n%s", diff.Diff(tt.want, got))
			}
			if out.Truncated != tt.wantTruncated {
				t.Errorf("truncated = %v, want %v", out.Truncated, tt.wantTruncated)
			}
		})
	}

	// The summary is /objects/{uid}'s, owner references included.
	var b struct {
		Items []api.Object `json:"items"`
	}
	getJSON(t, srv, "/objects?kind=ConfigMap&namespace=a&name=B&apiVersion=v1", 200, &b)
	var detail api.ObjectDetail
	getJSON(t, srv, "/objects/uid-B", 200, &detail)
	if len(b.Items) != 1 || !reflect.DeepEqual(detail.Object, b.Items[0]) {
		t.Errorf("lookup summary (-want +got):\n%s", diff.Diff(detail.Object, b.Items))
	}
}

func TestLookupBadParameters(t *testing.T) {
	srv, _ := testServer(t)
	for query, want := range map[string]string{
		"":                                "kind is required",
		"name=A":                          "kind is required",
		"kind=ConfigMap&apiVersion=/v1":   `invalid apiVersion "/v1"`,
		"kind=ConfigMap&apiVersion=a/":    `invalid apiVersion "a/"`,
		"kind=ConfigMap&apiVersion=a/b/c": `invalid apiVersion "a/b/c"`,
		"kind=ConfigMap&uid=x":            `unknown query parameter "uid"`,
		"kind=ConfigMap&limit=0":          `invalid limit "0"`,
		"kind=ConfigMap&limit=x":          `invalid limit "x"`,
		"kind=ConfigMap&name=a&name=b":    `"name" given more than once`,
	} {
		t.Run(query, func(t *testing.T) {
			var e errorJSON
			getJSON(t, srv, "/objects?"+query, 400, &e)
			if !strings.Contains(e.Error, want) {
				t.Errorf("error %q lacks %q", e.Error, want)
			}
		})
	}
	// /objects/{uid} is unchanged beside the lookup.
	var e errorJSON
	getJSON(t, srv, "/objects/"+url.PathEscape("no-such"), 404, &e)
}
