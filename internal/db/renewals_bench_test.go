package db

import (
	"context"
	"fmt"
	"hash/fnv"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
)

// The heartbeats of a large cluster: the nodes' Leases renewed and their
// status updated, among many more objects that do not change. Each write
// reads what it compares with the object's last state. In a mirror much
// larger than the writer's page cache, those reads miss it. These
// benchmarks mirror the scale benchmark's cluster in proportion: 2,000
// nodes and their Leases, and 150,000 pods owned by ReplicaSets.
const (
	heartbeatNodes = 2000
	heartbeatPods  = 150_000
)

// randomUID is a UID spread like the API server's random ones, so that
// objects land on the B-trees' leaves as they do in a cluster.
func randomUID(kind string, i int) string {
	h := fnv.New128a()
	fmt.Fprintf(h, "%s-%d", kind, i)
	s := h.Sum(nil)
	return fmt.Sprintf("%x-%x-%x-%x-%x", s[0:4], s[4:6], s[6:8], s[8:10], s[10:16])
}

// heartbeatMirror fills a database with the pods, the nodes and their
// Leases, and returns it with the resources of the nodes and the Leases.
func heartbeatMirror(b *testing.B) (d *DB, nodes, leases int64) {
	b.Helper()
	d, pods := benchDBOf(b, Resource{Version: "v1", Resource: "pods", Kind: "Pod", Namespaced: true})
	ctx := context.Background()
	var err error
	if nodes, err = d.Mirror().EnsureResource(ctx, Resource{Version: "v1", Resource: "nodes", Kind: "Node"}); err != nil {
		b.Fatal(err)
	}
	if leases, err = d.Mirror().EnsureResource(ctx, Resource{Group: "coordination.k8s.io", Version: "v1",
		Resource: "leases", Kind: "Lease", Namespaced: true}); err != nil {
		b.Fatal(err)
	}
	objs := make([]*Object, heartbeatPods)
	for i := range objs {
		rs := fmt.Sprintf("app-%d-7d4b9c", i/10)
		objs[i] = &Object{UID: randomUID("pod", i), APIVersion: "v1", Kind: "Pod", Namespace: fmt.Sprintf("ns-%d", i%50),
			Name: fmt.Sprintf("%s-%05d", rs, i), ResourceVersion: "1",
			OwnerReferences: []api.OwnerRef{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs,
				UID: randomUID("rs", i/10), Controller: boolp(true), BlockOwnerDeletion: boolp(true)}},
			Pod: &Pod{Phase: "Running", NodeName: fmt.Sprintf("node-%04d", i%heartbeatNodes)}}
	}
	benchListBy(b, d, pods, objs, 5000)
	benchListBy(b, d, nodes, nodeStatuses(1), 500)
	benchListBy(b, d, leases, heartbeatLeases(1), 500)
	return d, nodes, leases
}

// nodeStatuses are the nodes at resourceVersion rv: a status update
// changes nothing the mirror compares.
func nodeStatuses(rv int) []*Object {
	objs := make([]*Object, heartbeatNodes)
	for i := range objs {
		objs[i] = &Object{UID: randomUID("node", i), APIVersion: "v1", Kind: "Node", Name: fmt.Sprintf("node-%04d", i),
			ResourceVersion: fmt.Sprint(rv), Node: &Node{Ready: "True"}}
	}
	return objs
}

// heartbeatLeases are the nodes' Leases renewed for the rv-th time, each
// owned by its node, as the kubelet writes them.
func heartbeatLeases(rv int) []*Object {
	base := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	objs := make([]*Object, heartbeatNodes)
	for i := range objs {
		name := fmt.Sprintf("node-%04d", i)
		renew := base.Add(time.Duration(rv) * 10 * time.Second)
		objs[i] = &Object{UID: randomUID("lease", i), APIVersion: "coordination.k8s.io/v1", Kind: "Lease",
			Namespace: "kube-node-lease", Name: name, ResourceVersion: fmt.Sprint(rv),
			OwnerReferences: []api.OwnerRef{{APIVersion: "v1", Kind: "Node", Name: name, UID: randomUID("node", i)}},
			Lease:           &Lease{HolderIdentity: &name, LeaseDurationSeconds: new(int32(40)), RenewTime: &renew}}
	}
	return objs
}

// BenchmarkHeartbeats applies, per iteration, a renewal of every Lease
// and a status update of every node, as the watches write them: by
// batches of 20, what a watch gathers in 100 ms of this stream, and of
// 200. It reports the CPU per write.
func BenchmarkHeartbeats(b *testing.B) {
	d, nodes, leases := heartbeatMirror(b)
	ctx := context.Background()
	rv := 1
	for _, per := range []int{20, 200} {
		b.Run(fmt.Sprintf("batch=%d", per), func(b *testing.B) {
			var cpu cpuMeter
			cpu.start()
			for range b.N {
				rv++
				for _, batch := range []struct {
					rid  int64
					objs []*Object
				}{{leases, heartbeatLeases(rv)}, {nodes, nodeStatuses(rv)}} {
					for j := 0; j < len(batch.objs); j += per {
						if _, err := d.Mirror().ApplyEvents(ctx, eventsOf(batch.rid, batch.objs[j:j+per]...)); err != nil {
							b.Fatal(err)
						}
					}
				}
			}
			cpu.stop()
			b.ReportMetric(float64(cpu.total.Nanoseconds())/float64(2*heartbeatNodes*b.N), "cpu-ns/write")
		})
	}
}
