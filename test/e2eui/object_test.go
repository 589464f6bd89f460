package e2eui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// dropFinalizers removes every finalizer of the named ConfigMaps when the
// test ends, so that their namespace can go.
func dropFinalizers(t *testing.T, ns string, names ...string) {
	t.Helper()
	t.Cleanup(func() {
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		for _, name := range names {
			if _, err := kube.CoreV1().ConfigMaps(ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				t.Errorf("dropping the finalizers of %s: %v", name, err)
			}
		}
	})
}

// An owner deleted in the foreground, held by a dependent: its page says
// why once, not once in the summary and again above its blockers.
func TestObjectPageSaysWhyOnce(t *testing.T) {
	ctx := context.Background()
	ns := namespaces.New(t, "ui-why-once")
	owner := configMap(t, ns, "owner")
	configMap(t, ns, "dep", ownerRef(owner, true, true))
	fg := metav1.DeletePropagationForeground
	if err := kube.CoreV1().ConfigMaps(ns).Delete(ctx, "owner", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	dropFinalizers(t, ns, "owner")
	d := daemons.Start(t, "")
	uid := string(owner.UID)
	// A sentence of the explanation that carries no age, which would
	// differ between two reads.
	explanation := "It waits for its dependent ConfigMap " + ns + "/dep"
	e2eutil.Eventually(t, 30*time.Second, func() error {
		var det struct {
			Stuck *struct{ Explanation string } `json:"stuck"`
		}
		d.GetJSON(t, "/objects/"+uid, 200, &det)
		if det.Stuck == nil || !strings.Contains(det.Stuck.Explanation, explanation) {
			return fmt.Errorf("the foreground deletion of owner is not mirrored yet: %+v", det.Stuck)
		}
		return nil
	})
	p := openPage(t, d)
	p.goTo("/objects/" + uid)
	if b := p.text("#blockers"); !strings.Contains(b, "dep") {
		t.Errorf("blockers = %q, want the dependent dep", b)
	}
	var n int
	p.eval(fmt.Sprintf(`document.querySelector('.view').textContent.split(%q).length - 1`, explanation), &n)
	if n != 1 {
		t.Errorf("the page says %q %d times, want once", explanation, n)
	}
	p.shot("object-foreground-held")
}

// An owner reference to a UID neither the mirror nor the history ever held
// is said to be dangling on its row, not linked to a page that knows
// nothing; an owner that was seen, then deleted, keeps its link.
func TestOwnerNeverSeenIsNotLinked(t *testing.T) {
	ctx := context.Background()
	ns := namespaces.New(t, "ui-never-seen")
	was := configMap(t, ns, "was-owner")
	configMap(t, ns, "dep", ownerRef(was, false, false), danglingRef("never-existed"))
	d := daemons.Start(t, "")
	depUID := objectUID(t, d, ns, "dep")
	objectUID(t, d, ns, "was-owner")
	if err := kube.CoreV1().ConfigMaps(ns).Delete(ctx, "was-owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e2eutil.Eventually(t, 30*time.Second, func() error {
		var det struct {
			Owners []struct{ Name, State string } `json:"owners"`
		}
		d.GetJSON(t, "/objects/"+depUID, 200, &det)
		for _, o := range det.Owners {
			if o.State != "missing" {
				return fmt.Errorf("owners %+v: want both missing", det.Owners)
			}
		}
		return nil
	})
	p := openPage(t, d)
	p.goTo("/objects/" + depUID)
	type row struct {
		Text  string
		Links int
	}
	var rows map[string]row
	p.eval(`Object.fromEntries([...document.querySelectorAll('#owners tbody tr')].map((tr) => {
		const cell = tr.querySelector('td');
		return [cell.textContent.includes('never-existed') ? 'never' : 'was', { text: tr.textContent, links: cell.querySelectorAll('a').length }];
	}))`, &rows)
	if r := rows["never"]; r.Links != 0 || !strings.Contains(r.Text, "never seen: this reference is dangling") {
		t.Errorf("row of the never-seen owner: %q with %d links, want no link and \"never seen: this reference is dangling\"", r.Text, r.Links)
	}
	if r := rows["was"]; r.Links != 1 || strings.Contains(r.Text, "never seen") {
		t.Errorf("row of the deleted owner: %q with %d links, want its link to its history", r.Text, r.Links)
	}
	p.shot("object-never-seen-owner")
}

