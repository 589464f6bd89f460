package ingest

import (
	"reflect"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
