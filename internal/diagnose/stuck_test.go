package diagnose

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/diff"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

func TestWhoRemoves(t *testing.T) {
	tests := []struct {
		finalizer string
		gc        Collector
		want      string
	}{
		{"kubernetes.io/pvc-protection", UpstreamGC, "the PVC protection controller (kube-controller-manager), once no pod uses the claim"},
		{"kubernetes.io/pv-protection", UpstreamGC, "the PV protection controller (kube-controller-manager), once no claim is bound to the volume"},
		{"kubernetes", UpstreamGC, "the namespace controller (kube-controller-manager), once it has deleted everything in the namespace"},
		{"foregroundDeletion", Kubegcd, "the garbage collector (kubegcd's ownergc), once no dependent with blockOwnerDeletion: true is left"},
		{"foregroundDeletion", UpstreamGC, "the garbage collector (kube-controller-manager's, if it runs: kubegcd's ownergc does not), once no dependent with blockOwnerDeletion: true is left"},
		{"orphan", KubegcdDryRun, "the garbage collector (kube-controller-manager's, if it runs: kubegcd's ownergc is in dry-run and only records what it would do), once it has removed the ownerReference to this object from every dependent"},
		{"batch.kubernetes.io/job-tracking", UpstreamGC, "the Job controller (kube-controller-manager), once it has counted the pod"},
		{"service.kubernetes.io/load-balancer-cleanup", UpstreamGC, "the service controller (cloud-controller-manager), once the load balancer is deleted"},
		{"example.com/hold", UpstreamGC, "the controller of example.com"},
		{"kubernetes.io/some-other", UpstreamGC, "the controller of kubernetes.io"},
		{"cleanup/hold", UpstreamGC, "whoever added it (its name names no controller)"},
		{"my-finalizer", UpstreamGC, "whoever added it (its name names no controller)"},
	}
	for _, tt := range tests {
		t.Run(tt.finalizer, func(t *testing.T) {
			if got := WhoRemoves(tt.finalizer, tt.gc); got != tt.want {
				t.Errorf("WhoRemoves(%q) = %q, want %q", tt.finalizer, got, tt.want)
			}
		})
	}
}

var stuckNow = time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC)

// obj is a ConfigMap in ns "a" whose deletion was asked for ago before
// stuckNow (not deleted when ago is 0).
func obj(name string, ago time.Duration, finalizers ...string) *db.Object {
	o := &db.Object{UID: "uid-" + name, APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: name, Finalizers: finalizers}
	if ago > 0 {
		ts := stuckNow.Add(-ago)
		o.DeletionTimestamp = &ts
	}
	return o
}

func namespace(name string, ago time.Duration) *db.Object {
	o := obj(name, ago)
	o.Kind, o.Namespace = "Namespace", ""
	return o
}

func target(o *db.Object) *api.Target { t := targetOf(o); return &t }

