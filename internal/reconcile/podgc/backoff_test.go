package podgc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubegcd/kubegcd/internal/db"
)

// TestHeldPodWaitsOutItsBackOff: a pod a finalizer holds after a delete
// is sent its next delete 1 min later, then 2, 4, … up to 30 min; in
// between it is pending, with the end of its back-off as notBefore. A pass
// that no longer finds the pod a candidate forgets its back-off; an
// incomplete pass does not.
func TestHeldPodWaitsOutItsBackOff(t *testing.T) {
	held := pod("held", "Succeeded", 1, deleting, finalizers("example.com/hold"))
	store := newFakeStore(held)
	h := newHarness(t, store, false, Options{})
	h.livePods(t, held)
	// The finalizer keeps the pod: every delete succeeds and leaves it.
	h.client.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, nil
	})
	ctx := context.Background()
	deletes := 0
	rv := 1
	// pass makes a pass at the given time after t0, and reports whether it
	// sent a delete; the mirror then shows the pod's new version.
	pass := func(at time.Duration) bool {
		t.Helper()
		h.clock.SetTime(t0.Add(at))
		if err := h.c.Pass(ctx); err != nil {
			t.Fatalf("pass at +%s: %v", at, err)
		}
		n := 0
		for _, w := range h.writes() {
			if strings.HasPrefix(w, "delete ") {
				n++
			}
		}
		sent := n > deletes
		deletes = n
		if sent {
			rv++
			store.set(func(*fakeStore) { held.ResourceVersion = fmt.Sprint(rv) })
		}
		return sent
	}
	// pending checks the pod's pending row while its back-off holds it.
	pending := func(at, until time.Duration, sent int) {
		t.Helper()
		r, ok := h.pending(t)["held"]
		want := heldWhy(held, sent, "terminating, and bound to no node: no kubelet will ever finish it")
		if !ok || r.Rule != ruleUnscheduled || r.Reason != want || r.NotBefore == nil || !r.NotBefore.Equal(t0.Add(until)) {
			t.Errorf("at +%s: pending %v %+v, want %q until +%s", at, ok, r, want, until)
		}
	}

	if !pass(0) {
		t.Fatal("the first pass sent no delete")
	}
	at := time.Duration(0)
	for i, wait := range []time.Duration{1, 2, 4, 8, 16, 30, 30} {
		wait *= time.Minute
		if pass(at + wait - time.Second) {
			t.Fatalf("after delete %d: a delete sent %s later, before its back-off of %s ran out", i+1, wait-time.Second, wait)
		}
		pending(at+wait-time.Second, at+wait, i+1)
		if !pass(at + wait) {
			t.Fatalf("after delete %d: no delete sent once its back-off of %s ran out", i+1, wait)
		}
		at += wait
	}

	// An incomplete pass keeps the back-off, although it did not see the
	// pod.
	store.set(func(s *fakeStore) { s.pods = nil; s.fail["missing"] = errors.New("disk I/O error") })
	h.clock.SetTime(t0.Add(at + time.Minute))
	if err := h.c.Pass(ctx); err == nil {
		t.Fatal("a pass whose listing failed returned no error")
	}
	store.set(func(s *fakeStore) { s.pods = []*db.Object{held}; delete(s.fail, "missing") })
	if pass(at + 2*time.Minute) {
		t.Fatal("an incomplete pass forgot the back-off")
	}

	// A complete pass without the pod forgets it: back, it is deleted at
	// once, and its back-off starts again at 1 min.
	store.set(func(s *fakeStore) { s.pods = nil })
	pass(at + 3*time.Minute)
	store.set(func(s *fakeStore) { s.pods = []*db.Object{held} })
	at += 4 * time.Minute
	if !pass(at) {
		t.Fatal("a pod back among the candidates waited out its old back-off")
	}
	if pass(at + time.Minute - time.Second) {
		t.Fatal("the back-off did not start again")
	}
	pending(at+time.Minute-time.Second, at+time.Minute, 1)
	if !pass(at + time.Minute) {
		t.Fatal("the back-off did not start again at 1 min")
	}
}
