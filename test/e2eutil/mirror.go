package e2eutil

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"

	"github.com/kubegcd/kubegcd/internal/db"
)

// MirrorMatches compares, resource by resource, the uid and resourceVersion
// of every object kubegcd's mirror in store holds with a fresh list from
// the API server: a ghost, a missing object or a stale copy is a
// difference. With ns set, it compares the objects of that namespace and
// every cluster-scoped one; else every object. A resource the API server no
// longer serves (a CRD another test removed, which the mirror drops at its
// next discovery) is not what it compares.
func MirrorMatches(ctx context.Context, store *db.DB, meta metadata.Interface, ns string) error {
	resources, err := store.Mirror().Resources(ctx)
	if err != nil {
		return err
	}
	if len(resources) < 20 {
		return fmt.Errorf("only %d resources recorded", len(resources))
	}
	for _, r := range resources {
		gvr := schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Resource}
		scope := ""
		if r.Namespaced {
			scope = ns
		}
		list, err := meta.Resource(gvr).Namespace(scope).List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("listing %s: %w", gvr, err)
		}
		want := make([]string, 0, len(list.Items))
		for _, it := range list.Items {
			want = append(want, string(it.UID)+"@"+it.ResourceVersion)
		}
		got, err := mirrored(ctx, store, r, ns)
		if err != nil {
			return fmt.Errorf("%s: %w", gvr, err)
		}
		slices.Sort(want)
		slices.Sort(got)
		if slices.Equal(got, want) {
			continue
		}
		if len(got)+len(want) > 40 {
			return fmt.Errorf("%s: the mirror has %d objects, the cluster %d (or resourceVersions differ)", gvr, len(got), len(want))
		}
		return fmt.Errorf("%s: the mirror has %v, the cluster %v", gvr, got, want)
	}
	return nil
}

// mirrored returns uid@resourceVersion of the objects of r the mirror
// holds, in namespace ns (and cluster-scoped) when ns is set.
func mirrored(ctx context.Context, store *db.DB, r db.Resource, ns string) ([]string, error) {
	var out []string
	if ns == "" {
		keys, err := store.Objects().ObjectsOf(ctx, r.ID)
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			out = append(out, k.UID+"@"+k.ResourceVersion)
		}
		return out, nil
	}
	group := r.Group
	objs, more, err := store.Objects().LookupObjects(ctx, db.LookupFilter{Kind: r.Resource, Group: &group, Namespace: ns, Limit: 5000})
	if err != nil {
		return nil, err
	}
	if more {
		return nil, fmt.Errorf("more than 5000 objects")
	}
	for _, o := range objs {
		out = append(out, o.UID+"@"+o.ResourceVersion)
	}
	return out, nil
}
