package db

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestRecentHistoryOf(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	now := historyClock(d)
	rid, err := d.Mirror().EnsureResource(ctx, Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	// x is created and then re-owned 24 times: 25 history rows.
	for i := range 25 {
		*now = now.Add(time.Minute)
		if _, err := d.Mirror().ApplyEvents(ctx, []Event{{ResourceID: rid, Object: cmWith("x", fmt.Sprint(i+1), fmt.Sprintf("o%d", i))}}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name          string
		uid           string
		n             int
		wantFirst     string // owner of the first entry returned
		wantLen       int
		wantTruncated bool
	}{
		{name: "the latest, oldest first", uid: "x", n: 20, wantFirst: "o5", wantLen: 20, wantTruncated: true},
		{name: "all of them", uid: "x", n: 25, wantFirst: "o0", wantLen: 25},
		{name: "unknown", uid: "nope", n: 20, wantLen: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, truncated, err := d.History().RecentHistoryOf(ctx, tc.uid, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.wantLen || truncated != tc.wantTruncated {
				t.Fatalf("%d entries, truncated %v; want %d, %v", len(got), truncated, tc.wantLen, tc.wantTruncated)
			}
			if tc.wantLen == 0 {
				return
			}
			if first := got[0].OwnerReferences[0].UID; first != tc.wantFirst {
				t.Errorf("first entry owned by %s, want %s", first, tc.wantFirst)
			}
			if last := got[len(got)-1].OwnerReferences[0].UID; last != "o24" {
				t.Errorf("last entry owned by %s, want the latest, o24", last)
			}
		})
	}
}

func TestLintRefsOf(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	rid, err := d.Mirror().EnsureResource(ctx, Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	// x and y both name missing owners; x's second reference is sound.
	var evs []Event
	for _, o := range []*Object{cmWith("x", "1", "gone1", "z"), cmWith("y", "1", "gone2"), cmWith("z", "1")} {
		evs = append(evs, Event{ResourceID: rid, Object: o})
	}
	if _, err := d.Mirror().ApplyEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	var got []string
	err = d.Objects().LintRefsOf(ctx, "x", func(l *LintRef) error {
		got = append(got, fmt.Sprintf("%s→%s owner %v", l.Dependent.UID, l.Ref.UID, l.Owner != nil))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"x→gone1 owner false"}, got); diff != "" {
		t.Errorf("LintRefsOf(x) (-want +got):\n%s", diff)
	}
}

func TestStuckOfOneUID(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	rid, err := d.Mirror().EnsureResource(ctx, Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	older, newer := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	var evs []Event
	for _, o := range []*Object{cmWith("a", "1"), cmWith("b", "1")} {
		o.DeletionTimestamp, o.Finalizers = &older, []string{"example.com/hold"}
		if o.UID == "b" {
			o.DeletionTimestamp = &newer
		}
		evs = append(evs, Event{ResourceID: rid, Object: o})
	}
	if _, err := d.Mirror().ApplyEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	for _, uid := range []string{"a", "b"} {
		data, err := d.Objects().Stuck(ctx, StuckFilter{UID: uid, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(data.Objects) != 1 || data.Objects[0].UID != uid || data.Truncated {
			t.Errorf("Stuck(UID %s) = %d objects, truncated %v; want %s alone", uid, len(data.Objects), data.Truncated, uid)
		}
	}
}
