package e2e

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const holdFinalizer = "e2e.kubegcd.io/hold"

func TestOwnerGCBackgroundCascade(t *testing.T) {
	eachMode(t, "gc-background", func(s *scenario) {
		root := s.cm("root")
		mid := s.create(widgetGVR, "", "mid", nil, root.ref(false))
		leaf := s.cm("leaf", mid.ref(false))
		leaf2 := s.create(secrets, "", "leaf2", nil, mid.ref(true))
		bystander := s.cm("bystander")
		s.delete(root, metav1.DeletePropagationBackground)
		s.snap()
		if s.dry {
			return
		}
		s.waitGone(mid, leaf, leaf2)
		s.exists(bystander)
	})
}

func TestOwnerGCOrphan(t *testing.T) {
	eachMode(t, "gc-orphan", func(s *scenario) {
		owner := s.cm("owner")
		a := s.cm("a", owner.ref(true))
		other := s.cm("other")
		b := s.cm("b", owner.ref(false), other.ref(false))
		s.delete(owner, metav1.DeletePropagationOrphan)
		s.snap()
		if s.dry {
			// The owner stays with its orphan finalizer; so do the references.
			if got := s.get(owner); got == nil || len(got.GetFinalizers()) != 1 || got.GetFinalizers()[0] != "orphan" {
				s.t.Fatalf("owner in dry-run: %v", got)
			}
			return
		}
		s.waitGone(owner)
		if refs := s.exists(a).GetOwnerReferences(); len(refs) != 0 {
			s.t.Errorf("a keeps references %v", refs)
		}
		if refs := s.exists(b).GetOwnerReferences(); len(refs) != 1 || refs[0].UID != other.uid {
			s.t.Errorf("b references %v, want only other", refs)
		}
	})
}

func TestOwnerGCForeground(t *testing.T) {
	eachMode(t, "gc-foreground", func(s *scenario) {
		owner := s.cm("owner")
		blocking := s.create(configMaps, "", "blocking", []string{holdFinalizer}, owner.ref(true))
		free := s.create(configMaps, "", "free", []string{holdFinalizer}, owner.ref(false))
		s.delete(owner, metav1.DeletePropagationForeground)
		s.snap()
		if s.dry {
			return
		}
		// Both dependents are deleted first; the owner waits.
		s.waitDeleting(blocking, free)
		s.waitDeleting(owner)
		// The non-blocking dependent does not hold the owner: once the
		// blocking one is gone, the owner goes while "free" still exists.
		s.removeFinalizers(blocking)
		s.waitGone(blocking, owner)
		if s.get(free) == nil {
			s.t.Fatal("the non-blocking dependent went before its finalizer was removed")
		}
		s.removeFinalizers(free)
		s.waitGone(free)
	})
}

func TestOwnerGCTwoOwnersOneDeleted(t *testing.T) {
	eachMode(t, "gc-two-owners", func(s *scenario) {
		keep := s.cm("keep")
		gone := s.cm("gone")
		dep := s.cm("dep", keep.ref(true), gone.ref(true))
		s.delete(gone, metav1.DeletePropagationBackground)
		s.snap()
		if s.dry {
			return
		}
		eventually(s.t, gcTimeout, func() error {
			if refs := s.exists(dep).GetOwnerReferences(); len(refs) != 1 || refs[0].UID != keep.uid {
				return fmt.Errorf("dep references %v, want only keep", refs)
			}
			return nil
		})
	})
}

func TestOwnerGCNeverExistingAndRecreatedOwner(t *testing.T) {
	eachMode(t, "gc-uid", func(s *scenario) {
		phantom := obj{kind: "ConfigMap", apiVersion: "v1", name: "phantom", uid: "00000000-0000-0000-0000-00000000beef"}
		ofPhantom := s.cm("of-phantom", phantom.ref(false))
		// "owner" exists, but with another UID than the one the old
		// dependent names: as if it was deleted and created again.
		owner := s.cm("owner")
		stale := obj{kind: "ConfigMap", apiVersion: "v1", name: "owner", uid: "00000000-0000-0000-0000-00000000cafe"}
		ofStale := s.cm("of-old-owner", stale.ref(true))
		ofNew := s.cm("of-new-owner", owner.ref(true))
		s.snap()
		if s.dry {
			return
		}
		s.waitGone(ofPhantom, ofStale)
		s.exists(ofNew)
	})
}

func TestOwnerGCNamespaces(t *testing.T) {
	eachMode(t, "gc-namespaces", func(s *scenario) {
		elsewhere := namespaces.New(s.t, s.ns+"-other")
		foreign := s.create(configMaps, elsewhere, "foreign-owner", nil)
		// A namespaced dependent whose owner lives in another namespace:
		// looked up in its own namespace only, so it is garbage.
		crossNS := s.cm("cross-namespace", foreign.ref(false))
		// A cluster-scoped dependent naming a namespaced owner kind: kept.
		clusterDep := s.create(clusterRBs, "-", s.ns+"-cluster-dep", nil, foreign.ref(false))
		s.snap()
		if !s.dry {
			s.waitGone(crossNS)
		}
		if s.kubegcd() {
			eventually(s.t, gcTimeout, func() error {
				for _, e := range s.auditFor(clusterDep) {
					if e.Rule == "BR-21-07" && e.Action == "keep" && e.Outcome == "skipped" {
						return nil
					}
				}
				return fmt.Errorf("no BR-21-07 keep row for the cluster-scoped dependent")
			})
		}
		s.exists(clusterDep)
		s.exists(foreign)
		if s.dry {
			return
		}
		// kube-controller-manager warns likewise.
		eventually(s.t, gcTimeout, func() error {
			evs, err := kube.CoreV1().Events("default").List(s.ctx, metav1.ListOptions{FieldSelector: "reason=OwnerRefInvalidNamespace"})
			if err != nil {
				return err
			}
			for _, ev := range evs.Items {
				if ev.InvolvedObject.UID == clusterDep.uid && ev.Type == "Warning" {
					return nil
				}
			}
			return fmt.Errorf("no OwnerRefInvalidNamespace Warning for %s among %d events", clusterDep.name, len(evs.Items))
		})
		s.t.Logf("OwnerRefInvalidNamespace warnings about %v", s.invalidNamespaceWarnings())
	})
}

