package ownergc

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubegcd/kubegcd/internal/db"
)

func TestTallyForeground(t *testing.T) {
	deps := []db.Dependent{
		{UID: "blocks", BlockOwnerDeletion: true},
		{UID: "free"},
		{UID: "deleting", BlockOwnerDeletion: true, Deleting: true},
		{UID: "gone", BlockOwnerDeletion: true},
		{UID: "detached", BlockOwnerDeletion: true},
		{UID: "unblocked", BlockOwnerDeletion: true},
	}
	for _, tc := range []struct {
		name   string
		dryRun func(o *overlay) // nil: enforcing
		want   foregroundTally
	}{
		{name: "enforcing: every blocking dependent blocks",
			want: foregroundTally{blocking: 5, wake: []string{"blocks", "free", "gone", "detached", "unblocked"}}},
		{name: "dry-run: deleted, detached and unblocked dependents block no more",
			dryRun: func(o *overlay) {
				o.delete("gone")
				o.removeRefs("detached", []string{"owner"})
				o.unblockRefs("unblocked", []string{"owner"})
			},
			want: foregroundTally{blocking: 2, deleted: 1, released: 2, wake: []string{"blocks", "free", "unblocked"}}},
		{name: "dry-run: a reference to another owner changes nothing",
			dryRun: func(o *overlay) { o.removeRefs("blocks", []string{"other"}) },
			want:   foregroundTally{blocking: 5, wake: []string{"blocks", "free", "gone", "detached", "unblocked"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o *overlay
			if tc.dryRun != nil {
				o = newOverlay()
				tc.dryRun(o)
			}
			got := tallyForeground("owner", deps, o)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(foregroundTally{})); diff != "" {
				t.Errorf("tally (-want +got):\n%s", diff)
			}
		})
	}
}
