package db

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkUnscheduledTerminatingPods is one read of podgc's pass on a
// cluster short of nodes: 20,000 pods pending, bound to no node, 10 of
// them being deleted, among 1,000 other objects being deleted.
func BenchmarkUnscheduledTerminatingPods(b *testing.B) {
	ctx := context.Background()
	d, pods := benchDBOf(b, Resource{Version: "v1", Resource: "pods", Kind: "Pod", Namespaced: true})
	cms, err := d.Mirror().EnsureResource(ctx, Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap",
		Namespaced: true})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	var objs []*Object
	for i := range 20000 {
		o := &Object{UID: fmt.Sprintf("pod-%05d", i), APIVersion: "v1", Kind: "Pod", Namespace: "ns",
			Name: fmt.Sprintf("pod-%05d", i), ResourceVersion: "1", CreationTimestamp: &now, Pod: &Pod{Phase: "Pending"}}
		if i%2000 == 0 {
			o.DeletionTimestamp = &now
		}
		objs = append(objs, o)
	}
	benchListBy(b, d, pods, objs, FirstFillBatch)
	var deleting []*Object
	for i := range 1000 {
		deleting = append(deleting, &Object{UID: fmt.Sprintf("cm-%05d", i), APIVersion: "v1", Kind: "ConfigMap",
			Namespace: "ns", Name: fmt.Sprintf("cm-%05d", i), ResourceVersion: "1", CreationTimestamp: &now,
			DeletionTimestamp: &now, Finalizers: []string{"example.com/hold"}})
	}
	benchListBy(b, d, cms, deleting, FirstFillBatch)
	b.ResetTimer()
	for range b.N {
		got, err := d.PodGC().UnscheduledTerminatingPods(ctx)
		if err != nil || len(got) != 10 {
			b.Fatal(len(got), err)
		}
	}
}

// BenchmarkPodGCPass is the reads of one podgc pass on the heartbeats'
// cluster: 150,000 pods running on 2,000 nodes, none terminated, none
// orphaned. A Lease renewal is written before each pass, as tens are
// between two passes, so each pass starts on a read cache the commit
// dropped. It reports the CPU per pass.
func BenchmarkPodGCPass(b *testing.B) {
	d, _, leases := heartbeatMirror(b)
	ctx := context.Background()
	var cpu cpuMeter
	b.ResetTimer()
	for i := range b.N {
		if _, err := d.Mirror().ApplyEvents(ctx, eventsOf(leases, heartbeatLeases(i + 2)[:1]...)); err != nil {
			b.Fatal(err)
		}
		cpu.start()
		n, err := d.PodGC().CountTerminatedPods(ctx, TerminatedFilter{})
		if err != nil || n != 0 {
			b.Fatal(n, err)
		}
		if missing, err := d.PodGC().MissingNodes(ctx); err != nil || len(missing) != 0 {
			b.Fatal(missing, err)
		}
		if pods, err := d.PodGC().UnscheduledTerminatingPods(ctx); err != nil || len(pods) != 0 {
			b.Fatal(pods, err)
		}
		if pods, err := d.PodGC().TerminatingPodsOnOutOfServiceNodes(ctx, "node.kubernetes.io/out-of-service"); err != nil ||
			len(pods) != 0 {
			b.Fatal(pods, err)
		}
		cpu.stop()
	}
	b.ReportMetric(float64(cpu.total.Nanoseconds())/float64(b.N)/1e6, "cpu-ms/pass")
}
