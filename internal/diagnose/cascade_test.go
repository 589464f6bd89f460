package diagnose

import (
	"reflect"
	"testing"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/gcrules"
)

// mirror builds cascade facts by hand: the first object is the root.
type mirror struct {
	objs []*db.CascadeObject
}

func (m *mirror) add(kind, namespace, name string, finalizers []string, owners ...ownedBy) *db.CascadeObject {
	apiVersion := "v1"
	if kind == "Widget" {
		apiVersion = "e2e.kubegcd.io/v1"
	}
	o := &db.CascadeObject{Target: db.Target{APIVersion: apiVersion, Kind: kind, Namespace: namespace, Name: name, UID: "u-" + name},
		Finalizers: finalizers}
	for _, ob := range owners {
		block := ob.block
		o.Refs = append(o.Refs, db.CascadeRef{OwnerRef: db.OwnerRef{APIVersion: ob.o.APIVersion, Kind: ob.o.Kind, Name: ob.o.Name, UID: ob.o.UID,
			BlockOwnerDeletion: &block}, Owner: &db.CascadeOwner{APIVersion: ob.o.APIVersion, Kind: ob.o.Kind, Namespace: ob.o.Namespace,
			Name: ob.o.Name, Deleting: ob.o.Deleting, Finalizers: ob.o.Finalizers}})
		ob.o.HasDependents = true
	}
	m.objs = append(m.objs, o)
	return o
}

type ownedBy struct {
	o     *db.CascadeObject
	block bool
}

func by(o *db.CascadeObject) ownedBy       { return ownedBy{o: o} }
func blocking(o *db.CascadeObject) ownedBy { return ownedBy{o: o, block: true} }

// facts returns the root and those of its transitive dependents in want
// (an object only a kept owner leads to is read too, as the SQL walk does).
func (m *mirror) facts() *db.CascadeFacts {
	return &db.CascadeFacts{Objects: m.objs, Kinds: map[db.GroupKind]bool{
		{Kind: "ConfigMap"}: true, {Kind: "Secret"}: true, {Group: "e2e.kubegcd.io", Kind: "Widget"}: true,
		{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}: false,
	}}
}

// got reduces a preview to what the cases compare: action, depth and rule by
// name.
type got struct {
	Action, Rule string
	Depth        int
}

func summary(c *Cascade) map[string]got {
	out := map[string]got{}
	for _, it := range c.Items {
		out[it.Target.Name] = got{it.Action, it.Rule, it.Depth}
	}
	return out
}

