package copies

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/reconcile"
)

// Store keeps the copies; db.Copies is one.
type Store interface {
	PutDeletedCopy(ctx context.Context, dc *db.DeletedCopy) error
	DropDeletedCopy(ctx context.Context, uid string) error
}

// Keeper keeps the copy of an object about to be deleted. Its Keep is the
// applier's KeepCopy hook: it reads the object whole, live, and stores its
// copy.
type Keeper struct {
	// Dynamic reads the object whole.
	Dynamic dynamic.Interface
	// Kinds maps the object's kind to the resource that serves it.
	Kinds reconcile.KindResolver
	Store Store
	// KeepSecretData keeps a Secret's data in its copy
	// (--keep-deleted-secrets).
	KeepSecretData bool
	Now            func() time.Time
	Log            *slog.Logger
}

// Keep reads d's object live and keeps its copy. An object gone, or
// replaced by another of its name, needs none: the delete's preconditions
// settle it. drop removes the copy again, for a delete that did not
// happen.
func (k *Keeper) Keep(ctx context.Context, d reconcile.Decision) (drop func(), err error) {
	gvr, _, err := k.resource(ctx, d.Target.APIVersion, d.Target.Kind)
	if err != nil {
		return nil, err
	}
	obj, err := k.Dynamic.Resource(gvr).Namespace(d.Target.Namespace).Get(ctx, d.Target.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s whole: %w", d.Target, err)
	}
	return k.KeepRead(ctx, d, gvr.Resource, obj)
}

// KeepRead keeps the copy of obj, d's object as the caller has just read
// it whole, served by resource: for a caller that reads the object live
// anyway before it deletes. An object of another UID than d's needs none.
func (k *Keeper) KeepRead(ctx context.Context, d reconcile.Decision, resource string,
	obj *unstructured.Unstructured) (drop func(), err error) {
	if string(obj.GetUID()) != d.Target.UID {
		return nil, nil
	}
	body, dropped, err := Take(obj, k.KeepSecretData)
	if err != nil {
		return nil, err
	}
	dc := &db.DeletedCopy{Target: d.Target, Resource: resource, Controller: d.Controller, TakenAt: k.now(),
		Object: body, SecretDataDropped: dropped}
	if d.Controller == api.ControllerRules {
		dc.RuleID, dc.RuleHash = d.Rule, d.RuleHash
	}
	if err := k.Store.PutDeletedCopy(ctx, dc); err != nil {
		return nil, err
	}
	uid := d.Target.UID
	return func() {
		if err := k.Store.DropDeletedCopy(context.WithoutCancel(ctx), uid); err != nil && k.Log != nil {
			k.Log.Warn("a copy of an object not deleted is kept", "uid", uid, "err", err)
		}
	}, nil
}

func (k *Keeper) now() time.Time {
	if k.Now != nil {
		return k.Now()
	}
	return time.Now()
}

// resource maps apiVersion and kind to the resource that serves them, as
// discovery recorded it, and says whether it is namespaced.
func (k *Keeper) resource(ctx context.Context, apiVersion, kind string) (schema.GroupVersionResource, bool, error) {
	return resourceFor(ctx, k.Kinds, apiVersion, kind)
}

// errNotServed: no watched resource serves the kind.
var errNotServed = errors.New("no resource the API server serves has that kind")

func resourceFor(ctx context.Context, kinds reconcile.KindResolver, apiVersion, kind string) (
	schema.GroupVersionResource, bool, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return schema.GroupVersionResource{}, false, fmt.Errorf("apiVersion %q: %w", apiVersion, err)
	}
	r, err := kinds.ResourceForKind(ctx, gv.Group, kind)
	if errors.Is(err, db.ErrNotFound) {
		return schema.GroupVersionResource{}, false, fmt.Errorf("%s %s: %w", kind, strings.TrimSuffix(gv.Group, "."), errNotServed)
	}
	if err != nil {
		return schema.GroupVersionResource{}, false, err
	}
	return gv.WithResource(r.Resource), r.Namespaced, nil
}
