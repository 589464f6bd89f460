package auditpeers

import (
	"context"
	"log/slog"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// Without coordinated election an instance advertises its URL on a peer
// Lease of its own, renewed by a patch; the others list it, a dead
// instance's for an hour past its term, then delete it.
func TestAdvertisePeerLease(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	a := &Advertiser{Client: client, Namespace: "kube-system", Lease: "kubegcd", Identity: "host_a1",
		URL: "https://a:8080", Logger: slog.New(slog.DiscardHandler), Now: clock}
	b := *a
	b.Identity, b.URL = "host_b1", "https://b:8080"
	for range 2 { // create, then renew
		for _, ad := range []*Advertiser{a, &b} {
			if err := ad.advertise(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Another election's peer Lease is not listed.
	other := &Advertiser{Client: client, Namespace: "kube-system", Lease: "other", Identity: "host_c1",
		URL: "https://c:8080", Logger: a.Logger, Now: clock}
	if err := other.advertise(ctx); err != nil {
		t.Fatal(err)
	}
	ads, err := a.Discover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ads) != 2 || ads[0] != (Advert{"host_a1", "https://a:8080"}) || ads[1] != (Advert{"host_b1", "https://b:8080"}) {
		t.Errorf("adverts: %+v, want a and b", ads)
	}
	// b dies (no withdraw): listed for an hour past its term, then deleted.
	now = now.Add(30 * time.Minute)
	if ads, _ := a.Discover(ctx); len(ads) != 2 {
		t.Errorf("a dead instance's advert within the hour: %+v, want it listed", ads)
	}
	now = now.Add(time.Hour)
	if err := a.advertise(ctx); err != nil {
		t.Fatal(err)
	}
	if ads, _ := a.Discover(ctx); len(ads) != 1 || ads[0].Identity != "host_a1" {
		t.Errorf("adverts past the hour: %+v, want a alone", ads)
	}
	if _, err := client.CoordinationV1().Leases("kube-system").Get(ctx, peerLeaseName("kubegcd", "host_b1"),
		metav1.GetOptions{}); err == nil {
		t.Error("the stale peer Lease was not deleted")
	}
	a.withdraw()
	if ads, _ := a.Discover(ctx); len(ads) != 0 {
		t.Errorf("adverts after a's withdrawal: %+v", ads)
	}
}

// Under coordinated election the URL is an annotation on the instance's
// LeaseCandidate, and the candidates of the election Lease are listed.
func TestAdvertiseCandidate(t *testing.T) {
	ctx := context.Background()
	cand := func(name, lease string) *coordinationv1beta1.LeaseCandidate {
		return &coordinationv1beta1.LeaseCandidate{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system"},
			Spec: coordinationv1beta1.LeaseCandidateSpec{LeaseName: lease,
				Strategy: coordinationv1.OldestEmulationVersion}}
	}
	client := fake.NewClientset(cand("host_a1", "kubegcd"), cand("host_x1", "other"))
	a := &Advertiser{Client: client, Namespace: "kube-system", Lease: "kubegcd", Identity: "host_a1",
		URL: "https://a:8080", Coordinated: true, Logger: slog.New(slog.DiscardHandler)}
	b := *a
	b.Identity = "host_b1" // not standing yet: nothing to annotate
	for _, ad := range []*Advertiser{a, &b} {
		if err := ad.advertise(ctx); err != nil {
			t.Fatal(err)
		}
	}
	ads, err := a.Discover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ads) != 1 || ads[0] != (Advert{"host_a1", "https://a:8080"}) {
		t.Errorf("adverts: %+v, want a's", ads)
	}
}
