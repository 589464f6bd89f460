package ingest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubegcd/kubegcd/internal/db"
)

// TestWatchBatchesAStream: a watch that has just committed goes on
// collecting events for flushInterval before it commits again, so that a
// steady stream (Lease renewals) costs a commit per interval, not one per
// event; an event after a quiet moment, and a watch that ends, commit at
// once. The interval is an hour here: what is committed before the
// watch ends came at once.
func TestWatchBatchesAStream(t *testing.T) {
	src := &resumeSource{watches: make(chan *watch.FakeWatcher, 4)}
	w, store := resumeFixture(t, src)
	w.flushEvery = time.Hour
	notified := make(chan []db.Change, 16)
	w.notify = func(c []db.Change) { notified <- c }
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); <-w.done }()
	go w.run(ctx, "")

	fw := nextWatch(t, src)
	// The first commit of the watch waits for nothing.
	fw.Action(watch.Bookmark, object("", "100"))
	waitFor(t, 10*time.Second, func() error {
		if !w.synced.Load() {
			return errors.New("the bookmark at the collection's resourceVersion is not committed")
		}
		return nil
	})
	for i, uid := range []string{"c", "d", "e"} {
		fw.Add(object(uid, fmt.Sprint(101+i)))
	}
	before := []db.ObjectKey{{UID: "a", ResourceVersion: "10"}, {UID: "b", ResourceVersion: "20"}}
	if diff := cmp.Diff(before, mirrored(t, store, w.res.ID)); diff != "" {
		t.Fatalf("events of a stream committed before the interval ended (-want +got):\n%s", diff)
	}
	fw.Stop()
	select {
	case changes := <-notified:
		if len(changes) != 3 {
			t.Errorf("the watch's end committed %d changes together, want the 3 events", len(changes))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the events collected were not committed when the watch ended")
	}
	want := append(before, db.ObjectKey{UID: "c", ResourceVersion: "101"}, db.ObjectKey{UID: "d", ResourceVersion: "102"},
		db.ObjectKey{UID: "e", ResourceVersion: "103"})
	if diff := cmp.Diff(want, mirrored(t, store, w.res.ID)); diff != "" {
		t.Errorf("mirror (-want +got):\n%s", diff)
	}
}
