package copies

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/reconcile"
)

var (
	cmGVR     = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secretGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	t0        = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
)

// kinds is a KindResolver over ConfigMaps and Secrets.
type kinds struct{}

func (kinds) ResourceForKind(_ context.Context, group, kind string) (*db.Resource, error) {
	switch {
	case group == "" && kind == "ConfigMap":
		return &db.Resource{Version: "v1", Resource: "configmaps", Kind: kind, Namespaced: true}, nil
	case group == "" && kind == "Secret":
		return &db.Resource{Version: "v1", Resource: "secrets", Kind: kind, Namespaced: true}, nil
	}
	return nil, db.ErrNotFound
}

var _ reconcile.KindResolver = kinds{}

// fakeStore keeps copies in memory; a body of "corrupt" reads as corrupt.
type fakeStore struct {
	copies map[string]*db.DeletedCopy
}

func (s *fakeStore) PutDeletedCopy(_ context.Context, dc *db.DeletedCopy) error {
	c := *dc
	s.copies[dc.Target.UID] = &c
	return nil
}

func (s *fakeStore) DropDeletedCopy(_ context.Context, uid string) error {
	delete(s.copies, uid)
	return nil
}

func (s *fakeStore) DeletedCopy(_ context.Context, uid string) (*db.DeletedCopy, error) {
	dc, ok := s.copies[uid]
	if !ok {
		return nil, fmt.Errorf("no copy of a deleted object with uid %q: %w", uid, db.ErrNotFound)
	}
	if string(dc.Object) == "corrupt" {
		return nil, fmt.Errorf("the copy of %s %s is %w: gzip: invalid header", dc.Target.Kind, uid, db.ErrCorruptCopy)
	}
	c := *dc
	return &c, nil
}

func (s *fakeStore) MarkRestored(_ context.Context, uid, restoredUID string, at time.Time, by string) error {
	dc := s.copies[uid]
	if dc.RestoredUID != "" {
		return db.ErrAlreadyRestored
	}
	dc.RestoredUID, dc.RestoredAt, dc.RestoredBy = restoredUID, &at, by
	return nil
}

// fakeAudit records the operator's rows.
type fakeAudit struct{ rows []string }

func (a *fakeAudit) RecordOperator(_ context.Context, action api.Action, target api.Target, reason string, facts any) error {
	b, _ := json.Marshal(facts)
	a.rows = append(a.rows, fmt.Sprintf("%s %s %s: %s %s", action, target, target.UID, reason, b))
	return nil
}

func cmJSON(name, uid string, owners ...metav1.OwnerReference) []byte {
	o := map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": "a", "uid": uid, "resourceVersion": "7",
			"labels": map[string]any{"app": "web"}, "annotations": map[string]any{"note": "n"}},
		"data": map[string]any{"k": "v"}}
	if len(owners) > 0 {
		o["metadata"].(map[string]any)["ownerReferences"] = owners
	}
	b, _ := json.Marshal(o)
	return b
}

func live(gvr schema.GroupVersionResource, kind, name, uid string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind(kind)
	u.SetNamespace("a")
	u.SetName(name)
	u.SetUID(types.UID(uid))
	return u
}

func newDynamic(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	c := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{cmGVR: "ConfigMapList", secretGVR: "SecretList"}, objs...)
	// The API server gives a created object its UID.
	c.PrependReactor("create", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		obj := a.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured)
		obj.SetUID(types.UID("new-" + obj.GetName()))
		return false, nil, nil
	})
	return c
}

