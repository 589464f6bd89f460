package e2elease

import (
	"context"
	"testing"
	"time"

	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestControlPlaneServesLeaseCandidates: the suite's control plane serves
// LeaseCandidates, and keeps the spec a client writes, an old renewTime
// included (what the collectors' tests rely on).
func TestControlPlaneServesLeaseCandidates(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns := namespaces.New(t, "served")
	renew := metav1.NewMicroTime(time.Now().Add(-31 * time.Minute).Truncate(time.Microsecond))
	lc, err := kube.CoordinationV1beta1().LeaseCandidates(ns).Create(ctx, &coordinationv1beta1.LeaseCandidate{
		ObjectMeta: metav1.ObjectMeta{Name: "old"},
		Spec: coordinationv1beta1.LeaseCandidateSpec{LeaseName: "some-lease", BinaryVersion: "1.36.0", EmulationVersion: "1.36.0",
			Strategy: "OldestEmulationVersion", RenewTime: &renew},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a LeaseCandidate: %v", err)
	}
	if lc.Spec.RenewTime == nil || !lc.Spec.RenewTime.Time.Equal(renew.Time) {
		t.Errorf("renewTime %v, want %v as written", lc.Spec.RenewTime, renew)
	}
}
