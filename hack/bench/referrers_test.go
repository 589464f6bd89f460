package main

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The referrers benchmark, tiny, with the build as its own baseline: each
// step creates its objects and both binaries sync them, so the benchmark
// does not rot between runs of make bench.
func TestReferrersBenchmarkRuns(t *testing.T) {
	e := startBenchEnv(t)
	ctx, dir, cluster, bin, kube := e.ctx, e.dir, e.cluster, e.bin, e.kube
	cfg := config{workers: 8, refObjects: 40, refBaseline: bin, rounds: 1, refSettle: time.Second}
	if err := runReferrers(ctx, cfg, cluster, kube, bin, dir); err != nil {
		t.Fatal(err)
	}
	var pods int
	for i := range refNamespaces {
		list, err := kube.CoreV1().Pods(refNamespace(i)).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pods += len(list.Items)
	}
	// Two steps of referrers, each with its own pods.
	if pods != 2*cfg.refObjects {
		t.Fatalf("the fixture made %d pods, want %d", pods, 2*cfg.refObjects)
	}
}

func TestMiddle(t *testing.T) {
	for _, tt := range []struct {
		vs   []uint64
		want uint64
	}{{[]uint64{5}, 5}, {[]uint64{9, 1, 5}, 5}, {[]uint64{4, 1}, 4}} {
		if got := middle(tt.vs); got != tt.want {
			t.Errorf("middle(%v) = %d, want %d", tt.vs, got, tt.want)
		}
	}
}
