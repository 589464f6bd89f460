package diagnose

import (
	"reflect"
	"strings"
	"testing"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/gcrules"
)

// cascadeMirror builds cascade facts by hand: the first object is the root.
type cascadeMirror struct {
	objs []*db.CascadeObject
}

func (m *cascadeMirror) add(kind, namespace, name string, finalizers []string, owners ...cascadeOwnedBy) *db.CascadeObject {
	apiVersion := "v1"
	if kind == "Widget" {
		apiVersion = "e2e.kubegcd.io/v1"
	}
	o := &db.CascadeObject{Target: api.Target{APIVersion: apiVersion, Kind: kind, Namespace: namespace, Name: name, UID: "u-" + name},
		Finalizers: finalizers}
	for _, ob := range owners {
		block := ob.block
		o.Refs = append(o.Refs, db.CascadeRef{OwnerRef: api.OwnerRef{APIVersion: ob.o.APIVersion, Kind: ob.o.Kind, Name: ob.o.Name, UID: ob.o.UID,
			BlockOwnerDeletion: &block}, Owner: &db.CascadeOwner{APIVersion: ob.o.APIVersion, Kind: ob.o.Kind, Namespace: ob.o.Namespace,
			Name: ob.o.Name, Deleting: ob.o.Deleting, Finalizers: ob.o.Finalizers}})
		ob.o.HasDependents = true
	}
	m.objs = append(m.objs, o)
	return o
}

type cascadeOwnedBy struct {
	o     *db.CascadeObject
	block bool
}

func cascadeRef(o *db.CascadeObject) cascadeOwnedBy         { return cascadeOwnedBy{o: o} }
func cascadeBlockingRef(o *db.CascadeObject) cascadeOwnedBy { return cascadeOwnedBy{o: o, block: true} }

// facts returns the objects as db.Cascade does, the root first, with the
// kinds discovery found.
func (m *cascadeMirror) facts() *db.CascadeFacts {
	return &db.CascadeFacts{Objects: m.objs, Kinds: map[db.CascadeKind]bool{
		{Kind: "ConfigMap"}: true, {Kind: "Secret"}: true, {Group: "e2e.kubegcd.io", Kind: "Widget"}: true,
		{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}: false,
	}}
}

// cascadeGot reduces a preview to what the cases compare: action, depth and rule by
// name.
type cascadeGot struct {
	Action api.CascadeAction
	Rule   string
	Depth  int
}

func cascadeSummary(c *api.Cascade) map[string]cascadeGot {
	out := map[string]cascadeGot{}
	for _, it := range c.Items {
		out[it.Target.Name] = cascadeGot{it.Action, it.Rule, it.Depth}
	}
	return out
}

