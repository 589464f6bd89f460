package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegcd/kubegcd/internal/api"
)

// cascadeTree is a three-level tree: root ← mid (a Widget) ← leaf, held
// (blockOwnerDeletion, with a finalizer of its own) and shared, which also
// has a second owner, other, that stays; root ← direct (blocking).
type cascadeTree struct {
	root, mid, direct, leaf, held, shared, other obj
}

func newCascadeTree(s *scenario, prefix string) cascadeTree {
	var c cascadeTree
	c.root = s.cm(prefix + "root")
	c.other = s.cm(prefix + "other")
	c.mid = s.create(widgetGVR, "", prefix+"mid", nil, c.root.ref(true))
	c.direct = s.cm(prefix+"direct", c.root.ref(true))
	c.leaf = s.cm(prefix+"leaf", c.mid.ref(false))
	c.held = s.create(secrets, "", prefix+"held", []string{holdFinalizer}, c.mid.ref(true))
	c.shared = s.cm(prefix+"shared", c.mid.ref(false), c.other.ref(true))
	s.t.Cleanup(func() { s.removeFinalizers(c.held) })
	return c
}

// cascadeFate is one object's line of a preview or of the audit: what is done to
// it, and (in a preview) at which depth.
type cascadeFate struct {
	Name   string
	Action api.CascadeAction
	Depth  int
}

// cascadePreview asks kubegcd what deleting o with propagation would do, and
// returns it with the items reduced to fates (depth 0 when !depths); an
// error, a 404 among them while the mirror has not seen o yet.
func (s *scenario) cascadePreview(o obj, propagation string, depths bool) (*api.Cascade, map[string]cascadeFate, error) {
	path := "/objects/" + url.PathEscape(string(o.uid)) + "/cascade?propagation=" + propagation
	code, body, err := s.d.Get(path)
	if err != nil || code != http.StatusOK {
		return nil, nil, fmt.Errorf("GET %s: %d %s %v", path, code, body, err)
	}
	var c api.Cascade
	if err := json.Unmarshal(body, &c); err != nil {
		return nil, nil, fmt.Errorf("GET %s: %v", path, err)
	}
	out := map[string]cascadeFate{}
	for _, it := range c.Items {
		f := cascadeFate{Name: it.Target.Name, Action: it.Action}
		if depths {
			f.Depth = it.Depth
		}
		out[it.Target.UID] = f
	}
	return &c, out, nil
}

// waitCascadePreview waits until the mirror holds the whole tree, that is until
// the preview is want, and returns it.
func (s *scenario) waitCascadePreview(o obj, propagation string, want map[string]cascadeFate) *api.Cascade {
	s.t.Helper()
	var c *api.Cascade
	eventually(s.t, 20*time.Second, func() error {
		var got map[string]cascadeFate
		var err error
		if c, got, err = s.cascadePreview(o, propagation, true); err != nil {
			return err
		}
		if !maps.Equal(got, want) {
			return fmt.Errorf("%s preview of %s:\n got %v\nwant %v", propagation, o.name, sortedCascadeFates(got), sortedCascadeFates(want))
		}
		return nil
	})
	return c
}

// cascadeDone reduces ownergc's audit rows about the tree's objects, other than
// its root, to the preview's terms. Finalizer removals and unblocked
// references are how a foreground or orphan deletion completes, not what
// happens to a dependent, and a preview does not list them.
func (s *scenario) cascadeDone(c cascadeTree) map[string]cascadeFate {
	s.t.Helper()
	mine := map[string]bool{}
	for _, o := range []obj{c.mid, c.direct, c.leaf, c.held, c.shared, c.other} {
		mine[string(o.uid)] = true
	}
	out := map[string]cascadeFate{}
	for _, e := range s.audit() {
		if !mine[e.Target.UID] || e.Outcome == api.OutcomeConflict || e.Outcome == api.OutcomeFailed {
			continue
		}
		switch e.Action {
		case "delete":
			out[e.Target.UID] = cascadeFate{Name: e.Target.Name, Action: api.CascadeDelete}
		case "remove-owner-refs":
			out[e.Target.UID] = cascadeFate{Name: e.Target.Name, Action: api.CascadeRemoveOwnerRef}
		}
	}
	return out
}