func TestPreviewCascade(t *testing.T) {
	for _, tc := range []struct {
		name        string
		propagation string
		build       func(m *mirror)
		want        map[string]got
		wantBlocked map[string][]string // blocker name → its finalizers
		wantByKind  map[string]map[string]int
	}{
		{
			name: "background: every descendant, a doubly-owned one loses the reference", propagation: gcrules.PropagationBackground,
			build: func(m *mirror) {
				root := m.add("ConfigMap", "ns", "root", nil)
				mid := m.add("Widget", "ns", "mid", nil, by(root))
				m.add("ConfigMap", "ns", "leaf", nil, by(mid))
				other := &db.CascadeObject{Target: db.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "other", UID: "u-other"}}
				m.add("Secret", "ns", "shared", nil, by(mid), by(other))
			},
			want: map[string]got{
				"mid":    {CascadeDelete, gcrules.RuleCascade, 1},
				"leaf":   {CascadeDelete, gcrules.RuleCascade, 2},
				"shared": {CascadeRemoveOwnerRef, gcrules.RuleCascade, 2},
			},
			wantBlocked: map[string][]string{},
			wantByKind: map[string]map[string]int{
				"ConfigMap": {CascadeDelete: 1}, "Widget.e2e.kubegcd.io": {CascadeDelete: 1}, "Secret": {CascadeRemoveOwnerRef: 1},
			},
		},
		{
			name: "orphan: only the direct dependents lose the reference", propagation: gcrules.PropagationOrphan,
			build: func(m *mirror) {
				root := m.add("ConfigMap", "ns", "root", nil)
				mid := m.add("Widget", "ns", "mid", nil, by(root))
				m.add("ConfigMap", "ns", "leaf", nil, by(mid))
				m.add("Secret", "ns", "direct", nil, blocking(root))
			},
			want: map[string]got{
				"mid":    {CascadeRemoveOwnerRef, gcrules.RuleOrphan, 1},
				"direct": {CascadeRemoveOwnerRef, gcrules.RuleOrphan, 1},
			},
			wantBlocked: map[string][]string{},
		},
		{
			name: "foreground: intermediate owners go in the foreground; blocking dependents and their finalizers hold the root",
			build: func(m *mirror) {
				root := m.add("ConfigMap", "ns", "root", nil)
				mid := m.add("Widget", "ns", "mid", nil, blocking(root))
				m.add("ConfigMap", "ns", "held", []string{"e2e.kubegcd.io/hold"}, blocking(mid))
				m.add("ConfigMap", "ns", "free", []string{"e2e.kubegcd.io/hold"}, by(root))
				other := &db.CascadeObject{Target: db.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "other", UID: "u-other"}}
				m.add("Secret", "ns", "shared", nil, blocking(root), by(other))
			},
			propagation: gcrules.PropagationForeground,
			want: map[string]got{
				"mid":    {CascadeDelete, gcrules.RuleForeground, 1},
				"free":   {CascadeDelete, gcrules.RuleCascade, 1},
				"shared": {CascadeRemoveOwnerRef, gcrules.RuleCascade, 1},
				"held":   {CascadeDelete, gcrules.RuleCascade, 2},
			},
			// shared loses its reference, free does not block.
			wantBlocked: map[string][]string{"mid": {}, "held": {"e2e.kubegcd.io/hold"}},
		},
		{
			name: "a dependent with its own orphan finalizer orphans its dependents", propagation: gcrules.PropagationBackground,
			build: func(m *mirror) {
				root := m.add("ConfigMap", "ns", "root", nil)
				mid := m.add("ConfigMap", "ns", "mid", []string{gcrules.FinalizerOrphan}, by(root))
				m.add("ConfigMap", "ns", "leaf", nil, by(mid))
			},
			want: map[string]got{
				"mid":  {CascadeDelete, gcrules.RuleCascade, 1},
				"leaf": {CascadeRemoveOwnerRef, gcrules.RuleOrphan, 2},
			},
			wantBlocked: map[string][]string{},
		},
		{
			name: "an owner deleted further down decides again about a dependent first kept", propagation: gcrules.PropagationBackground,
			build: func(m *mirror) {
				root := m.add("ConfigMap", "ns", "root", nil)
				a := m.add("ConfigMap", "ns", "a", nil, by(root))
				b := m.add("ConfigMap", "ns", "b", nil, by(a))
				// late is reached from root first, while b still stands.
				late := m.add("ConfigMap", "ns", "late", nil, by(root), by(b))
				m.objs[2], m.objs[3] = late, b
			},
			want: map[string]got{
				"a":    {CascadeDelete, gcrules.RuleCascade, 1},
				"b":    {CascadeDelete, gcrules.RuleCascade, 2},
				"late": {CascadeDelete, gcrules.RuleCascade, 1},
			},
			wantBlocked: map[string][]string{},
		},
		{
			name: "a cycle back to the root ends", propagation: gcrules.PropagationBackground,
			build: func(m *mirror) {
				root := m.add("ConfigMap", "ns", "root", nil)
				a := m.add("ConfigMap", "ns", "a", nil, by(root))
				b := m.add("ConfigMap", "ns", "b", nil, by(a))
				root.Refs = []db.CascadeRef{{OwnerRef: db.OwnerRef{APIVersion: "v1", Kind: "ConfigMap", Name: "b", UID: b.UID}}}
			},
			want: map[string]got{
				"a": {CascadeDelete, gcrules.RuleCascade, 1},
				"b": {CascadeDelete, gcrules.RuleCascade, 2},
			},
			wantBlocked: map[string][]string{},
		},
		{
			name: "kept: already being deleted, BR-21-07 cluster-scoped dependent, owner kind not served", propagation: gcrules.PropagationBackground,
			build: func(m *mirror) {
				root := m.add("ConfigMap", "ns", "root", nil)
				deleting := m.add("ConfigMap", "ns", "deleting", []string{"e2e.kubegcd.io/hold"}, by(root))
				deleting.Deleting = true
				m.add("ClusterRole", "", "clusterwide", nil, by(root))
				unserved := m.add("ConfigMap", "ns", "unserved", nil, by(root))
				unserved.Refs = append(unserved.Refs, db.CascadeRef{OwnerRef: db.OwnerRef{APIVersion: "gone.io/v1", Kind: "Gone", Name: "x", UID: "u-x"}})
			},
			want: map[string]got{
				"deleting":    {CascadeKeep, "", 1},
				"clusterwide": {CascadeKeep, gcrules.RuleNamespace, 1},
				"unserved":    {CascadeKeep, gcrules.RuleCascade, 1},
			},
			wantBlocked: map[string][]string{},
		},
		{
			name: "a dependent whose other owner the mirror lacks is deleted (the mirror is taken at its word)", propagation: gcrules.PropagationBackground,
			build: func(m *mirror) {
				root := m.add("ConfigMap", "ns", "root", nil)
				dep := m.add("ConfigMap", "ns", "dep", nil, by(root))
				dep.Refs = append(dep.Refs, db.CascadeRef{OwnerRef: db.OwnerRef{APIVersion: "v1", Kind: "ConfigMap", Name: "ghost", UID: "u-ghost"}})
			},
			want:        map[string]got{"dep": {CascadeDelete, gcrules.RuleCascade, 1}},
			wantBlocked: map[string][]string{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &mirror{}
			tc.build(m)
			c := PreviewCascade(m.facts(), tc.propagation)
			if g := summary(c); !reflect.DeepEqual(g, tc.want) {
				t.Errorf("items:\n got %v\nwant %v", g, tc.want)
			}
			if c.Total != len(c.Items) {
				t.Errorf("total %d, %d items", c.Total, len(c.Items))
			}
			blocked := map[string][]string{}
			for _, b := range c.BlockedBy {
				blocked[b.Target.Name] = b.Finalizers
				if b.Reason == "" {
					t.Errorf("blocker %s has no reason", b.Target.Name)
				}
			}
			if !reflect.DeepEqual(blocked, tc.wantBlocked) {
				t.Errorf("blockedBy:\n got %v\nwant %v", blocked, tc.wantBlocked)
			}
			if tc.wantByKind != nil && !reflect.DeepEqual(c.ByKind, tc.wantByKind) {
				t.Errorf("byKind:\n got %v\nwant %v", c.ByKind, tc.wantByKind)
			}
			for i := 1; i < len(c.Items); i++ {
				if c.Items[i-1].Depth > c.Items[i].Depth {
					t.Errorf("items not ordered by depth: %v", c.Items)
				}
			}
		})
	}
}

func TestPreviewCascadeTruncated(t *testing.T) {
	m := &mirror{}
	m.add("ConfigMap", "ns", "root", nil)
	f := m.facts()
	f.Truncated = true
	if c := PreviewCascade(f, gcrules.PropagationBackground); !c.Truncated || c.Total != 0 {
		t.Errorf("got truncated=%v total=%d, want truncated and nothing", c.Truncated, c.Total)
	}
}