func TestPreviewCascade(t *testing.T) {
	for _, tc := range []struct {
		name        string
		propagation string
		build       func(m *cascadeMirror)
		want        map[string]cascadeGot
		wantBlocked map[string][]string // blocker name → its finalizers
		wantByKind  map[string]map[api.CascadeAction]int
	}{
		{
			name: "background: every descendant, a doubly-owned one loses the reference", propagation: gcrules.PropagationBackground,
			build: func(m *cascadeMirror) {
				root := m.add("ConfigMap", "ns", "root", nil)
				mid := m.add("Widget", "ns", "mid", nil, cascadeRef(root))
				m.add("ConfigMap", "ns", "leaf", nil, cascadeRef(mid))
				other := &db.CascadeObject{Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "other", UID: "u-other"}}
				m.add("Secret", "ns", "shared", nil, cascadeRef(mid), cascadeRef(other))
			},
			want: map[string]cascadeGot{
				"mid":    {api.CascadeDelete, gcrules.RuleCascade, 1},
				"leaf":   {api.CascadeDelete, gcrules.RuleCascade, 2},
				"shared": {api.CascadeRemoveOwnerRef, gcrules.RuleCascade, 2},
			},
			wantBlocked: map[string][]string{},
			wantByKind: map[string]map[api.CascadeAction]int{
				"ConfigMap": {api.CascadeDelete: 1}, "Widget.e2e.kubegcd.io": {api.CascadeDelete: 1}, "Secret": {api.CascadeRemoveOwnerRef: 1},
			},
		},
		{
			name: "orphan: only the direct dependents lose the reference", propagation: gcrules.PropagationOrphan,
			build: func(m *cascadeMirror) {
				root := m.add("ConfigMap", "ns", "root", nil)
				mid := m.add("Widget", "ns", "mid", nil, cascadeRef(root))
				m.add("ConfigMap", "ns", "leaf", nil, cascadeRef(mid))
				m.add("Secret", "ns", "direct", nil, cascadeBlockingRef(root))
			},
			want: map[string]cascadeGot{
				"mid":    {api.CascadeRemoveOwnerRef, gcrules.RuleOrphan, 1},
				"direct": {api.CascadeRemoveOwnerRef, gcrules.RuleOrphan, 1},
			},
			wantBlocked: map[string][]string{},
		},
		{
			name: "foreground: intermediate owners go in the foreground; blocking dependents and their finalizers hold the root",
			build: func(m *cascadeMirror) {
				root := m.add("ConfigMap", "ns", "root", nil)
				mid := m.add("Widget", "ns", "mid", nil, cascadeBlockingRef(root))
				m.add("ConfigMap", "ns", "held", []string{"e2e.kubegcd.io/hold"}, cascadeBlockingRef(mid))
				m.add("ConfigMap", "ns", "free", []string{"e2e.kubegcd.io/hold"}, cascadeRef(root))
				other := &db.CascadeObject{Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "other", UID: "u-other"}}
				m.add("Secret", "ns", "shared", nil, cascadeBlockingRef(root), cascadeRef(other))
			},
			propagation: gcrules.PropagationForeground,
			want: map[string]cascadeGot{
				"mid":    {api.CascadeDelete, gcrules.RuleForeground, 1},
				"free":   {api.CascadeDelete, gcrules.RuleCascade, 1},
				"shared": {api.CascadeRemoveOwnerRef, gcrules.RuleCascade, 1},
				"held":   {api.CascadeDelete, gcrules.RuleCascade, 2},
			},
			// shared loses its reference, free does not block.
			wantBlocked: map[string][]string{"mid": {}, "held": {"e2e.kubegcd.io/hold"}},
		},
		{
			name: "a dependent with its own orphan finalizer orphans its dependents", propagation: gcrules.PropagationBackground,
			build: func(m *cascadeMirror) {
				root := m.add("ConfigMap", "ns", "root", nil)
				mid := m.add("ConfigMap", "ns", "mid", []string{gcrules.FinalizerOrphan}, cascadeRef(root))
				m.add("ConfigMap", "ns", "leaf", nil, cascadeRef(mid))
			},
			want: map[string]cascadeGot{
				"mid":  {api.CascadeDelete, gcrules.RuleCascade, 1},
				"leaf": {api.CascadeRemoveOwnerRef, gcrules.RuleOrphan, 2},
			},
			wantBlocked: map[string][]string{},
		},
		{
			name: "an owner deleted further down decides again about a dependent first kept", propagation: gcrules.PropagationBackground,
			build: func(m *cascadeMirror) {
				root := m.add("ConfigMap", "ns", "root", nil)
				a := m.add("ConfigMap", "ns", "a", nil, cascadeRef(root))
				b := m.add("ConfigMap", "ns", "b", nil, cascadeRef(a))
				// late is reached from root first, while b still stands.
				late := m.add("ConfigMap", "ns", "late", nil, cascadeRef(root), cascadeRef(b))
				m.objs[2], m.objs[3] = late, b
			},
			want: map[string]cascadeGot{
				"a":    {api.CascadeDelete, gcrules.RuleCascade, 1},
				"b":    {api.CascadeDelete, gcrules.RuleCascade, 2},
				"late": {api.CascadeDelete, gcrules.RuleCascade, 1},
			},
			wantBlocked: map[string][]string{},
		},
		{
			name: "a second owner being deleted holds unless it deletes its dependents", propagation: gcrules.PropagationBackground,
			build: func(m *cascadeMirror) {
				root := m.add("ConfigMap", "ns", "root", nil)
				held := &db.CascadeObject{Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "held-owner", UID: "u-held-owner"},
					Deleting: true, Finalizers: []string{"e2e.kubegcd.io/hold"}}
				fg := &db.CascadeObject{Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "fg-owner", UID: "u-fg-owner"},
					Deleting: true, Finalizers: []string{gcrules.FinalizerForeground}}
				m.add("ConfigMap", "ns", "kept", nil, cascadeRef(root), cascadeRef(held))
				m.add("ConfigMap", "ns", "gone", nil, cascadeRef(root), cascadeRef(fg))
			},
			want: map[string]cascadeGot{
				"kept": {api.CascadeRemoveOwnerRef, gcrules.RuleCascade, 1},
				"gone": {api.CascadeDelete, gcrules.RuleCascade, 1},
			},
			wantBlocked: map[string][]string{},
		},
		{
			name: "a cycle back to the root ends", propagation: gcrules.PropagationBackground,
			build: func(m *cascadeMirror) {
				root := m.add("ConfigMap", "ns", "root", nil)
				a := m.add("ConfigMap", "ns", "a", nil, cascadeRef(root))
				b := m.add("ConfigMap", "ns", "b", nil, cascadeRef(a))
				root.Refs = []db.CascadeRef{{OwnerRef: api.OwnerRef{APIVersion: "v1", Kind: "ConfigMap", Name: "b", UID: b.UID}}}
			},
			want: map[string]cascadeGot{
				"a": {api.CascadeDelete, gcrules.RuleCascade, 1},
				"b": {api.CascadeDelete, gcrules.RuleCascade, 2},
			},
			wantBlocked: map[string][]string{},
		},
		{
			name: "kept: already being deleted, BR-21-07 cluster-scoped dependent, owner kind not served", propagation: gcrules.PropagationBackground,
			build: func(m *cascadeMirror) {
				root := m.add("ConfigMap", "ns", "root", nil)
				deleting := m.add("ConfigMap", "ns", "deleting", []string{"e2e.kubegcd.io/hold"}, cascadeRef(root))
				deleting.Deleting = true
				m.add("ClusterRole", "", "clusterwide", nil, cascadeRef(root))
				unserved := m.add("ConfigMap", "ns", "unserved", nil, cascadeRef(root))
				unserved.Refs = append(unserved.Refs, db.CascadeRef{OwnerRef: api.OwnerRef{APIVersion: "gone.io/v1", Kind: "Gone", Name: "x", UID: "u-x"}})
			},
			want: map[string]cascadeGot{
				"deleting":    {api.CascadeKeep, "", 1},
				"clusterwide": {api.CascadeKeep, gcrules.RuleNamespace, 1},
				"unserved":    {api.CascadeKeep, gcrules.RuleCascade, 1},
			},
			wantBlocked: map[string][]string{},
		},
		{
			name: "a dependent whose other owner the mirror lacks is deleted (the mirror is taken at its word)", propagation: gcrules.PropagationBackground,
			build: func(m *cascadeMirror) {
				root := m.add("ConfigMap", "ns", "root", nil)
				dep := m.add("ConfigMap", "ns", "dep", nil, cascadeRef(root))
				dep.Refs = append(dep.Refs, db.CascadeRef{OwnerRef: api.OwnerRef{APIVersion: "v1", Kind: "ConfigMap", Name: "ghost", UID: "u-ghost"}})
			},
			want:        map[string]cascadeGot{"dep": {api.CascadeDelete, gcrules.RuleCascade, 1}},
			wantBlocked: map[string][]string{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &cascadeMirror{}
			tc.build(m)
			c := PreviewCascade(m.facts(), tc.propagation)
			if g := cascadeSummary(c); !reflect.DeepEqual(g, tc.want) {
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
	m := &cascadeMirror{}
	m.add("ConfigMap", "ns", "root", nil)
	f := m.facts()
	f.Truncated = true
	if c := PreviewCascade(f, gcrules.PropagationBackground); !c.Truncated || c.Total != 0 {
		t.Errorf("got truncated=%v total=%d, want truncated and nothing", c.Truncated, c.Total)
	}
}

// TestPreviewCascadeFinalizerWords: a blocking dependent's reason names its
// finalizers in the singular or the plural, as many as it has.
func TestPreviewCascadeFinalizerWords(t *testing.T) {
	m := &cascadeMirror{}
	root := m.add("ConfigMap", "ns", "root", nil)
	m.add("ConfigMap", "ns", "one", []string{"example.com/a"}, cascadeBlockingRef(root))
	m.add("ConfigMap", "ns", "two", []string{"example.com/a", "example.com/b"}, cascadeBlockingRef(root))
	want := map[string]string{
		"one": "; finalizer example.com/a holds it until its controller removes it",
		"two": "; finalizers example.com/a, example.com/b hold it until their controllers remove them",
	}
	c := PreviewCascade(m.facts(), gcrules.PropagationForeground)
	for _, b := range c.BlockedBy {
		if w := want[b.Target.Name]; !strings.HasSuffix(b.Reason, w) {
			t.Errorf("%s: reason %q, want it to end %q", b.Target.Name, b.Reason, w)
		}
		delete(want, b.Target.Name)
	}
	for name := range want {
		t.Errorf("%s is not among the blockers %v", name, c.BlockedBy)
	}
}