func TestOwnerGCFinalizerHeldDependentGetsOneDelete(t *testing.T) {
	eachMode(t, "gc-held", func(s *scenario) {
		owner := s.cm("owner")
		held := s.create(configMaps, "", "held", []string{holdFinalizer}, owner.ref(false))
		s.delete(owner, metav1.DeletePropagationBackground)
		s.snap()
		if !s.dry {
			// It stays "being deleted" until the end of the mode.
			s.waitDeleting(held)
			s.t.Cleanup(func() { s.removeFinalizers(held) })
		}
		if !s.kubegcd() {
			return
		}
		// Several resync periods later, still exactly one delete.
		eventually(s.t, gcTimeout, func() error {
			if n := len(s.auditFor(held)); n != 1 {
				return fmt.Errorf("%d audit rows for the held dependent", n)
			}
			return nil
		})
		s.stable(4*time.Second, func() error {
			if rows := s.auditFor(held); len(rows) != 1 || rows[0].Action != "delete" {
				return fmt.Errorf("audit rows for the held dependent: %+v", rows)
			}
			return nil
		})
	})
}

func TestOwnerGCForegroundCycle(t *testing.T) {
	eachMode(t, "gc-cycle", func(s *scenario) {
		a := s.cm("a")
		b := s.cm("b", a.ref(true))
		s.patchOwners(a, b.ref(true))
		s.delete(a, metav1.DeletePropagationForeground)
		s.snap()
		if s.dry {
			return
		}
		s.waitGone(a, b)
	})
}

func TestOwnerGCOwnerDeletedWhileStopped(t *testing.T) {
	eachMode(t, "gc-stopped", func(s *scenario) {
		owner := s.cm("owner")
		dep := s.cm("dep", owner.ref(true))
		depOfDep := s.create(secrets, "", "dep-of-dep", nil, dep.ref(true))
		s.restart(func() {
			s.delete(owner, metav1.DeletePropagationBackground)
			s.snap()
		})
		if s.dry {
			return
		}
		s.waitGone(dep, depOfDep)
	})
}

// TestOwnerGCUnservedOwnerKind: a reference to a kind the API does not
// serve is never taken for an absent owner; nor is one to a kind served so
// recently that discovery has not seen it yet. Mostly kubegcd's own timing
// (its discovery interval, its audit); kube-controller-manager must keep
// the same objects in the meantime.
func TestOwnerGCUnservedOwnerKind(t *testing.T) {
	var enforced clusterState
	for _, mode := range []gcMode{modeEnforce, modeKCM} {
		t.Run(string(mode), func(t *testing.T) {
			s := newScenarioIn(t, "gc-unserved-"+string(mode), mode, "--discovery-interval=5s")
			group := "unserved-" + s.ns + ".kubegcd.io"
			ghost := obj{kind: "Sprocket", apiVersion: group + "/v1", name: "s1", uid: "00000000-0000-0000-0000-00000000f00d"}
			ofGhost := s.cm("of-ghost", ghost.ref(true))
			s.stable(4*time.Second, func() error {
				if s.get(ofGhost) == nil {
					return fmt.Errorf("dependent of an unserved kind was deleted")
				}
				return nil
			})
			if s.kubegcd() {
				if rows := s.auditFor(ofGhost); len(rows) != 0 {
					t.Fatalf("decisions about a dependent of an unserved kind: %+v", rows)
				}
			}

			// The kind becomes served, its owner and a dependent of it appear
			// at once, before kubegcd's next discovery.
			if err := createCRD(s.ctx, group, "sprockets", "Sprocket", "Namespaced"); err != nil {
				t.Fatal(err)
			}
			sprockets := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "sprockets"}
			kinds[sprockets] = "Sprocket"
			owner := s.create(sprockets, "", "s1", nil)
			ofOwner := s.cm("of-owner", owner.ref(true))
			s.stable(8*time.Second, func() error {
				if s.get(ofOwner) == nil {
					return fmt.Errorf("dependent of an existing owner was deleted")
				}
				return nil
			})
			if mode == modeKCM {
				// kube-controller-manager learns new kinds only on its
				// garbage collector's discovery resync, every 30 s (fixed),
				// and backs off retrying of-ghost meanwhile: its collection
				// takes up to a minute, so it is not awaited. The rest must
				// match.
				if enforced == nil {
					t.Fatal("enforce mode did not run to the end: nothing to compare with")
				}
				s.requireParity(enforced.only(s.key(owner), s.key(ofOwner)), s.settled(owner, ofOwner))
				return
			}
			if rows := s.auditFor(ofOwner); len(rows) != 0 {
				t.Fatalf("decisions about a dependent of an existing owner: %+v", rows)
			}
			// Now the kind is known and "s1" exists with another UID than the
			// ghost reference names: that one is garbage, as upstream decides.
			s.waitGone(ofGhost)
			enforced = s.settled()
			t.Logf("end state:\n%s", enforced)
		})
	}
}
