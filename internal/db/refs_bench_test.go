package db

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"
)

// benchReferrers are benchObjects pods, each referring to six objects as
// a pod of a Deployment does: a ConfigMap through a volume and an env var,
// a Secret through envFrom, a claim, a pull secret and its ServiceAccount.
// 20 pods share each ConfigMap and Secret; each has a claim of its own.
func benchReferrers() []*Object {
	objs := benchObjectsOf(1, rsOf)
	for i, o := range objs {
		o.Kind, o.Name = "Pod", fmt.Sprintf("pod-%05d", i)
		o.Refs = podRefs("bench", fmt.Sprintf("%05d", i%500), fmt.Sprintf("%05d", i))
	}
	return objs
}

// benchDistinctReferrers are benchReferrers as the referrers benchmark of
// hack/bench makes them: random UIDs, 20 namespaces, and a ConfigMap, a
// Secret and a claim of its own for each pod. Each pod then adds three
// targets to the history and to refs_by_target.
func benchDistinctReferrers() []*Object {
	objs := benchObjectsOf(1, rsOf)
	for i, o := range objs {
		h := sha256.Sum256([]byte(o.UID))
		o.UID = fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
		o.Kind, o.Namespace, o.Name = "Pod", fmt.Sprintf("refs-%d", i%20), fmt.Sprintf("pod-%06d", i)
		o.Refs = podRefs(o.Namespace, fmt.Sprintf("%06d", i), fmt.Sprintf("%06d", i))
	}
	return objs
}

// podRefs are the six references of a pod in ns to the ConfigMap and
// Secret numbered shared and the claim numbered own.
func podRefs(ns, shared, own string) []Ref {
	return []Ref{
		{Kind: "ConfigMap", Namespace: ns, Name: "cm-" + shared, Via: "spec.volumes[].configMap"},
		{Kind: "ConfigMap", Namespace: ns, Name: "cm-" + shared, Via: "spec.containers[].env[].valueFrom.configMapKeyRef"},
		{Kind: "Secret", Namespace: ns, Name: "secret-" + shared, Via: "spec.containers[].envFrom[].secretRef"},
		{Kind: "PersistentVolumeClaim", Namespace: ns, Name: "claim-" + own, Via: "spec.volumes[].persistentVolumeClaim"},
		{Kind: "Secret", Namespace: ns, Name: "pull", Via: "spec.imagePullSecrets[]"},
		{Kind: "ServiceAccount", Namespace: ns, Name: "default", Via: "spec.serviceAccountName"},
	}
}

// BenchmarkIngestFirstListReferrers is BenchmarkIngestFirstList for pods
// with six references each: what the references cost the first list.
func BenchmarkIngestFirstListReferrers(b *testing.B) {
	benchFirstListReferrers(b, benchReferrers(), 500)
}

// BenchmarkIngestFirstListReferrersBatched is the same list written as a
// cold start writes it, FirstFillBatch objects a transaction at most.
func BenchmarkIngestFirstListReferrersBatched(b *testing.B) {
	benchFirstListReferrers(b, benchReferrers(), FirstFillBatch)
}

// BenchmarkIngestFirstListDistinctReferrers is the batched list of
// benchDistinctReferrers: the references cost a quarter more than where
// targets are shared, as in the end-to-end referrers benchmark.
func BenchmarkIngestFirstListDistinctReferrers(b *testing.B) {
	benchFirstListReferrers(b, benchDistinctReferrers(), FirstFillBatch)
}

// BenchmarkIngestFirstListDistinctNoReferences is the same list without
// its references: the difference is what they cost.
func BenchmarkIngestFirstListDistinctNoReferences(b *testing.B) {
	objs := benchDistinctReferrers()
	for _, o := range objs {
		o.Refs = nil
	}
	benchFirstListReferrers(b, objs, FirstFillBatch)
}

func benchFirstListReferrers(b *testing.B, objs []*Object, per int) {
	var cpu cpuMeter
	for range b.N {
		b.StopTimer()
		d, rid := benchDBOf(b, Resource{Version: "v1", Resource: "pods", Kind: "Pod", Namespaced: true})
		b.StartTimer()
		cpu.start()
		benchListBy(b, d, rid, objs, per)
		cpu.stop()
	}
	reportObjects(b, &cpu)
}

// BenchmarkReferencesAround times what /objects/{uid} reads of the
// references around one object, for a ServiceAccount that all 10,000 pods
// name: SQLite sorts all its referrers by UID before it keeps the first
// 1,000, as many as the API asks for.
func BenchmarkReferencesAround(b *testing.B) {
	ctx := context.Background()
	d, rid := benchDBOf(b, Resource{Version: "v1", Resource: "pods", Kind: "Pod", Namespaced: true})
	benchListBy(b, d, rid, benchReferrers(), FirstFillBatch)
	sa := &Object{UID: "sa", APIVersion: "v1", Kind: "ServiceAccount", Namespace: "bench", Name: "default"}
	b.ResetTimer()
	for range b.N {
		around, err := d.Objects().ReferencesAround(ctx, sa, 1000)
		if err != nil || len(around.Referrers) != 1000 || !around.ReferrersTruncated {
			b.Fatal(around, err)
		}
	}
}
