package ownergc

import (
	"slices"
	"testing"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/gcrules"
)

// TestOverlayFacts: what dry-run has already decided changes the facts
// gcrules classifies and plans from exactly as enforce's writes would.
func TestOverlayFacts(t *testing.T) {
	owner := &db.Object{UID: "o", APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "owner"}
	ref := gcrules.Ref{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "o"}
	kind := gcrules.Kind{Served: true, Namespaced: true}
	for _, tc := range []struct {
		name       string
		enforce    bool // no overlay
		deleting   bool
		finalizers []string
		dryRun     func(o *overlay)
		wantFins   []string
		wantState  gcrules.State
	}{
		{name: "enforce: the mirror as it is", enforce: true, deleting: true, finalizers: []string{"foregroundDeletion"},
			wantFins: []string{"foregroundDeletion"}, wantState: gcrules.Waiting},
		{name: "dry-run, nothing decided", finalizers: []string{"example.com/x"}, dryRun: func(*overlay) {},
			wantFins: []string{"example.com/x"}, wantState: gcrules.Solid},
		{name: "dry-run began its foreground deletion", finalizers: []string{"example.com/x"},
			dryRun:   func(o *overlay) { o.deleteForeground("o") },
			wantFins: []string{"example.com/x", "foregroundDeletion"}, wantState: gcrules.Waiting},
		{name: "dry-run removed its foregroundDeletion finalizer", deleting: true, finalizers: []string{"foregroundDeletion", "example.com/x"},
			dryRun:   func(o *overlay) { o.removeFinalizer(owner, "foregroundDeletion") },
			wantFins: []string{"example.com/x"}, wantState: gcrules.Solid},
		{name: "dry-run began and ended its foreground deletion",
			dryRun: func(o *overlay) {
				o.deleteForeground("o")
				o.removeFinalizer(owner, "foregroundDeletion")
			},
			wantFins: nil, wantState: gcrules.Solid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Controller{}
			if !tc.enforce {
				c.overlay = newOverlay()
				tc.dryRun(c.overlay)
			}
			f := c.ownerFacts(gcrules.Owner{UID: owner.UID, APIVersion: owner.APIVersion, Kind: owner.Kind,
				Namespace: owner.Namespace, Name: owner.Name, Deleting: tc.deleting, Finalizers: tc.finalizers})
			if !slices.Equal(f.Finalizers, tc.wantFins) {
				t.Errorf("finalizers %v, want %v", f.Finalizers, tc.wantFins)
			}
			if got := gcrules.Classify("ns", ref, kind, f, gcrules.Mirror); got != tc.wantState {
				t.Errorf("state %s, want %s", got, tc.wantState)
			}
		})
	}
}