func TestStuckBlockers(t *testing.T) {
	held := obj("held", time.Minute, "example.com/hold")
	owner := obj("owner", 10*time.Minute, "foregroundDeletion")
	dep := obj("dep", 2*time.Minute, "example.com/hold")
	idle := obj("idle", 0)
	orphan := obj("orphaned", time.Minute, "orphan")
	// A cycle of owners deleting in the foreground, each blocking the other.
	c1, c2 := obj("c1", time.Hour, "foregroundDeletion"), obj("c2", time.Hour, "foregroundDeletion")
	ns := namespace("a", 3*time.Minute)
	// As the namespace controller leaves a namespace it cannot empty.
	nsConditions := []db.Condition{
		{Type: "NamespaceDeletionDiscoveryFailure", Status: "False", Reason: "ResourcesDiscovered", Message: "All resources successfully discovered"},
		{Type: "NamespaceFinalizersRemaining", Status: "True", Reason: "SomeFinalizersRemain", Message: "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"},
	}
	nsStatus := namespace("a", 3*time.Minute)
	nsStatus.NamespaceStatus = &db.NamespaceStatus{Phase: "Terminating", SpecFinalizers: []string{"kubernetes"}, Conditions: nsConditions}
	nsDone := namespace("a", 3*time.Minute)
	nsDone.NamespaceStatus = &db.NamespaceStatus{Phase: "Terminating"}
	pod := &db.Object{UID: "uid-pod", APIVersion: "v1", Kind: "Pod", Namespace: "a", Name: "p",
		DeletionTimestamp: ptr(stuckNow.Add(30 * time.Second)), DeletionGracePeriodSeconds: ptr(int64(90)), Pod: &db.Pod{NodeName: "n1"}}

	gcDue := "the garbage collector (kube-controller-manager's, if it runs: kubegcd's ownergc does not), once no dependent with blockOwnerDeletion: true is left"
	tests := []struct {
		name      string
		data      *db.StuckData
		discovery map[string]string
		want      []api.StuckItem
		words     []string // in the first item's explanation
	}{{
		name: "a domain finalizer",
		data: &db.StuckData{Objects: []*db.Object{held}},
		want: []api.StuckItem{{Target: *target(held), DeletionRequested: stuckNow.Add(-time.Minute), Age: 60, State: api.StateFinalizing,
			Blockers: []api.Blocker{{Type: api.BlockerFinalizer, Finalizer: "example.com/hold", Reason: "the controller of example.com"}}}},
		words: []string{"ConfigMap a/held was asked to be deleted 1m0s ago", "held by its finalizer example.com/hold, to be removed by the controller of example.com"},
	}, {
		name: "a foreground chain owner ← dependent ← finalizer, and a dependent not deleted yet",
		data: &db.StuckData{Objects: []*db.Object{owner}, Blocking: map[string][]*db.Object{owner.UID: {dep, idle}}},
		want: []api.StuckItem{{Target: *target(owner), DeletionRequested: stuckNow.Add(-10 * time.Minute), Age: 600, State: api.StateDeletingDependents,
			Blockers: []api.Blocker{
				{Type: api.BlockerFinalizer, Finalizer: "foregroundDeletion", Reason: gcDue},
				{Type: api.BlockerDependent, Target: target(dep), Reason: "has blockOwnerDeletion: true and was asked to be deleted 2m0s ago",
					Blockers: []api.Blocker{{Type: api.BlockerFinalizer, Finalizer: "example.com/hold", Reason: "the controller of example.com"}}},
				{Type: api.BlockerDependent, Target: target(idle), Reason: "has blockOwnerDeletion: true and is not being deleted yet: the garbage collector deletes it first"},
			}}},
		words: []string{"It waits for its dependent ConfigMap a/dep, which has blockOwnerDeletion: true and was asked to be deleted 2m0s ago, held by its finalizer example.com/hold (the controller of example.com)"},
	}, {
		name: "foreground with nothing left to wait for, and more dependents than named",
		data: &db.StuckData{Objects: []*db.Object{owner, c1},
			Blocking: map[string][]*db.Object{owner.UID: nil, c1.UID: {}}, MoreBlocking: map[string]int{c1.UID: 3}},
		want: []api.StuckItem{{Target: *target(owner), DeletionRequested: stuckNow.Add(-10 * time.Minute), Age: 600, State: api.StateDeletingDependents,
			Blockers: []api.Blocker{{Type: api.BlockerFinalizer, Finalizer: "foregroundDeletion", Reason: gcDue + "; none is left, so it is due now"}}},
			{Target: *target(c1), DeletionRequested: stuckNow.Add(-time.Hour), Age: 3600, State: api.StateDeletingDependents,
				Blockers: []api.Blocker{{Type: api.BlockerFinalizer, Finalizer: "foregroundDeletion", Reason: gcDue},
					{Type: api.BlockerDependent, Reason: "3 more dependents with blockOwnerDeletion: true"}}}},
	}, {
		name: "orphaning waits for the dependents that still name it",
		data: &db.StuckData{Objects: []*db.Object{orphan}, Orphaning: map[string][]*db.Object{orphan.UID: {idle}},
			MoreOrphaning: map[string]int{orphan.UID: 2}},
		want: []api.StuckItem{{Target: *target(orphan), DeletionRequested: stuckNow.Add(-time.Minute), Age: 60, State: api.StateOrphaningDependents,
			Blockers: []api.Blocker{
				{Type: api.BlockerFinalizer, Finalizer: "orphan", Reason: "the garbage collector (kube-controller-manager's, if it runs: kubegcd's ownergc does not), once it has removed the ownerReference to this object from every dependent"},
				{Type: api.BlockerDependent, Target: target(idle), Reason: "still names it as an owner: the garbage collector removes that reference before it removes orphan"},
				{Type: api.BlockerDependent, Reason: "2 more dependents that still name it as an owner"},
			}}},
		words: []string{"It waits for its dependent ConfigMap a/idle, which still names it as an owner", "It waits for 2 more dependents"},
	}, {
		name: "one more dependent of each kind, in the singular",
		data: &db.StuckData{Objects: []*db.Object{orphan, c1}, MoreOrphaning: map[string]int{orphan.UID: 1},
			Blocking: map[string][]*db.Object{c1.UID: {}}, MoreBlocking: map[string]int{c1.UID: 1}},
		want: []api.StuckItem{{Target: *target(orphan), DeletionRequested: stuckNow.Add(-time.Minute), Age: 60, State: api.StateOrphaningDependents,
			Blockers: []api.Blocker{
				{Type: api.BlockerFinalizer, Finalizer: "orphan", Reason: "the garbage collector (kube-controller-manager's, if it runs: kubegcd's ownergc does not), once it has removed the ownerReference to this object from every dependent"},
				{Type: api.BlockerDependent, Reason: "1 more dependent that still names it as an owner"},
			}},
			{Target: *target(c1), DeletionRequested: stuckNow.Add(-time.Hour), Age: 3600, State: api.StateDeletingDependents,
				Blockers: []api.Blocker{{Type: api.BlockerFinalizer, Finalizer: "foregroundDeletion", Reason: gcDue},
					{Type: api.BlockerDependent, Reason: "1 more dependent with blockOwnerDeletion: true"}}}},
		words: []string{"It waits for 1 more dependent that still names it as an owner"},
	}, {
		name: "a cycle of foreground owners ends",
		data: &db.StuckData{Objects: []*db.Object{c1}, Blocking: map[string][]*db.Object{c1.UID: {c2}, c2.UID: {c1}}},
		want: []api.StuckItem{{Target: *target(c1), DeletionRequested: stuckNow.Add(-time.Hour), Age: 3600, State: api.StateDeletingDependents,
			Blockers: []api.Blocker{{Type: api.BlockerFinalizer, Finalizer: "foregroundDeletion", Reason: gcDue},
				{Type: api.BlockerDependent, Target: target(c2), Reason: "has blockOwnerDeletion: true and was asked to be deleted 1h0m0s ago",
					Blockers: []api.Blocker{{Type: api.BlockerFinalizer, Finalizer: "foregroundDeletion", Reason: gcDue},
						{Type: api.BlockerDependent, Target: target(c1), Reason: "has blockOwnerDeletion: true and is itself waiting, further up this chain: a cycle"}}}}}},
	}, {
		name: "a namespace: its content, counts beyond the named, a failed discovery",
		data: &db.StuckData{Objects: []*db.Object{nsStatus}, Content: map[string]*db.NamespaceContent{"a": {
			Objects: []*db.Object{held, idle}, ByKind: map[string]int{"ConfigMap": 2, "Widget.example.com": 5}, Total: 7}}},
		discovery: map[string]string{"metrics.k8s.io/v1beta1": "the server is currently unable to handle the request"},
		want: []api.StuckItem{{Target: *target(ns), DeletionRequested: stuckNow.Add(-3 * time.Minute), Age: 180, State: api.StateNamespaceTerminating,
			Conditions: conditionsOf(nsConditions),
			Blockers: []api.Blocker{
				{Type: api.BlockerFinalizer, Finalizer: "kubernetes", Reason: "the namespace controller (kube-controller-manager), once it has deleted everything in the namespace (spec.finalizers)"},
				{Type: api.BlockerNamespaceContent, Target: target(held), Reason: "still in the namespace, asked to be deleted 1m0s ago",
					Blockers: []api.Blocker{{Type: api.BlockerFinalizer, Finalizer: "example.com/hold", Reason: "the controller of example.com"}}},
				{Type: api.BlockerNamespaceContent, Target: target(idle), Reason: "still in the namespace, not being deleted yet: the namespace controller deletes it"},
				{Type: api.BlockerNamespaceContent, Counts: map[string]int{"ConfigMap": 2, "Widget.example.com": 5}, Reason: "7 objects left in the namespace in all, 2 of them named above"},
				{Type: api.BlockerDiscovery, GroupVersion: "metrics.k8s.io/v1beta1", Reason: "discovery of metrics.k8s.io/v1beta1 fails (the server is currently unable to handle the request): the namespace controller cannot list its resources, so it cannot finish emptying the namespace"},
			}}},
		words: []string{"Namespace a has been Terminating for 3m0s.",
			"still in it: ConfigMap a/held, held by its finalizer example.com/hold (the controller of example.com); ConfigMap a/idle, not deleted yet.",
			"In all 7 objects left", "Also, discovery of metrics.k8s.io/v1beta1 fails",
			"The namespace controller reports NamespaceFinalizersRemaining: Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances."},
	}, {
		name: "an empty namespace waits for the namespace controller",
		data: &db.StuckData{Objects: []*db.Object{ns}},
		want: []api.StuckItem{{Target: *target(ns), DeletionRequested: stuckNow.Add(-3 * time.Minute), Age: 180, State: api.StateNamespaceTerminating,
			Blockers: []api.Blocker{{Type: api.BlockerFinalizer, Finalizer: "kubernetes", Reason: "the namespace controller (kube-controller-manager), once it has deleted everything in the namespace (spec.finalizers, not mirrored yet: a namespace being deleted keeps it until then)"}}}},
		words: []string{"Nothing is left in it", "that controller is not running"},
	}, {
		name: "an empty namespace without spec finalizers: the namespace controller is done",
		data: &db.StuckData{Objects: []*db.Object{nsDone}},
		want: []api.StuckItem{{Target: *target(ns), DeletionRequested: stuckNow.Add(-3 * time.Minute), Age: 180, State: api.StateNamespaceTerminating,
			Blockers: []api.Blocker{}}},
		words: []string{"Nothing is left in it and the namespace controller is done with it."},
	}, {
		name: "a pod's deletion was asked for its grace period before its deletionTimestamp",
		data: &db.StuckData{Objects: []*db.Object{pod}},
		want: []api.StuckItem{{Target: api.Target{APIVersion: "v1", Kind: "Pod", Namespace: "a", Name: "p", UID: "uid-pod"},
			DeletionRequested: stuckNow.Add(-time.Minute), Age: 60, State: api.StateDeleting, Blockers: []api.Blocker{}}},
		words: []string{"Pod a/p was asked to be deleted 1m0s ago", "the kubelet of n1"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Stuck(tt.data, StuckOptions{Now: stuckNow, DiscoveryFailures: tt.discovery})
			for i := range got {
				if i == 0 {
					for _, w := range tt.words {
						if !strings.Contains(got[0].Explanation, w) {
							t.Errorf("explanation lacks %q:\n%s", w, got[0].Explanation)
						}
					}
				}
				if strings.Contains(got[i].Explanation, "\n") || got[i].Explanation == "" {
					t.Errorf("explanation is not one paragraph: %q", got[i].Explanation)
				}
				got[i].Explanation = ""
			}
			if d := diff.Diff(tt.want, got); d != "" {
				t.Errorf("Stuck (-want +got):\n%s", d)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
