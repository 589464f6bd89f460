package ttl

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/reconcile"
)

// TestNextBand checks the hysteresis (BR-19-06) at every band's edges, up
// and down, and across several bands at once.
func TestNextBand(t *testing.T) {
	for _, c := range []struct {
		name        string
		band, nodes int
		want        int
	}{
		{"no nodes, band 0", 0, 0, 0},
		{"no nodes from the top band: down to band 0", 4, 0, 0},
		{"band 0 at its sizeMax 100 stays", 0, 100, 0},
		{"band 0 above its sizeMax: up", 0, 101, 1},
		{"band 1 at its sizeMin 90 stays", 1, 90, 1},
		{"band 1 below its sizeMin: down", 1, 89, 0},
		{"band 1 at 95 stays (hysteresis)", 1, 95, 1},
		{"band 0 at 95 stays (hysteresis)", 0, 95, 0},
		{"band 1 at its sizeMax 500 stays", 1, 500, 1},
		{"band 1 above its sizeMax: up", 1, 501, 2},
		{"band 2 at its sizeMin 450 stays", 2, 450, 2},
		{"band 2 below its sizeMin: down", 2, 449, 1},
		{"band 2 at its sizeMax 1000 stays", 2, 1000, 2},
		{"band 2 above its sizeMax: up", 2, 1001, 3},
		{"band 3 at its sizeMin 900 stays", 3, 900, 3},
		{"band 3 below its sizeMin: down", 3, 899, 2},
		{"band 3 at its sizeMax 2000 stays", 3, 2000, 3},
		{"band 3 above its sizeMax: up", 3, 2001, 4},
		{"band 4 at its sizeMin 1800 stays", 4, 1800, 4},
		{"band 4 below its sizeMin: down", 4, 1799, 3},
		{"band 4 has no top", 4, 1<<31 - 1, 4},
		{"band 0 to 2500 nodes: up four bands", 0, 2500, 4},
		{"band 0 to 950 nodes: up to band 2, whose range holds it", 0, 950, 2},
		{"band 4 to 95 nodes: down to band 1, whose range holds it", 4, 95, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := nextBand(c.band, c.nodes); got != c.want {
				t.Errorf("nextBand(%d, %d) = %d, want %d", c.band, c.nodes, got, c.want)
			}
		})
	}
}

// TestNextBandWalk: the band depends on the path the count took.
func TestNextBandWalk(t *testing.T) {
	for _, c := range []struct {
		name  string
		walk  []int // node counts, one after another
		wants []int // the band after each
	}{
		{"up and down every band",
			[]int{0, 100, 101, 95, 90, 89, 500, 501, 460, 449, 1001, 1000, 899, 2001, 1800, 1799, 5000, 0},
			[]int{0, 0, 1, 1, 1, 0, 1, 2, 2, 1, 3, 3, 2, 4, 4, 3, 4, 0}},
		{"from band 1 at 95, all nodes gone and 95 back ends in band 0",
			[]int{101, 95, 0, 95}, []int{1, 1, 0, 0}},
		{"from band 0 at 95, up past 100 and back to 95 ends in band 1",
			[]int{95, 101, 95}, []int{0, 1, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			band := 0
			for i, n := range c.walk {
				band = nextBand(band, n)
				if band != c.wants[i] {
					t.Fatalf("at %d nodes (step %d): band %d, want %d", n, i, band, c.wants[i])
				}
			}
		})
	}
}

