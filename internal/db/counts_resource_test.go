package db

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// ResourceStats' counts, kept by triggers (migration 0012), equal a count
// of the mirror after any mix of lists, relists, watch events and an
// object moving between two resources of its kind.
func TestResourceCountsFollowTheMirror(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	var rids []int64
	for _, v := range []string{"v1", "v2"} {
		rid, err := d.Mirror().EnsureResource(ctx, Resource{Group: "example.com", Version: v, Resource: "widgets", Kind: "Widget", Namespaced: true})
		if err != nil {
			t.Fatal(err)
		}
		rids = append(rids, rid)
	}
	obj := func(i int) *Object {
		return &Object{UID: fmt.Sprint("uid-", i), APIVersion: "example.com/v1", Kind: "Widget", Namespace: "ns",
			Name: fmt.Sprint("w-", i), ResourceVersion: fmt.Sprint(i)}
	}
	check := func(step string) {
		t.Helper()
		want := map[int64]int64{}
		rows, err := d.read.Query(`SELECT resource_id, count(*) FROM objects GROUP BY resource_id`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id, n int64
			if err := rows.Scan(&id, &n); err != nil {
				t.Fatal(err)
			}
			want[id] = n
		}
		rows.Close()
		stats, err := d.Objects().ResourceStats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := map[int64]int64{}
		for _, s := range stats {
			if s.Objects != 0 || want[s.ID] != 0 {
				got[s.ID] = s.Objects
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%s: counts (-count(*) +ResourceStats):\n%s", step, diff)
		}
	}
	var first []*Object
	for i := range 50 {
		first = append(first, obj(i))
	}
	listAll(t, d, rids[0], first...)
	check("first list")
	listAll(t, d, rids[0], first[10:40]...) // a relist drops 20
	check("relist")
	listAll(t, d, rids[1], first[30:35]...) // five listed again through v2
	check("moved to another resource")

	r := rand.New(rand.NewPCG(3, 3))
	for step := range 200 {
		i := r.IntN(80)
		ev := Event{ResourceID: rids[r.IntN(2)], Object: obj(i)}
		ev.Object.ResourceVersion = fmt.Sprint(1000 + step)
		ev.Deleted = r.IntN(3) == 0
		if _, err := d.Mirror().ApplyEvents(ctx, []Event{ev}); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("event %d (%s deleted=%v)", step, ev.Object.UID, ev.Deleted))
	}
	listAll(t, d, rids[0])
	listAll(t, d, rids[1])
	check("emptied")
}
