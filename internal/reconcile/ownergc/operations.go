package ownergc

import (
	"context"
	"encoding/json"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

// This file holds the collector's calls to the API server, as upstream's
// operations.go does: the live GET of an owner, then deletes and patches.
// Every write carries the UID and resourceVersion it was decided on.

// client returns the client of o's resource, and the resource.
func (c *Controller) client(ctx context.Context, o *db.Object) (metadata.ResourceInterface,
	schema.GroupVersionResource, error) {
	gvr, namespaced, err := c.gvrFor(ctx, o.APIVersion, o.Kind)
	if err != nil {
		return nil, gvr, err
	}
	if namespaced {
		return c.opts.Client.Resource(gvr).Namespace(o.Namespace), gvr, nil
	}
	return c.opts.Client.Resource(gvr), gvr, nil
}

// getOwner reads an owner missing from the mirror live.
//
// Every worker decides the dependents of one owner at once, so they share
// one GET rather than each send its own before the first answer fills the
// absent cache. Sharing an answer is sound: absent holds forever, since a
// UID never comes back, and present only keeps. The flight fills the cache,
// and the next flight reads it first. So a worker that missed the cache an
// instant before a flight ended sends no GET of its own.
func (c *Controller) getOwner(ctx context.Context, l refLookup) (*metav1.PartialObjectMetadata, error) {
	v, err, _ := c.ownerGets.Do(l.key.String(), func() (any, error) {
		if c.absent.has(l.key) {
			return nil, errKnownAbsent
		}
		rc := c.opts.Client.Resource(l.gvr).Namespace(l.namespace)
		live, err := rc.Get(ctx, l.ref.Name, metav1.GetOptions{})
		if err = unservedPath(err, l.gvr, l.ref.Name); apierrors.IsNotFound(err) && !isUnknownKind(err) {
			c.absent.add(l.key)
		}
		return live, err
	})
	live, _ := v.(*metav1.PartialObjectMetadata)
	return live, err
}

func (c *Controller) deleteObject(ctx context.Context, o *db.Object, policy metav1.DeletionPropagation) error {
	rc, gvr, err := c.client(ctx, o)
	if err != nil {
		return err
	}
	uid := types.UID(o.UID)
	rv := o.ResourceVersion
	// A 404 for an unserved path must not pass for a deleted object.
	return unservedPath(rc.Delete(ctx, o.Name, metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: &uid, ResourceVersion: &rv},
		PropagationPolicy: &policy,
	}), gvr, o.Name)
}

// patchMeta sends a JSON merge patch of metadata that also names the
// object's UID and resourceVersion. So it applies only to the version the
// decision was made on, and the API server answers 409 otherwise.
func (c *Controller) patchMeta(ctx context.Context, o *db.Object, fields map[string]any) error {
	rc, gvr, err := c.client(ctx, o)
	if err != nil {
		return err
	}
	fields["uid"] = o.UID
	fields["resourceVersion"] = o.ResourceVersion
	body, err := json.Marshal(map[string]any{"metadata": fields})
	if err != nil {
		return err
	}
	_, err = rc.Patch(ctx, o.Name, types.MergePatchType, body, metav1.PatchOptions{})
	return unservedPath(err, gvr, o.Name)
}

func ownerRefsJSON(refs []api.OwnerRef) []metav1.OwnerReference {
	out := make([]metav1.OwnerReference, 0, len(refs))
	for _, r := range refs {
		out = append(out, metav1.OwnerReference{APIVersion: r.APIVersion, Kind: r.Kind, Name: r.Name,
			UID: types.UID(r.UID), Controller: r.Controller, BlockOwnerDeletion: r.BlockOwnerDeletion})
	}
	return out
}

func (c *Controller) removeOwnerRefs(ctx context.Context, o *db.Object, owners []string) error {
	var keep []api.OwnerRef
	for _, r := range o.OwnerReferences {
		if !slices.Contains(owners, r.UID) {
			keep = append(keep, r)
		}
	}
	var refs any = ownerRefsJSON(keep)
	if len(keep) == 0 {
		refs = nil
	}
	return c.patchMeta(ctx, o, map[string]any{"ownerReferences": refs})
}

func (c *Controller) unblockOwnerRefs(ctx context.Context, o *db.Object) error {
	refs := make([]api.OwnerRef, len(o.OwnerReferences))
	copy(refs, o.OwnerReferences)
	for i := range refs {
		if refs[i].BlockOwnerDeletion != nil && *refs[i].BlockOwnerDeletion {
			refs[i].BlockOwnerDeletion = new(false)
		}
	}
	return c.patchMeta(ctx, o, map[string]any{"ownerReferences": ownerRefsJSON(refs)})
}

func (c *Controller) removeFinalizer(ctx context.Context, o *db.Object, finalizer string) error {
	var keep []string
	for _, f := range o.Finalizers {
		if f != finalizer {
			keep = append(keep, f)
		}
	}
	var fin any = keep
	if len(keep) == 0 {
		fin = nil
	}
	return c.patchMeta(ctx, o, map[string]any{"finalizers": fin})
}
