package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
)

// testWindow is a gcWindow on this process, with a control plane that
// serves empty metrics.
func testWindow(t *testing.T) gcWindow {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	cp, err := newControlPlane(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	pid := os.Getpid()
	return gcWindow{cp: cp, etcdPID: pid, apiserverPID: pid, ownPID: func() (int, error) { return pid, nil }}
}

// TestGCContenderReadsTheWatchWhileDeleting checks that the benchmark's
// watch is read while a contender deletes, not after: an unread watch
// fills, and the API server drops it for the rest of that contender's
// run, which no other contender's run is spared. The fake watch holds no
// event: each deletion waits until the watch is read.
func TestGCContenderReadsTheWatchWhileDeleting(t *testing.T) {
	const n = 50
	kube := fake.NewClientset()
	fw := watch.NewFake()
	kube.PrependWatchReactor("configmaps", func(k8stesting.Action) (bool, watch.Interface, error) { return true, fw, nil })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	r, err := gcContender(ctx, kube, "gc-test", n, 4, testWindow(t), nil,
		func(ctx context.Context, owner *corev1.ConfigMap, begin func()) error {
			begin()
			sent := make(chan struct{})
			go func() {
				defer close(sent)
				defer func() { _ = recover() }() // the watch stopped under a blocked send
				fw.Delete(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: owner.Namespace, Name: owner.Name}})
				for i := range n {
					fw.Delete(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: owner.Namespace, Name: fmt.Sprintf("dep-%06d", i)}})
				}
			}()
			select {
			case <-sent:
				return nil
			case <-time.After(10 * time.Second):
				return errors.New("the deletions waited 10s: the benchmark's watch is not read while the contender deletes")
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	if r.n != n || r.first <= 0 || r.last < r.first {
		t.Errorf("result n=%d first=%s last=%s, want %d deletions timed from the first to the last", r.n, r.first, r.last, n)
	}
}

// TestCountDeletions checks what the benchmark counts from its watch: the
// dependents' deletions only, from the start begun delivers, and again
// from the last event seen when the API server closes the watch.
func TestCountDeletions(t *testing.T) {
	kube := fake.NewClientset()
	second := watch.NewFake()
	var rewatchRV string
	kube.PrependWatchReactor("configmaps", func(a k8stesting.Action) (bool, watch.Interface, error) {
		rewatchRV = a.(k8stesting.WatchActionImpl).WatchRestrictions.ResourceVersion
		return true, second, nil
	})
	first := watch.NewFake()
	begun := make(chan time.Time, 1)
	done := make(chan watchCount, 1)
	go func() { done <- countDeletions(context.Background(), kube, "ns", "owner", 3, first, "10", begun) }()
	begun <- time.Now()

	cm := func(name, rv string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
	}
	first.Modify(cm("dep-0", "11"))
	first.Delete(cm("owner", "12"))
	first.Delete(cm("dep-0", "13"))
	first.Stop() // the API server drops the watch
	second.Delete(cm("dep-1", "14"))
	second.Add(&corev1.Namespace{}) // not a ConfigMap
	second.Delete(cm("dep-2", "15"))

	select {
	case c := <-done:
		if c.err != nil {
			t.Fatal(c.err)
		}
		if c.rewatches != 1 || rewatchRV != "13" {
			t.Errorf("rewatches %d from resourceVersion %q, want 1 from \"13\"", c.rewatches, rewatchRV)
		}
		if len(c.perSecond) != 1 || c.perSecond[0] != 3 || c.first <= 0 || c.last < c.first {
			t.Errorf("seen %v, first %s, last %s: want the 3 dependents in the first second", c.perSecond, c.first, c.last)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("countDeletions did not return after the third dependent")
	}
}

// TestCountDeletionsStopsWithContext checks that a cancelled count, before
// or after the start, ends with the context's error.
func TestCountDeletionsStopsWithContext(t *testing.T) {
	for _, started := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		begun := make(chan time.Time, 1)
		if started {
			begun <- time.Now()
		}
		done := make(chan watchCount, 1)
		go func() {
			done <- countDeletions(ctx, fake.NewClientset(), "ns", "owner", 3, watch.NewFake(), "1", begun)
		}()
		cancel()
		select {
		case c := <-done:
			if !errors.Is(c.err, context.Canceled) {
				t.Errorf("started=%v: err %v, want context.Canceled", started, c.err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("started=%v: countDeletions did not return after its context ended", started)
		}
	}
}