func TestInitialBand(t *testing.T) {
	for _, c := range []struct {
		name    string
		nodes   int
		carried map[string]int
		want    int
	}{
		{"empty cluster", 0, nil, 0},
		{"empty cluster, stale counts", 0, map[string]int{"15": 3}, 0},
		{"95 nodes carrying 15: band 1", 95, map[string]int{"15": 95}, 1},
		{"95 nodes carrying 015 (read as upstream's Atoi does): band 1", 95, map[string]int{"015": 95}, 1},
		{"95 nodes carrying 0: band 0", 95, map[string]int{"0": 95}, 0},
		{"95 nodes without annotations: the lowest band, as upstream counts up", 95, nil, 0},
		{"95 nodes with garbage: the lowest band", 95, map[string]int{"x": 95, "15s": 95, "": 95}, 0},
		{"95 nodes carrying a TTL no band has: the lowest band", 95, map[string]int{"7": 95}, 0},
		{"90 nodes carrying 15: band 1's sizeMin", 90, map[string]int{"15": 90}, 1},
		{"89 nodes carrying 15: only band 0 fits", 89, map[string]int{"15": 89}, 0},
		{"100 nodes carrying 15: band 0's sizeMax is band 1's too", 100, map[string]int{"15": 100}, 1},
		{"101 nodes carrying 0: only band 1 fits", 101, map[string]int{"0": 101}, 1},
		{"120 nodes: only band 1 fits", 120, map[string]int{"0": 120}, 1},
		{"500 nodes carrying 30: band 2", 500, map[string]int{"30": 500}, 2},
		{"500 nodes carrying 15: band 1", 500, map[string]int{"15": 500}, 1},
		{"950 nodes carrying 60: band 3", 950, map[string]int{"60": 950}, 3},
		{"950 nodes carrying 30: band 2", 950, map[string]int{"30": 950}, 2},
		{"1900 nodes carrying 300: band 4", 1900, map[string]int{"300": 1900}, 4},
		{"1900 nodes carrying 60: band 3", 1900, map[string]int{"60": 1900}, 3},
		{"3000 nodes: band 4", 3000, nil, 4},
		{"mixed, the majority wins", 95, map[string]int{"0": 50, "15": 45}, 0},
		{"mixed, the majority wins (2)", 95, map[string]int{"0": 40, "15": 55}, 1},
		{"spellings of one TTL add up", 95, map[string]int{"0": 40, "15": 30, "015": 30}, 1},
		{"a tie keeps the lower band", 95, map[string]int{"0": 45, "15": 45}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := initialBand(c.nodes, c.carried); got != c.want {
				t.Errorf("initialBand(%d, %v) = %d, want %d", c.nodes, c.carried, got, c.want)
			}
		})
	}
}

func TestParseTTL(t *testing.T) {
	for _, c := range []struct {
		in     *string
		want   int
		wantOK bool
	}{
		{nil, 0, false},
		{ptr("0"), 0, true},
		{ptr("15"), 15, true},
		{ptr("015"), 15, true},
		{ptr("+15"), 15, true},
		{ptr("-1"), -1, true},
		{ptr(""), 0, false},
		{ptr("15s"), 0, false},
		{ptr(" 15"), 0, false},
		{ptr("1.5"), 0, false},
	} {
		got, ok := parseTTL(c.in)
		if got != c.want || ok != c.wantOK {
			t.Errorf("parseTTL(%s) = %d, %v; want %d, %v", show(c.in), got, ok, c.want, c.wantOK)
		}
	}
}

func ptr(s string) *string { return &s }

func show(v *string) string {
	if v == nil {
		return "nil"
	}
	return fmt.Sprintf("%q", *v)
}

func node(name string, ttl *string) db.NodeTTL {
	return db.NodeTTL{Object: db.Object{UID: "uid-" + name, APIVersion: "v1", Kind: "Node", Name: name, ResourceVersion: "rv-" + name}, TTL: ttl}
}

