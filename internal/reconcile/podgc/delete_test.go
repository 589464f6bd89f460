package podgc

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/db"
)

func TestFailedPatch(t *testing.T) {
	pod := &db.Object{UID: "u-1", Pod: &db.Pod{Phase: "Running", Generation: 3}}
	now := time.Date(2026, 11, 22, 1, 2, 3, 0, time.UTC)
	for _, c := range []struct {
		condition bool
		want      string
	}{
		{false, `{"metadata":{"uid":"u-1"},"status":{"observedGeneration":3,"phase":"Failed"}}`},
		{true, `{"metadata":{"uid":"u-1"},"status":{"conditions":[{"lastTransitionTime":"2026-11-22T01:02:03Z",` +
			`"message":"PodGC: node no longer exists","observedGeneration":3,"reason":"DeletionByPodGC","status":"True",` +
			`"type":"DisruptionTarget"}],"observedGeneration":3,"phase":"Failed"}}`},
	} {
		b, err := failedPatch(pod, c.condition, now)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.want {
			t.Errorf("condition %v:\n got %s\nwant %s", c.condition, b, c.want)
		}
		if !json.Valid(b) {
			t.Errorf("invalid JSON %s", b)
		}
	}
}

func TestDeleteBackoffDoublesUpToItsCap(t *testing.T) {
	c := &Controller{backoff: map[string]*backoff{}}
	now := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	want := []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 16 * time.Minute, 30 * time.Minute}
	for i := range 200 {
		c.deleteSent("u", now)
		w := want[min(i, len(want)-1)]
		held, ok := c.heldUntil("u", now)
		if !ok || held.next.Sub(now) != w || held.sent != i+1 {
			t.Fatalf("after %d deletes: held %v until %s, want %s", i+1, ok, held.next.Sub(now), w)
		}
		if _, ok := c.heldUntil("u", now.Add(w)); ok {
			t.Fatalf("after %d deletes: still held once the back-off ran out", i+1)
		}
	}
}

// evicted is upstream's eviction.PodIsEvicted: a Failed pod whose reason
// is Evicted, and nothing else.
func TestEvicted(t *testing.T) {
	for _, c := range []struct {
		phase, reason string
		want          bool
	}{
		{"Failed", "Evicted", true},
		{"Failed", "Error", false},
		{"Succeeded", "Evicted", false},
		{"Running", "Evicted", false},
		{"Failed", "evicted", false},
		{"", "", false},
	} {
		if got := evicted(&db.Pod{Phase: c.phase, Reason: c.reason}); got != c.want {
			t.Errorf("phase %q reason %q: evicted %v, want %v", c.phase, c.reason, got, c.want)
		}
	}
}
