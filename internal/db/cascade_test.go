package db

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

func cascadeUIDList(f *CascadeFacts) string {
	var out []string
	for _, o := range f.Objects {
		out = append(out, o.UID)
	}
	return strings.Join(out, ",")
}

func TestCascade(t *testing.T) {
	d := graphFixture(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name, root    string
		limit         int
		want          string // the root, then the others sorted
		wantTruncated bool
	}{
		{name: "chain, and a dependent naming the root under another name", root: "A", limit: 10, want: "A,B,C,N"},
		{name: "a cycle ends", root: "M1", limit: 10, want: "M1,M2"},
		{name: "a leaf", root: "L", limit: 10, want: "L"},
		{name: "limit", root: "A", limit: 2, want: "A,B,N", wantTruncated: true},
		{name: "exactly the limit", root: "A", limit: 3, want: "A,B,C,N"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := d.Objects().Cascade(ctx, tc.root, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			rest := f.Objects[1:]
			slices.SortFunc(rest, func(a, b *CascadeObject) int { return strings.Compare(a.UID, b.UID) })
			if got := cascadeUIDList(f); got != tc.want || f.Truncated != tc.wantTruncated {
				t.Errorf("got %s truncated=%v, want %s truncated=%v", got, f.Truncated, tc.want, tc.wantTruncated)
			}
		})
	}

	t.Run("facts", func(t *testing.T) {
		f, err := d.Objects().Cascade(ctx, "D", 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Objects) != 2 {
			t.Fatalf("objects %s, want D,E", cascadeUIDList(f))
		}
		root, e := f.Objects[0], f.Objects[1]
		if !root.Deleting || !slices.Equal(root.Finalizers, []string{"foregroundDeletion"}) || !root.HasDependents || len(root.Refs) != 0 {
			t.Errorf("root %+v", root)
		}
		if len(e.Refs) != 1 || e.Refs[0].UID != "D" || e.Refs[0].Owner == nil || !e.Refs[0].Owner.Deleting ||
			!slices.Equal(e.Refs[0].Owner.Finalizers, []string{"foregroundDeletion"}) || e.HasDependents {
			t.Errorf("dependent %+v, refs %+v", e, e.Refs)
		}
		if ns, ok := f.Kinds[CascadeKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}]; !ok || ns {
			t.Errorf("ClusterRole kind: namespaced=%v known=%v", ns, ok)
		}
	})

	t.Run("owners outside the walk and missing ones", func(t *testing.T) {
		f, err := d.Objects().Cascade(ctx, "P", 10)
		if err != nil {
			t.Fatal(err)
		}
		var q *CascadeObject
		for _, o := range f.Objects {
			if o.UID == "Q" {
				q = o
			}
		}
		if q == nil || len(q.Refs) != 2 || q.Refs[1].Owner == nil || q.Refs[1].Owner.Kind != "ClusterRole" {
			t.Fatalf("Q %+v", q)
		}
		g, err := d.Objects().Cascade(ctx, "A", 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range g.Objects {
			if o.UID == "N" && (len(o.Refs) != 1 || o.Refs[0].Owner == nil || o.Refs[0].Owner.Name != "A" || o.Refs[0].Name != "not-A") {
				t.Errorf("N %+v", o.Refs)
			}
		}
	})

	if _, err := d.Objects().Cascade(ctx, "ghost", 10); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown uid: %v, want ErrNotFound", err)
	}
}