// Pending lists the decisions waiting longest first, as /pending, /stuck
// and kubegcd get pending do.
func TestPendingOldestFirst(t *testing.T) {
	ns := namespaces.New(t, "ui-pending-order")
	d := daemons.Start(t, "")
	// One at a time, each decided before the next is made: each waits
	// since a time of its own.
	for i := range 4 {
		configMap(t, ns, fmt.Sprintf("orphan-%d", i), danglingRef(fmt.Sprintf("ghost-order-%d", i)))
		waitItems(t, d, 60*time.Second, "/pending?namespace="+ns, i+1)
	}
	var want []string
	for i := range 4 {
		want = append(want, "ConfigMap "+ns+"/orphan-"+fmt.Sprint(i))
	}
	p := openPage(t, d)
	p.goTo("/pending?namespace=" + ns)
	var got []string
	p.eval(`[...document.querySelectorAll('#rows tbody tr td:nth-child(5)')].map((td) => td.textContent)`, &got)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("pending rows %q, want the oldest first %q", got, want)
	}
	p.shot("pending-oldest-first")
}

// At a phone's width (390 px) the object page's graph is fitted to its box
// and its box to the screen, also when the page was drawn wider and the
// window then narrowed; the search box's placeholder is not cut.
func TestObjectPageFitsAPhone(t *testing.T) {
	ns := namespaces.New(t, "ui-phone")
	owner := configMap(t, ns, "phone-owner")
	// Eight dependents side by side: a graph wider than a phone.
	for i := range 8 {
		configMap(t, ns, fmt.Sprintf("phone-dependent-with-a-long-name-%d", i), ownerRef(owner, true, false))
	}
	d := daemons.Start(t, "")
	uid := string(owner.UID)
	graphSize(t, d, uid, 9)
	p := openPage(t, d)
	type fit struct {
		BoxLeft, BoxRight, BoxWidth, BoxHeight, Window float64
		X1, X2, Y1, Y2                                 float64
	}
	// fitted says how the drawn graph sits in its box, and the box in the
	// window, or "" when the graph is whole in a box that is whole on the
	// screen.
	fitted := func() string {
		t.Helper()
		var f fit
		p.eval(`(() => { const box = document.getElementById('graph').getBoundingClientRect();
			const bb = window.kubegcdGraph.cy.elements().renderedBoundingBox();
			return { boxLeft: box.left, boxRight: box.right, boxWidth: box.width, boxHeight: box.height, window: window.innerWidth,
				x1: bb.x1, x2: bb.x2, y1: bb.y1, y2: bb.y2 }; })()`, &f)
		if f.BoxLeft < 0 || f.BoxRight > f.Window || f.X1 < 0 || f.Y1 < 0 || f.X2 > f.BoxWidth || f.Y2 > f.BoxHeight {
			return fmt.Sprintf("the graph is drawn over x %.0f…%.0f, y %.0f…%.0f in a box of %.0f × %.0f px at x %.0f…%.0f of a window %.0f px wide",
				f.X1, f.X2, f.Y1, f.Y2, f.BoxWidth, f.BoxHeight, f.BoxLeft, f.BoxRight, f.Window)
		}
		return ""
	}
	// placeholderFits: the search box's placeholder, measured in its font,
	// fits inside its padding.
	placeholderFits := func() string {
		t.Helper()
		var m struct {
			Text        string
			Width, Room float64
		}
		p.eval(`(() => { const i = document.getElementById('search'); const cs = getComputedStyle(i);
			const c = document.createElement('canvas').getContext('2d'); c.font = cs.font;
			return { text: i.placeholder, width: c.measureText(i.placeholder).width,
				room: i.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight) }; })()`, &m)
		if m.Text == "" || m.Width > m.Room {
			return fmt.Sprintf("search placeholder %q is %.0f px wide in a box of %.0f px", m.Text, m.Width, m.Room)
		}
		return ""
	}
	if s := placeholderFits(); s != "" {
		t.Errorf("at %d px: %s", desktopWidth, s)
	}

	p.phone()
	p.goTo("/objects/" + uid)
	p.waitJS(`window.kubegcdGraph && document.getElementById('graph').dataset.ready === 'true'`)
	if s := fitted(); s != "" {
		t.Errorf("drawn at %d px: %s", phoneWidth, s)
	}
	if s := placeholderFits(); s != "" {
		t.Errorf("at %d px: %s", phoneWidth, s)
	}
	p.shot("phone-object-wide-graph")

	// Drawn at a desktop's width, then narrowed: the graph fits again.
	p.desktop()
	p.goTo("/objects/" + uid)
	p.waitJS(`window.kubegcdGraph && document.getElementById('graph').dataset.ready === 'true'`)
	if s := fitted(); s != "" {
		t.Errorf("drawn at %d px: %s", desktopWidth, s)
	}
	p.phone()
	e2eutil.Eventually(t, 10*time.Second, func() error {
		if s := fitted(); s != "" {
			return fmt.Errorf("drawn at %d px, then narrowed to %d px: %s", desktopWidth, phoneWidth, s)
		}
		return nil
	})
	p.shot("phone-object-narrowed")
	p.desktop()
}
