package db

import (
	"context"
	"fmt"
	"testing"
)

// benchReferrers are benchObjects pods, each referring to six objects as
// a pod of a Deployment does: a ConfigMap through a volume and an env var,
// a Secret through envFrom, a claim, a pull secret and its ServiceAccount.
func benchReferrers() []*Object {
	objs := benchObjectsOf(1, rsOf)
	for i, o := range objs {
		o.Kind, o.Name = "Pod", fmt.Sprintf("pod-%05d", i)
		cm, secret := fmt.Sprintf("cm-%05d", i%500), fmt.Sprintf("secret-%05d", i%500)
		o.Refs = []Ref{
			{Kind: "ConfigMap", Namespace: "bench", Name: cm, Via: "spec.volumes[].configMap"},
			{Kind: "ConfigMap", Namespace: "bench", Name: cm, Via: "spec.containers[].env[].valueFrom.configMapKeyRef"},
			{Kind: "Secret", Namespace: "bench", Name: secret, Via: "spec.containers[].envFrom[].secretRef"},
			{Kind: "PersistentVolumeClaim", Namespace: "bench", Name: fmt.Sprintf("claim-%05d", i), Via: "spec.volumes[].persistentVolumeClaim"},
			{Kind: "Secret", Namespace: "bench", Name: "pull", Via: "spec.imagePullSecrets[]"},
			{Kind: "ServiceAccount", Namespace: "bench", Name: "default", Via: "spec.serviceAccountName"},
		}
	}
	return objs
}

// BenchmarkIngestFirstListReferrers is BenchmarkIngestFirstList for pods
// with six references each: what the references cost the first list.
func BenchmarkIngestFirstListReferrers(b *testing.B) { benchFirstListReferrers(b, 500) }

// BenchmarkIngestFirstListReferrersBatched is the same list written as a
// cold start writes it, FirstFillBatch objects a transaction at most.
func BenchmarkIngestFirstListReferrersBatched(b *testing.B) {
	benchFirstListReferrers(b, FirstFillBatch)
}

func benchFirstListReferrers(b *testing.B, per int) {
	objs := benchReferrers()
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
