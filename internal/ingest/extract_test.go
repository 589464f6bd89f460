package ingest

import (
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1alpha2 "k8s.io/api/coordination/v1alpha2"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubegcd/kubegcd/internal/db"
)

// A Lease, read as typed protobuf, keeps what its JSON form would give:
// times to the microsecond, unset fields nil, the identity label.
func TestExtractLease(t *testing.T) {
	renew := time.Date(2026, 11, 24, 1, 2, 3, 456789123, time.UTC)
	micro := renew.Truncate(time.Microsecond)
	for _, tc := range []struct {
		name  string
		lease *coordinationv1.Lease
		want  *db.Lease
	}{
		{"a node's heartbeat", &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: new("node-1"),
			LeaseDurationSeconds: new(int32(40)), RenewTime: &metav1.MicroTime{Time: renew}}},
			&db.Lease{HolderIdentity: new("node-1"), LeaseDurationSeconds: new(int32(40)), RenewTime: &micro}},
		{"a kube-apiserver's identity", &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{apiserverIdentity: "kube-apiserver"}},
			Spec:       coordinationv1.LeaseSpec{AcquireTime: &metav1.MicroTime{Time: renew}, LeaseTransitions: new(int32(2))}},
			&db.Lease{AcquireTime: &micro, LeaseTransitions: new(int32(2)), IdentityLabel: new("kube-apiserver")}},
		{"empty, a zero time unset", &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{}}},
			&db.Lease{}},
		{"coordinated, with a preferred holder", &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: new("a"),
			Strategy: new(coordinationv1.OldestEmulationVersion), PreferredHolder: new("b")}},
			&db.Lease{HolderIdentity: new("a"), Strategy: new("OldestEmulationVersion"), PreferredHolder: new("b")}},
		{"a strategy of a later release", &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{
			Strategy: new(coordinationv1.CoordinatedLeaseStrategy("NewestEmulationVersion"))}},
			&db.Lease{Strategy: new("NewestEmulationVersion")}},
	} {
		var o db.Object
		extractLease(tc.lease, &o)
		if !reflect.DeepEqual(o.Lease, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, o.Lease, tc.want)
		}
	}
	var o db.Object
	extractLease(&coordinationv1.LeaseList{}, &o)
	if o.Lease != nil {
		t.Errorf("not a Lease: %+v", o.Lease)
	}
}

// A LeaseCandidate keeps the same spec whichever version served it: typed
// v1beta1 or v1alpha2, or unstructured for a version without types.
func TestExtractLeaseCandidate(t *testing.T) {
	ping := time.Date(2026, 11, 24, 1, 2, 3, 456789123, time.UTC)
	renew := ping.Add(time.Second)
	pingMicro, renewMicro := ping.Truncate(time.Microsecond), renew.Truncate(time.Microsecond)
	full := &db.LeaseCandidate{LeaseName: "kube-scheduler", BinaryVersion: "1.36.3", EmulationVersion: "1.35.0",
		Strategy: "OldestEmulationVersion", PingTime: &pingMicro, RenewTime: &renewMicro}
	for _, tc := range []struct {
		name string
		obj  runtime.Object
		want *db.LeaseCandidate
	}{
		{"v1beta1", &coordinationv1beta1.LeaseCandidate{Spec: coordinationv1beta1.LeaseCandidateSpec{LeaseName: "kube-scheduler",
			BinaryVersion: "1.36.3", EmulationVersion: "1.35.0", Strategy: coordinationv1.OldestEmulationVersion,
			PingTime: &metav1.MicroTime{Time: ping}, RenewTime: &metav1.MicroTime{Time: renew}}}, full},
		{"v1alpha2", &coordinationv1alpha2.LeaseCandidate{Spec: coordinationv1alpha2.LeaseCandidateSpec{LeaseName: "kube-scheduler",
			BinaryVersion: "1.36.3", EmulationVersion: "1.35.0", Strategy: coordinationv1.OldestEmulationVersion,
			PingTime: &metav1.MicroTime{Time: ping}, RenewTime: &metav1.MicroTime{Time: renew}}}, full},
		{"unstructured", &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "coordination.k8s.io/v1", "kind": "LeaseCandidate",
			"metadata": map[string]any{"name": "c", "namespace": "kube-system"},
			"spec": map[string]any{"leaseName": "kube-scheduler", "binaryVersion": "1.36.3", "emulationVersion": "1.35.0",
				"strategy": "OldestEmulationVersion", "pingTime": pingMicro.Format(metav1.RFC3339Micro),
				"renewTime": renewMicro.Format(metav1.RFC3339Micro)}}}, full},
		{"never pinged nor renewed", &coordinationv1beta1.LeaseCandidate{Spec: coordinationv1beta1.LeaseCandidateSpec{
			LeaseName: "l", BinaryVersion: "1.36.0", RenewTime: &metav1.MicroTime{}}},
			&db.LeaseCandidate{LeaseName: "l", BinaryVersion: "1.36.0"}},
		{"unstructured, a spec it cannot read", &unstructured.Unstructured{Object: map[string]any{
			"spec": map[string]any{"leaseName": int64(3)}}}, nil},
		{"not a candidate", &coordinationv1.Lease{}, nil},
	} {
		var o db.Object
		extractLeaseCandidate(tc.obj, &o)
		if diff := cmp.Diff(tc.want, o.LeaseCandidate); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}
