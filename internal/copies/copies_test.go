package copies

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

func object(t *testing.T, js string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(js)); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestTake(t *testing.T) {
	const cm = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"a","uid":"u1"},"data":{"k":"v"}}`
	const secret = `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"a","uid":"u2"},` +
		`"type":"Opaque","data":{"password":"aHVudGVyMg=="},"stringData":{"user":"alice"}}`
	const secretNoData = `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"a","uid":"u2"},"type":"Opaque"}`
	const notCoreSecret = `{"apiVersion":"example.com/v1","kind":"Secret","metadata":{"name":"s"},"data":{"k":"v"}}`
	tests := []struct {
		name     string
		in       string
		keep     bool
		want     string
		wantDrop bool
	}{
		{"a ConfigMap whole", cm, false, cm, false},
		{"a Secret without its data", secret, false, secretNoData, true},
		{"a Secret kept whole", secret, true, secret, false},
		{"a Secret that has no data", secretNoData, false, secretNoData, false},
		{"another group's Secret whole", notCoreSecret, false, notCoreSecret, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := object(t, tt.in)
			body, dropped, err := Take(obj, tt.keep)
			if err != nil {
				t.Fatal(err)
			}
			if dropped != tt.wantDrop {
				t.Errorf("secretDataDropped = %v, want %v", dropped, tt.wantDrop)
			}
			var got, want any
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("copy (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(object(t, tt.in).Object, obj.Object); diff != "" {
				t.Errorf("Take changed the object (-before +after):\n%s", diff)
			}
		})
	}
}

func TestPrepare(t *testing.T) {
	const live = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"a","uid":"u1",` +
		`"resourceVersion":"42","creationTimestamp":"2026-01-01T00:00:00Z","generation":3,"selfLink":"/x",` +
		`"managedFields":[{"manager":"kubectl"}],"labels":{"app":"web"},"annotations":{"note":"n"},` +
		`"finalizers":["example.com/keep"]},"data":{"k":"v"},"status":{"phase":"x"}}`
	const bare = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"a",` +
		`"labels":{"app":"web"},"annotations":{"note":"n"},"finalizers":["example.com/keep"]},"data":{"k":"v"}}`
	const deleting = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"a","uid":"u1",` +
		`"deletionTimestamp":"2026-01-02T00:00:00Z","deletionGracePeriodSeconds":0,` +
		`"finalizers":["foregroundDeletion","example.com/keep","orphan"]}}`
	const deletingBare = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"a",` +
		`"finalizers":["example.com/keep"]}}`
	const owned = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"a","uid":"u1","ownerReferences":[` +
		`{"apiVersion":"v1","kind":"ConfigMap","name":"gone","uid":"o1"},` +
		`{"apiVersion":"apps/v1","kind":"Deployment","name":"here","uid":"o2","controller":true}]}}`
	const ownedKept = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"a","ownerReferences":[` +
		`{"apiVersion":"apps/v1","kind":"Deployment","name":"here","uid":"o2","controller":true}]}}`
	const ownedNone = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"a"}}`
	yes := func(metav1.OwnerReference) (bool, error) { return true, nil }
	no := func(metav1.OwnerReference) (bool, error) { return false, nil }
	only := func(uid types.UID) func(metav1.OwnerReference) (bool, error) {
		return func(r metav1.OwnerReference) (bool, error) { return r.UID == uid, nil }
	}
	failed := errors.New("the API server is down")
	tests := []struct {
		name        string
		in          string
		exists      func(metav1.OwnerReference) (bool, error)
		want        string
		wantDropped []types.UID
		wantErr     string
	}{
		{"what the API server sets is stripped", live, yes, bare, nil, ""},
		{"the deletion's own finalizers go", deleting, yes, deletingBare, nil, ""},
		{"a gone owner's reference is dropped", owned, only("o2"), ownedKept, []types.UID{"o1"}, ""},
		{"every owner gone", owned, no, ownedNone, []types.UID{"o1", "o2"}, ""},
		{"an owner that cannot be looked up", owned, func(metav1.OwnerReference) (bool, error) { return false, failed },
			"", nil, "looking up the owner ConfigMap gone (uid o1): the API server is down"},
		{"not JSON", `{"kind":`, yes, "", nil, "the copy is not an object"},
		{"no name", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}`, yes, "", nil, "the copy of a ConfigMap has no name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, dropped, err := Prepare([]byte(tt.in), tt.exists)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(object(t, tt.want).Object, obj.Object); diff != "" {
				t.Errorf("prepared (-want +got):\n%s", diff)
			}
			var uids []types.UID
			for _, r := range dropped {
				uids = append(uids, r.UID)
			}
			if diff := cmp.Diff(tt.wantDropped, uids); diff != "" {
				t.Errorf("dropped (-want +got):\n%s", diff)
			}
		})
	}
}
