package db

import (
	"context"
	"reflect"
	"testing"
	"time"
)

// A LeaseCandidate's spec and a Lease's coordinated-election fields are
// mirrored as written, read back whole, and listed by namespace and Lease.
func TestLeaseCandidatesMirrored(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	m := d.Mirror()
	lcs, err := m.EnsureResource(ctx, Resource{Group: "coordination.k8s.io", Version: "v1beta1", Resource: "leasecandidates", Kind: "LeaseCandidate", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	leases, err := m.EnsureResource(ctx, Resource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases", Kind: "Lease", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ping := t0.Add(-time.Minute)
	candidate := func(uid, ns, name, lease string, renew *time.Time) *Object {
		return &Object{UID: uid, APIVersion: "coordination.k8s.io/v1beta1", Kind: "LeaseCandidate", Namespace: ns, Name: name,
			ResourceVersion: "7", CreationTimestamp: &t0,
			LeaseCandidate: &LeaseCandidate{LeaseName: lease, BinaryVersion: "1.36.0", EmulationVersion: "1.35.0",
				Strategy: "OldestEmulationVersion", PingTime: &ping, RenewTime: renew}}
	}
	objs := []*Object{
		candidate("c1", "kube-system", "kcm-a", "kube-controller-manager", &t0),
		candidate("c2", "kube-system", "kcm-b", "kube-controller-manager", nil),
		candidate("c3", "kube-system", "sched-a", "kube-scheduler", &t0),
		candidate("c4", "other", "x", "kube-controller-manager", &t0),
	}
	if _, err := m.ApplyWatchEvents(ctx, lcs, "7", eventsOf(lcs, objs...)); err != nil {
		t.Fatal(err)
	}
	strategy, preferred, holder := "OldestEmulationVersion", "kcm-a", "kcm-b"
	lease := &Object{UID: "l1", APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Namespace: "kube-system", Name: "kube-controller-manager",
		ResourceVersion: "8", Lease: &Lease{HolderIdentity: &holder, Strategy: &strategy, PreferredHolder: &preferred}}
	if _, err := m.ApplyWatchEvents(ctx, leases, "8", eventsOf(leases, lease)); err != nil {
		t.Fatal(err)
	}

	got, err := d.Objects().LeaseCandidates(ctx, LeaseCandidateFilter{Namespace: "kube-system", LeaseName: "kube-controller-manager"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "kcm-a" || got[1].Name != "kcm-b" {
		t.Fatalf("candidates of kube-system/kube-controller-manager: %+v", got)
	}
	if want := *objs[0].LeaseCandidate; !reflect.DeepEqual(got[0].LeaseCandidate, want) || got[0].UID != "c1" ||
		got[0].ResourceVersion != "7" || got[0].Created == nil || !got[0].Created.Equal(t0) || got[0].Deleting {
		t.Errorf("kcm-a: %+v, want %+v", got[0], want)
	}
	if got[1].RenewTime != nil {
		t.Errorf("kcm-b has no renewTime, read %v", got[1].RenewTime)
	}
	if all, err := d.Objects().LeaseCandidates(ctx, LeaseCandidateFilter{}); err != nil || len(all) != 4 {
		t.Errorf("every candidate: %d, %v; want 4", len(all), err)
	}

	o, err := d.Objects().GetObject(ctx, "c3")
	if err != nil || o == nil || o.LeaseCandidate == nil || o.LeaseCandidate.LeaseName != "kube-scheduler" {
		t.Errorf("GetObject(c3): %+v, %v", o, err)
	}
	rows, err := d.Objects().Leases(ctx, LeaseFilter{Namespace: "kube-system"})
	if err != nil || len(rows) != 1 || rows[0].Strategy == nil || *rows[0].Strategy != strategy ||
		rows[0].PreferredHolder == nil || *rows[0].PreferredHolder != preferred {
		t.Errorf("the Lease: %+v, %v; want its strategy and preferred holder", rows, err)
	}
	if o, err := d.Objects().GetObject(ctx, "l1"); err != nil || o.Lease == nil || o.Lease.PreferredHolder == nil {
		t.Errorf("GetObject(l1): %+v, %v", o, err)
	}
}