func sortedCascadeFates(m map[string]cascadeFate) []cascadeFate {
	out := slices.Collect(maps.Values(m))
	slices.SortFunc(out, func(a, b cascadeFate) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func cascadeWithoutDepth(m map[string]cascadeFate) map[string]cascadeFate {
	out := map[string]cascadeFate{}
	for k, f := range m {
		f.Depth = 0
		out[k] = f
	}
	return out
}

// TestCascadePreview previews background, orphan and foreground deletions
// of a three-level tree, then deletes each tree's root for real with an
// enforcing kubegcd and requires ownergc's audit rows to say exactly what
// the preview said.
func TestCascadePreview(t *testing.T) {
	s := newScenario(t, "cascade", false, "--leader-elect=false")
	bg, or, fg := newCascadeTree(s, "bg-"), newCascadeTree(s, "or-"), newCascadeTree(s, "fg-")

	f := func(o obj, action api.CascadeAction, depth int) (string, cascadeFate) {
		return string(o.uid), cascadeFate{Name: o.name, Action: action, Depth: depth}
	}
	everything := func(c cascadeTree) map[string]cascadeFate {
		out := map[string]cascadeFate{}
		for _, x := range []struct {
			o      obj
			action api.CascadeAction
			depth  int
		}{
			{c.mid, api.CascadeDelete, 1}, {c.direct, api.CascadeDelete, 1},
			{c.leaf, api.CascadeDelete, 2}, {c.held, api.CascadeDelete, 2},
			{c.shared, api.CascadeRemoveOwnerRef, 2},
		} {
			k, v := f(x.o, x.action, x.depth)
			out[k] = v
		}
		return out
	}
	wantBG, wantFG := everything(bg), everything(fg)
	wantOrphan := map[string]cascadeFate{}
	for _, o := range []obj{or.mid, or.direct} {
		k, v := f(o, api.CascadeRemoveOwnerRef, 1)
		wantOrphan[k] = v
	}

	previewBG := s.waitCascadePreview(bg.root, "background", wantBG)
	if len(previewBG.BlockedBy) != 0 || previewBG.Total != 5 || previewBG.Truncated {
		t.Errorf("background: blockedBy %v, total %d, truncated %v; want none, 5, false", previewBG.BlockedBy, previewBG.Total, previewBG.Truncated)
	}
	if got := previewBG.ByKind["Widget.e2e.kubegcd.io"]["delete"]; got != 1 {
		t.Errorf("byKind %v: want one Widget deleted", previewBG.ByKind)
	}
	s.waitCascadePreview(or.root, "orphan", wantOrphan)
	previewFG := s.waitCascadePreview(fg.root, "foreground", wantFG)
	// The root waits for mid and direct; mid waits for held, which its
	// finalizer holds.
	var blocked []string
	for _, b := range previewFG.BlockedBy {
		blocked = append(blocked, fmt.Sprintf("%s→%s %v", b.Target.Name, b.Owner.Name, b.Finalizers))
	}
	wantBlocked := []string{"fg-direct→fg-root []", "fg-mid→fg-root []", "fg-held→fg-mid [" + holdFinalizer + "]"}
	slices.Sort(blocked)
	slices.Sort(wantBlocked)
	if !slices.Equal(blocked, wantBlocked) {
		t.Errorf("foreground blockedBy:\n got %v\nwant %v", blocked, wantBlocked)
	}
	for _, b := range previewFG.BlockedBy {
		if b.Target.Name == "fg-held" && !strings.Contains(b.Reason, holdFinalizer) {
			t.Errorf("the reason for fg-held does not name its finalizer: %q", b.Reason)
		}
	}

	// Parameters are checked against the real daemon too.
	var e struct{ Error string }
	s.d.GetJSON(t, "/objects/"+string(bg.root.uid)+"/cascade?propagation=sideways", 400, &e)
	s.d.GetJSON(t, "/objects/no-such-uid/cascade", 404, &e)

	// The acceptance: what ownergc does equals the preview.
	acceptance := []struct {
		tree   cascadeTree
		policy metav1.DeletionPropagation
		want   map[string]cascadeFate
	}{
		{bg, metav1.DeletePropagationBackground, cascadeWithoutDepth(wantBG)},
		{or, metav1.DeletePropagationOrphan, cascadeWithoutDepth(wantOrphan)},
		{fg, metav1.DeletePropagationForeground, cascadeWithoutDepth(wantFG)},
	}
	for _, tc := range acceptance {
		s.delete(tc.tree.root, tc.policy)
		eventually(t, gcTimeout, func() error {
			if got := s.cascadeDone(tc.tree); !maps.Equal(got, tc.want) {
				return fmt.Errorf("%s: ownergc did\n %v\npreview said\n %v", tc.policy, sortedCascadeFates(got), sortedCascadeFates(tc.want))
			}
			return nil
		})
	}
	// held's finalizer is the last thing the foreground root waits for;
	// once it goes, everything previewed is gone and nothing more is done.
	s.removeFinalizers(bg.held)
	s.removeFinalizers(fg.held)
	s.waitGone(bg.mid, bg.leaf, bg.held, bg.direct, fg.root, fg.mid, fg.leaf, fg.held, fg.direct, or.root)
	s.exists(bg.shared)
	s.exists(or.mid)
	s.exists(or.leaf)
	s.stable(2*time.Second, func() error {
		for _, tc := range acceptance {
			if got := s.cascadeDone(tc.tree); !maps.Equal(got, tc.want) {
				return fmt.Errorf("%s: ownergc went on to do %v", tc.policy, sortedCascadeFates(got))
			}
		}
		return nil
	})
}