// TestDecide covers each band's rule (BR-19-01…05) and the idempotent
// update (BR-19-07), with the annotation absent, garbled or spelled
// otherwise, and the nodes patched already.
func TestDecide(t *testing.T) {
	none := func(uid, rv string) bool { return false }
	for _, c := range []struct {
		name       string
		band       int
		nodes      int
		candidates []db.NodeTTL
		written    func(uid, rv string) bool
		wantTTL    string
		wantRule   string
		// wantAnnotate names the nodes to patch and what each has now,
		// as the reason spells it; wantWrong the nodes kept pending.
		wantAnnotate map[string]string
		wantWrong    []string
	}{
		{name: "no nodes", band: 0, nodes: 0, written: none, wantTTL: "0", wantRule: "BR-19-01"},
		{name: "band 0 (BR-19-01): absent and 15 are set to 0", band: 0, nodes: 3,
			candidates: []db.NodeTTL{node("a", nil), node("b", ptr("15"))}, written: none,
			wantTTL: "0", wantRule: "BR-19-01",
			wantAnnotate: map[string]string{"a": "no annotation", "b": `"15"`}, wantWrong: []string{"a", "b"}},
		{name: "band 1 (BR-19-02): 0 is set to 15, 015 reads as 15 (BR-19-07)", band: 1, nodes: 120,
			candidates: []db.NodeTTL{node("a", ptr("0")), node("b", ptr("015")), node("c", ptr("+15"))}, written: none,
			wantTTL: "15", wantRule: "BR-19-02",
			wantAnnotate: map[string]string{"a": `"0"`}, wantWrong: []string{"a"}},
		{name: "band 2 (BR-19-03): garbled annotations are set to 30", band: 2, nodes: 600,
			candidates: []db.NodeTTL{node("a", ptr("")), node("b", ptr("30s")), node("c", ptr(" 30")), node("d", ptr("030"))}, written: none,
			wantTTL: "30", wantRule: "BR-19-03",
			wantAnnotate: map[string]string{"a": `""`, "b": `"30s"`, "c": `" 30"`}, wantWrong: []string{"a", "b", "c"}},
		{name: "band 3 (BR-19-04): 300 is set to 60", band: 3, nodes: 1500,
			candidates: []db.NodeTTL{node("a", ptr("300"))}, written: none,
			wantTTL: "60", wantRule: "BR-19-04",
			wantAnnotate: map[string]string{"a": `"300"`}, wantWrong: []string{"a"}},
		{name: "band 4 (BR-19-05): 60 and -1 are set to 300", band: 4, nodes: 2500,
			candidates: []db.NodeTTL{node("a", ptr("60")), node("b", ptr("-1"))}, written: none,
			wantTTL: "300", wantRule: "BR-19-05",
			wantAnnotate: map[string]string{"a": `"60"`, "b": `"-1"`}, wantWrong: []string{"a", "b"}},
		{name: "a node patched at its version already is not patched again, and stays pending", band: 1, nodes: 95,
			candidates: []db.NodeTTL{node("a", ptr("0")), node("b", ptr("0"))},
			written:    func(uid, rv string) bool { return uid == "uid-a" && rv == "rv-a" },
			wantTTL:    "15", wantRule: "BR-19-02",
			wantAnnotate: map[string]string{"b": `"0"`}, wantWrong: []string{"a", "b"}},
		{name: "a node patched at another version is patched again", band: 1, nodes: 95,
			candidates: []db.NodeTTL{node("a", ptr("0"))},
			written:    func(uid, rv string) bool { return uid == "uid-a" && rv == "rv-old" },
			wantTTL:    "15", wantRule: "BR-19-02",
			wantAnnotate: map[string]string{"a": `"0"`}, wantWrong: []string{"a"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := decide(c.band, c.nodes, c.candidates, c.written)
			if p.want != c.wantTTL {
				t.Errorf("want %q, expected %q", p.want, c.wantTTL)
			}
			var wrong []string
			for uid := range p.wrong {
				wrong = append(wrong, uid[len("uid-"):])
			}
			if diff := cmp.Diff(c.wantWrong, slices.Sorted(slices.Values(wrong))); diff != "" {
				t.Errorf("nodes kept pending (-want +got):\n%s", diff)
			}
			b := sizeBands[c.band]
			got := map[string]string{}
			for _, a := range p.annotate {
				n := a.node
				has := c.wantAnnotate[n.Name]
				got[n.Name] = has
				want := reconcile.Decision{Controller: api.ControllerTTL, Rule: c.wantRule, Action: "annotate", Target: db.TargetOf(&n.Object),
					ResourceVersion: n.ResourceVersion,
					Reason: fmt.Sprintf("the cluster's size puts it in band %d (%d–%d nodes, with hysteresis), whose TTL is %ss; the node has %s",
						c.band, b.sizeMin, b.sizeMax, c.wantTTL, has),
					Facts: map[string]any{"nodes": c.nodes, "band": c.band, "want": c.wantTTL, "has": n.TTL}}
				if diff := cmp.Diff(want, a.decision); diff != "" {
					t.Errorf("decision about %s (-want +got):\n%s", n.Name, diff)
				}
			}
			if diff := cmp.Diff(slices.Sorted(maps.Keys(c.wantAnnotate)), slices.Sorted(maps.Keys(got))); diff != "" {
				t.Errorf("nodes annotated (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecideReasonWording pins one reason word for word: audit rows and
// alerts read it.
func TestDecideReasonWording(t *testing.T) {
	p := decide(1, 95, []db.NodeTTL{node("a", nil), node("b", ptr("0"))}, func(string, string) bool { return false })
	want := []string{
		"the cluster's size puts it in band 1 (90–500 nodes, with hysteresis), whose TTL is 15s; the node has no annotation",
		`the cluster's size puts it in band 1 (90–500 nodes, with hysteresis), whose TTL is 15s; the node has "0"`,
	}
	var got []string
	for _, a := range p.annotate {
		got = append(got, a.decision.Reason)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reasons (-want +got):\n%s", diff)
	}
}
