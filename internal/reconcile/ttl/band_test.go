package ttl

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/kubegcd/kubegcd/internal/db"
)

// upstream is kube-controller-manager's TTL controller's count, verbatim in
// effect: one band up or down at most per node event.
type upstream struct{ count, band int }

func (u *upstream) add() {
	u.count++
	if u.count > sizeBands[u.band].sizeMax {
		u.band++
	}
}

func (u *upstream) del() {
	u.count--
	if u.count < sizeBands[u.band].sizeMin {
		u.band--
	}
}

func upserted(uid string) db.Change { return db.Change{Type: db.ChangeUpserted, UID: uid} }
func deleted(uid string) db.Change  { return db.Change{Type: db.ChangeDeleted, UID: uid} }

// cluster drives a band and upstream's count with the same node events.
type cluster struct {
	t    *testing.T
	b    *bandTracker
	u    upstream
	next int
	live []string
}

func newCluster(t *testing.T, nodes int, carried string) *cluster {
	c := &cluster{t: t, b: &bandTracker{}}
	for range nodes {
		c.next++
		c.live = append(c.live, fmt.Sprint("n", c.next))
	}
	if !c.b.needsLoad() {
		t.Fatal("a new band needs no load")
	}
	c.b.load(c.live, map[string]int{carried: nodes})
	c.u = upstream{count: nodes, band: c.b.band}
	return c
}

func (c *cluster) add(n int) {
	var chs []db.Change
	for range n {
		c.next++
		uid := fmt.Sprint("n", c.next)
		c.live = append(c.live, uid)
		chs = append(chs, upserted(uid), upserted(uid)) // created, then its status
		c.u.add()
	}
	c.b.observe(chs)
}

func (c *cluster) del(n int) {
	var chs []db.Change
	for range n {
		uid := c.live[len(c.live)-1]
		c.live = c.live[:len(c.live)-1]
		chs = append(chs, deleted(uid))
		c.u.del()
	}
	c.b.observe(chs)
}

func (c *cluster) check(what string) {
	c.t.Helper()
	band, n := c.b.current()
	if n != c.u.count || band != c.u.band {
		c.t.Fatalf("%s: tracker in band %d with %d nodes, upstream in band %d with %d", what, band, n, c.u.band, c.u.count)
	}
}

func TestBandFollowsEveryNodeEvent(t *testing.T) {
	for _, tc := range []struct {
		name     string
		nodes    int
		carried  string
		walk     []int // nodes added (>0) or deleted (<0), in this order
		wantBand int
	}{
		// Seen against upstream: all nodes deleted and 95 re-created within
		// seconds, from the 15 s band. Upstream ends at 0 s: the count
		// passed below 90. A reconcile seeing only 95 and 95 stays at 15 s.
		{"all gone and 95 back", 95, "15", []int{-95, 95}, 0},
		{"a dip to 89 and back", 95, "15", []int{-6, 6}, 0},
		{"a dip to 90 and back", 95, "15", []int{-5, 5}, 1},
		{"a peak over 100 and back", 95, "0", []int{6, -6}, 1},
		{"up to 501 and down to 460", 400, "15", []int{101, -41}, 2},
		{"zigzag: 101, 89, 95", 95, "0", []int{6, -12, 6}, 0},
		{"zigzag: 89, 101, 95", 95, "15", []int{-6, 12, -6}, 1},
		{"a jump over two bands", 0, "", []int{1001}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, tc.nodes, tc.carried)
			c.check("loaded")
			// No look at the band between the moves: a reconcile may
			// come only after all of them.
			for _, w := range tc.walk {
				if w > 0 {
					c.add(w)
				} else {
					c.del(-w)
				}
			}
			c.check("after the walk")
			if band, _ := c.b.current(); band != tc.wantBand {
				t.Errorf("band %d, want %d", band, tc.wantBand)
			}
		})
	}
}

func TestBandRandomWalksEqualUpstream(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for walk := range 200 {
		start := r.IntN(2500)
		c := newCluster(t, start, "")
		for move := range 40 {
			n := r.IntN(300) + 1
			if r.IntN(2) == 0 || len(c.live) < n {
				c.add(n)
			} else {
				c.del(n)
			}
			if r.IntN(10) == 0 {
				c.check(fmt.Sprintf("walk %d move %d", walk, move))
			}
		}
		c.check(fmt.Sprintf("walk %d", walk))
	}
}

func TestBandChangesDuringALoadCountOnce(t *testing.T) {
	b := &bandTracker{}
	if !b.needsLoad() {
		t.Fatal("a new band needs no load")
	}
	// Delivered while the mirror is read: n2 was already in it, n3 was not;
	// n1 was read and then deleted.
	b.observe([]db.Change{upserted("n2"), upserted("n3"), deleted("n1")})
	b.load([]string{"n1", "n2"}, nil)
	if _, n := b.current(); n != 2 {
		t.Errorf("%d nodes after the load, want 2 (n2, n3)", n)
	}
	if b.needsLoad() {
		t.Error("a loaded band asks for a load")
	}
	// Changes the set already holds do not count twice.
	b.observe([]db.Change{upserted("n2"), deleted("n1")})
	if _, n := b.current(); n != 2 {
		t.Errorf("%d nodes after repeated changes, want 2", n)
	}
}

func TestBandReloadsAfterARelistAsUpstreamsInformer(t *testing.T) {
	c := newCluster(t, 95, "15")
	// The nodes watch was lost and listed again: 20 nodes gone and 10 new
	// while it was away. Upstream's informer delivers the new nodes' adds,
	// then the gone nodes' deletes: 105 (band 1), then 85 (band 0).
	c.b.observe([]db.Change{{Type: db.ChangeRelisted}})
	if !c.b.needsLoad() {
		t.Fatal("no load after a relist")
	}
	uids := append([]string(nil), c.live[20:]...)
	for i := range 10 {
		uids = append(uids, fmt.Sprint("new", i))
	}
	c.b.load(uids, nil)
	if band, n := c.b.current(); band != 0 || n != 85 {
		t.Errorf("band %d with %d nodes, want band 0 with 85", band, n)
	}
	// A failed load leaves the band as it was, and asks again.
	c.b.observe([]db.Change{{Type: db.ChangeRelisted}})
	c.b.needsLoad()
	c.b.abortLoad()
	if !c.b.needsLoad() {
		t.Error("no load after a failed one")
	}
}