func TestRestore(t *testing.T) {
	goneOwner := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "o-gone"}
	liveOwner := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "parent", UID: "o-live"}
	renamedOwner := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "parent", UID: "o-old"}
	unservedOwner := metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Widget", Name: "w", UID: "o-w"}
	restored := &db.DeletedCopy{RestoredUID: "n0", RestoredBy: "bob"}
	tests := []struct {
		name       string
		copy       *db.DeletedCopy
		uid        string // default the copy's
		allowEmpty bool
		objects    []runtime.Object
		react      func(clienttesting.Action) (bool, runtime.Object, error)
		wantErr    error
		wantText   string
		wantDrop   []string // the UIDs of the owners dropped
	}{
		{name: "a ConfigMap whose owner is gone", copy: &db.DeletedCopy{Object: cmJSON("c", "u1", goneOwner)},
			wantDrop: []string{"o-gone"}},
		{name: "an owner that exists is kept", copy: &db.DeletedCopy{Object: cmJSON("c", "u1", liveOwner, goneOwner)},
			objects: []runtime.Object{live(cmGVR, "ConfigMap", "parent", "o-live")}, wantDrop: []string{"o-gone"}},
		{name: "an owner of that name with another UID is gone",
			copy:    &db.DeletedCopy{Object: cmJSON("c", "u1", renamedOwner)},
			objects: []runtime.Object{live(cmGVR, "ConfigMap", "parent", "o-live")}, wantDrop: []string{"o-old"}},
		{name: "an owner of a kind not served is gone", copy: &db.DeletedCopy{Object: cmJSON("c", "u1", unservedOwner)},
			wantDrop: []string{"o-w"}},
		{name: "no copy", copy: &db.DeletedCopy{Object: cmJSON("c", "u1")}, uid: "ghost", wantErr: ErrNoCopy,
			wantText: `no copy of a deleted object with uid "ghost"`},
		{name: "already restored", copy: restored, wantErr: ErrRefused,
			wantText: "the copy of ConfigMap a/c (uid u1) was already restored as uid n0 by bob"},
		{name: "the name exists", copy: &db.DeletedCopy{Object: cmJSON("c", "u1")},
			objects: []runtime.Object{live(cmGVR, "ConfigMap", "c", "other")}, wantErr: ErrRefused,
			wantText: "ConfigMap a/c exists (uid other): delete it first"},
		{name: "corrupt", copy: &db.DeletedCopy{Object: []byte("corrupt")}, wantErr: ErrRefused,
			wantText: "the copy of ConfigMap u1 is corrupt"},
		{name: "not served any more", copy: &db.DeletedCopy{Object: cmJSON("c", "u1")},
			react: func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewNotFound(schema.GroupResource{}, "")
			},
			wantErr: ErrRefused, wantText: "the API server no longer serves configmaps in v1"},
		{name: "its namespace is gone", copy: &db.DeletedCopy{Object: cmJSON("c", "u1")},
			react: func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "a")
			},
			wantErr: ErrRefused, wantText: "namespace a does not exist"},
		{name: "a Secret without its data", wantErr: ErrRefused, wantText: "holds no data",
			copy: &db.DeletedCopy{SecretDataDropped: true,
				Object: []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"c","namespace":"a","uid":"u1"}}`)}},
		{name: "a Secret without its data, allowed", allowEmpty: true,
			copy: &db.DeletedCopy{SecretDataDropped: true,
				Object: []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"c","namespace":"a","uid":"u1"}}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dc := tt.copy
			dc.Target = api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: "c", UID: "u1"}
			dc.Resource, dc.Controller, dc.RuleID, dc.RuleHash, dc.TakenAt = "configmaps", api.ControllerRules, "stale", "h1", t0
			if strings.Contains(string(dc.Object), `"Secret"`) {
				dc.Target.Kind, dc.Resource = "Secret", "secrets"
			}
			if dc.Object == nil {
				dc.Object = cmJSON("c", "u1")
			}
			store := &fakeStore{copies: map[string]*db.DeletedCopy{"u1": dc}}
			dyn := newDynamic(tt.objects...)
			if tt.react != nil {
				dyn.PrependReactor("create", "*", tt.react)
			}
			audit := &fakeAudit{}
			r := &Restorer{Dynamic: dyn, Kinds: kinds{}, Store: store, Audit: audit, Now: func() time.Time { return t0.Add(time.Hour) }}
			uid := tt.uid
			if uid == "" {
				uid = "u1"
			}
			got, err := r.Restore(context.Background(), uid, "alice", tt.allowEmpty)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.wantText) {
					t.Fatalf("error %v, want %v saying %q", err, tt.wantErr, tt.wantText)
				}
				if len(audit.rows) != 0 {
					t.Errorf("audited %v, want nothing", audit.rows)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			gvr := cmGVR
			if dc.Target.Kind == "Secret" {
				gvr = secretGVR
			}
			obj, err := dyn.Resource(gvr).Namespace("a").Get(context.Background(), "c", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("not created: %v", err)
			}
			if got.Target.UID != "new-c" || got.DeletedUID != "u1" || string(obj.GetUID()) != "new-c" {
				t.Errorf("result %+v, object uid %s; want the new uid new-c from u1", got, obj.GetUID())
			}
			if obj.GetResourceVersion() == "7" {
				t.Error("created with the copy's resourceVersion")
			}
			var dropped []string
			for _, ref := range got.DroppedOwnerReferences {
				dropped = append(dropped, ref.UID)
			}
			if diff := cmp.Diff(tt.wantDrop, dropped); diff != "" {
				t.Errorf("dropped owners (-want +got):\n%s", diff)
			}
			for _, ref := range obj.GetOwnerReferences() {
				if contains(tt.wantDrop, string(ref.UID)) {
					t.Errorf("created with the reference to %s", ref.UID)
				}
			}
			if got.SecretDataEmpty != dc.SecretDataDropped {
				t.Errorf("secretDataEmpty %v, want %v", got.SecretDataEmpty, dc.SecretDataDropped)
			}
			if c := store.copies["u1"]; c.RestoredUID != "new-c" || c.RestoredBy != "alice" {
				t.Errorf("copy marked restored as %q by %q, want new-c by alice", c.RestoredUID, c.RestoredBy)
			}
			if len(audit.rows) != 1 || !strings.Contains(audit.rows[0], `restore `+dc.Target.Kind+` a/c new-c: restored from the copy of uid u1, which rule stale deleted`) ||
				!strings.Contains(audit.rows[0], `"deletedUID":"u1","rule":"stale","ruleHash":"h1","by":"alice"`) {
				t.Errorf("audit %v, want one restore row with its facts", audit.rows)
			}
		})
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestKeeper(t *testing.T) {
	secret := live(secretGVR, "Secret", "s", "u2")
	secret.Object["data"] = map[string]any{"password": "aHVudGVy"}
	tests := []struct {
		name       string
		d          reconcile.Decision
		keepSecret bool
		wantCopy   bool
		wantRule   string
		wantData   bool
	}{
		{name: "a rule's delete", d: reconcile.Decision{Controller: api.ControllerRules, Rule: "stale", RuleHash: "h1",
			Action: api.ActionDelete, Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: "c", UID: "u1"}},
			wantCopy: true, wantRule: "stale"},
		{name: "a collector's", d: reconcile.Decision{Controller: api.ControllerOwnerGC, Rule: "BR-21-01",
			Action: api.ActionDelete, Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: "c", UID: "u1"}},
			wantCopy: true},
		{name: "gone already", d: reconcile.Decision{Controller: api.ControllerOwnerGC, Action: api.ActionDelete,
			Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: "gone", UID: "u9"}}},
		{name: "another of its name", d: reconcile.Decision{Controller: api.ControllerOwnerGC, Action: api.ActionDelete,
			Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: "c", UID: "older"}}},
		{name: "a Secret without data", d: reconcile.Decision{Controller: api.ControllerOwnerGC, Action: api.ActionDelete,
			Target: api.Target{APIVersion: "v1", Kind: "Secret", Namespace: "a", Name: "s", UID: "u2"}}, wantCopy: true},
		{name: "a Secret with data", keepSecret: true, d: reconcile.Decision{Controller: api.ControllerOwnerGC,
			Action: api.ActionDelete, Target: api.Target{APIVersion: "v1", Kind: "Secret", Namespace: "a", Name: "s", UID: "u2"}},
			wantCopy: true, wantData: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &fakeStore{copies: map[string]*db.DeletedCopy{}}
			k := &Keeper{Dynamic: newDynamic(live(cmGVR, "ConfigMap", "c", "u1"), secret.DeepCopy()), Kinds: kinds{},
				Store: store, KeepSecretData: tt.keepSecret, Now: func() time.Time { return t0 }}
			drop, err := k.Keep(context.Background(), tt.d)
			if err != nil {
				t.Fatal(err)
			}
			dc, ok := store.copies[tt.d.Target.UID]
			if ok != tt.wantCopy || (drop != nil) != tt.wantCopy {
				t.Fatalf("copy kept %v, drop %v; want %v", ok, drop != nil, tt.wantCopy)
			}
			if !ok {
				return
			}
			if dc.RuleID != tt.wantRule || dc.Controller != tt.d.Controller || !dc.TakenAt.Equal(t0) {
				t.Errorf("copy %+v, want rule %q of %s at %v", dc, tt.wantRule, tt.d.Controller, t0)
			}
			if tt.wantRule != "" && dc.RuleHash != "h1" {
				t.Errorf("rule hash %q, want h1", dc.RuleHash)
			}
			if has := strings.Contains(string(dc.Object), "aHVudGVy"); has != tt.wantData {
				t.Errorf("copy holds the Secret's data: %v, want %v", has, tt.wantData)
			}
			drop()
			if _, ok := store.copies[tt.d.Target.UID]; ok {
				t.Error("drop left the copy")
			}
		})
	}
}
