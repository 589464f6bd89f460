package cli

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubegcd/kubegcd/internal/api"
)

func TestPrintTree(t *testing.T) {
	node := func(uid, kind, name string) api.GraphNode {
		return api.GraphNode{UID: uid, APIVersion: "v1", Kind: kind, Namespace: "ns", Name: name}
	}
	deleting := node("rs", "ReplicaSet", "web-1")
	deleting.BeingDeleted = true
	ghost := api.GraphNode{UID: "ghost", APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "ghost", Missing: true, Virtual: true}
	// deploy → rs → pod-a, pod-b; pod-b also owned by a missing ConfigMap;
	// cfg owns cfg2 which owns cfg again (a cycle), away from rs.
	g := &api.Graph{
		Nodes: []api.GraphNode{node("deploy", "Deployment", "web"), deleting, node("pod-a", "Pod", "web-1-a"),
			node("pod-b", "Pod", "web-1-b"), ghost, node("other", "ConfigMap", "other")},
		Edges: []api.GraphEdge{
			{Dependent: "rs", Owner: "deploy", Controller: true, BlockOwnerDeletion: true},
			{Dependent: "pod-b", Owner: "rs", Controller: true},
			{Dependent: "pod-a", Owner: "rs", Controller: true},
			{Dependent: "pod-b", Owner: "ghost"},
			// A dependent of the missing owner that is not on rs's way.
			{Dependent: "other", Owner: "ghost"},
		},
	}
	tests := []struct {
		name, root, want string
	}{
		{"from the top", "deploy", "" +
			"NAMESPACE   NAME                 OWNER REF                       STATE\n" +
			"ns          Deployment/web ◀                                     exists\n" +
			"ns          └─ReplicaSet/web-1   controller,blockOwnerDeletion   being deleted\n" +
			"ns            ├─Pod/web-1-a      controller                      exists\n" +
			"ns            └─Pod/web-1-b      controller                      exists\n"},
		// Owners above down to the object only; an object with two owners
		// shows under each, and the missing owner's other dependent not.
		{"from the middle", "pod-b", "" +
			"NAMESPACE   NAME                 OWNER REF                       STATE\n" +
			"ns          ConfigMap/ghost                                      missing\n" +
			"ns          └─Pod/web-1-b ◀                                      exists\n" +
			"ns          Deployment/web                                       exists\n" +
			"ns          └─ReplicaSet/web-1   controller,blockOwnerDeletion   being deleted\n" +
			"ns            └─Pod/web-1-b ◀    controller                      exists\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := printTree(&b, g, tt.root, false); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, b.String()); diff != "" {
				t.Errorf("tree (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPrintTreeCycleAndColour(t *testing.T) {
	g := &api.Graph{
		Nodes: []api.GraphNode{{UID: "a", Kind: "ConfigMap", Name: "a"}, {UID: "b", Kind: "ConfigMap", Name: "b", Missing: true}},
		Edges: []api.GraphEdge{{Dependent: "b", Owner: "a"}, {Dependent: "a", Owner: "b"}},
	}
	var b bytes.Buffer
	if err := printTree(&b, g, "a", true); err != nil {
		t.Fatal(err)
	}
	// The cycle ends the walk; colours do not shift the columns.
	want := "" +
		"NAMESPACE   NAME                        OWNER REF   STATE\n" +
		"            \x1b[1mConfigMap/a ◀               \x1b[0m            \x1b[32mexists\x1b[0m\n" +
		"            └─ConfigMap/b                           \x1b[31mmissing\x1b[0m\n" +
		"              └─ConfigMap/a ◀ (cycle)               \x1b[32mexists\x1b[0m\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("tree (-want +got):\n%s", diff)
	}
}
