package copies

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/reconcile"
)

// The ends of a restore that is not made.
var (
	// ErrNoCopy: kubegcd keeps no copy of that UID.
	ErrNoCopy = errors.New("no copy")
	// ErrRefused: the restore is not made, for the reason the error gives.
	ErrRefused = errors.New("restore refused")
)

// RestoreStore is what a restore reads and records; db.Copies is one.
type RestoreStore interface {
	DeletedCopy(ctx context.Context, uid string) (*db.DeletedCopy, error)
	MarkRestored(ctx context.Context, uid, restoredUID string, at time.Time, by string) error
}

// Auditor records an operator's act; *reconcile.Applier is one.
type Auditor interface {
	RecordOperator(ctx context.Context, action api.Action, target api.Target, reason string, facts any) error
}

// Restorer re-creates deleted objects from their copies.
type Restorer struct {
	Dynamic dynamic.Interface
	// Kinds maps an owner's kind to its resource, to look the owner up.
	Kinds reconcile.KindResolver
	Store RestoreStore
	Audit Auditor
	Now   func() time.Time
	Log   *slog.Logger
}

// RestoreFacts are the facts of a restore's audit row.
type RestoreFacts struct {
	DeletedUID             string         `json:"deletedUID"`
	Rule                   string         `json:"rule,omitempty"`
	RuleHash               string         `json:"ruleHash,omitempty"`
	By                     string         `json:"by"`
	DroppedOwnerReferences []api.OwnerRef `json:"droppedOwnerReferences,omitempty"`
	SecretDataEmpty        bool           `json:"secretDataEmpty,omitempty"`
	DeletedBy              api.Controller `json:"deletedBy"`
	TakenAt                time.Time      `json:"takenAt"`
}

// Restore re-creates the object deleted with UID uid from its copy, for
// the operator by. It refuses, with the reason, a copy already restored,
// an object of that name that exists, a copy that is corrupt or whose
// kind the API server no longer serves, and a Secret whose data was not
// kept unless allowEmptySecret. An owner is kept only when it exists live
// with the UID the reference names. The restore is then recorded on the
// copy and audited (controller operator, action restore), its target the
// new object.
func (r *Restorer) Restore(ctx context.Context, uid, by string, allowEmptySecret bool) (*api.RestoreResult, error) {
	dc, err := r.Store.DeletedCopy(ctx, uid)
	switch {
	case errors.Is(err, db.ErrNotFound):
		return nil, classified{err: err, kind: ErrNoCopy}
	case errors.Is(err, db.ErrCorruptCopy):
		return nil, fmt.Errorf("%w: %w", ErrRefused, err)
	case err != nil:
		return nil, err
	}
	what := fmt.Sprintf("the copy of %s (uid %s)", dc.Target, dc.Target.UID)
	if dc.RestoredUID != "" {
		return nil, fmt.Errorf("%w: %s was already restored as uid %s%s", ErrRefused, what, dc.RestoredUID,
			restoredWhen(dc))
	}
	if dc.SecretDataDropped && !allowEmptySecret {
		return nil, fmt.Errorf("%w: %s holds no data: it was deleted without --keep-deleted-secrets, "+
			"so the Secret would be restored empty; restore it anyway with --allow-empty-secret", ErrRefused, what)
	}
	gv, err := schema.ParseGroupVersion(dc.Target.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: apiVersion %q: %w", ErrRefused, what, dc.Target.APIVersion, err)
	}
	client := r.Dynamic.Resource(gv.WithResource(dc.Resource)).Namespace(dc.Target.Namespace)
	obj, dropped, err := Prepare(dc.Object, func(ref metav1.OwnerReference) (bool, error) {
		return r.ownerExists(ctx, dc.Target.Namespace, ref)
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrRefused, what, err)
	}
	created, err := client.Create(ctx, obj, metav1.CreateOptions{FieldManager: "kubegcd"})
	if err != nil {
		return nil, r.createRefused(ctx, dc, what, err)
	}
	now := r.now()
	restored := api.Target{APIVersion: created.GetAPIVersion(), Kind: created.GetKind(),
		Namespace: created.GetNamespace(), Name: created.GetName(), UID: string(created.GetUID())}
	out := &api.RestoreResult{Target: restored, DeletedUID: dc.Target.UID, SecretDataEmpty: dc.SecretDataDropped,
		DroppedOwnerReferences: ownerRefsOf(dropped)}
	if r.Log != nil {
		r.Log.Warn("object restored from its copy", "kind", restored.Kind, "namespace", restored.Namespace,
			"name", restored.Name, "uid", restored.UID, "deleted_uid", dc.Target.UID, "by", by)
	}
	// The object exists now: what follows records it, and its failures
	// say so rather than undo it.
	var errs []error
	if err := r.Store.MarkRestored(ctx, dc.Target.UID, restored.UID, now, by); err != nil {
		errs = append(errs, err)
	}
	facts := RestoreFacts{DeletedUID: dc.Target.UID, Rule: dc.RuleID, RuleHash: dc.RuleHash, By: by,
		DroppedOwnerReferences: out.DroppedOwnerReferences, SecretDataEmpty: dc.SecretDataDropped,
		DeletedBy: dc.Controller, TakenAt: dc.TakenAt.UTC()}
	reason := fmt.Sprintf("restored from the copy of uid %s, which %s deleted", dc.Target.UID, deleter(dc))
	if err := r.Audit.RecordOperator(ctx, api.ActionRestore, restored, reason, facts); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return out, fmt.Errorf("%s was restored as uid %s, but recording it failed: %w", what, restored.UID, err)
	}
	return out, nil
}

// classified is err, which also is kind, with err's message alone.
type classified struct{ err, kind error }

func (c classified) Error() string   { return c.err.Error() }
func (c classified) Unwrap() []error { return []error{c.err, c.kind} }

// createRefused says why the API server refused to create the object.
func (r *Restorer) createRefused(ctx context.Context, dc *db.DeletedCopy, what string, err error) error {
	switch {
	case apierrors.IsAlreadyExists(err):
		gv, _ := schema.ParseGroupVersion(dc.Target.APIVersion)
		live, gerr := r.Dynamic.Resource(gv.WithResource(dc.Resource)).Namespace(dc.Target.Namespace).
			Get(ctx, dc.Target.Name, metav1.GetOptions{})
		existing := "another object"
		if gerr == nil {
			existing = "uid " + string(live.GetUID())
		}
		return fmt.Errorf("%w: %s exists (%s): delete it first to restore %s", ErrRefused, dc.Target, existing, what)
	case apierrors.IsNotFound(err):
		if st, ok := err.(apierrors.APIStatus); ok && st.Status().Details != nil && st.Status().Details.Kind == "namespaces" {
			return fmt.Errorf("%w: %s: namespace %s does not exist: create it first", ErrRefused, what,
				dc.Target.Namespace)
		}
		return fmt.Errorf("%w: %s: the API server no longer serves %s in %s (%v)", ErrRefused, what, dc.Resource,
			dc.Target.APIVersion, err)
	case apierrors.IsInvalid(err), apierrors.IsForbidden(err), apierrors.IsBadRequest(err):
		return fmt.Errorf("%w: %s: the API server refused it: %w", ErrRefused, what, err)
	}
	return fmt.Errorf("creating %s from %s: %w", dc.Target, what, err)
}

// ownerExists looks the owner ref names up live: it exists only with the
// UID ref gives. An owner of a kind the API server no longer serves does
// not exist.
func (r *Restorer) ownerExists(ctx context.Context, namespace string, ref metav1.OwnerReference) (bool, error) {
	gvr, namespaced, err := resourceFor(ctx, r.Kinds, ref.APIVersion, ref.Kind)
	if errors.Is(err, errNotServed) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !namespaced {
		namespace = ""
	}
	live, err := r.Dynamic.Resource(gvr).Namespace(namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return live.GetUID() == ref.UID, nil
}

func (r *Restorer) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// restoredWhen says when and by whom a copy was restored, when known.
func restoredWhen(dc *db.DeletedCopy) string {
	s := ""
	if dc.RestoredAt != nil {
		s += " at " + dc.RestoredAt.UTC().Format(time.RFC3339)
	}
	if dc.RestoredBy != "" {
		s += " by " + dc.RestoredBy
	}
	return s
}

// deleter names who deleted the copy's object: the rule, or the collector.
func deleter(dc *db.DeletedCopy) string {
	if dc.RuleID != "" {
		return "rule " + dc.RuleID
	}
	return string(dc.Controller)
}

// ownerRefsOf maps ownerReferences to the API's type.
func ownerRefsOf(refs []metav1.OwnerReference) []api.OwnerRef {
	if len(refs) == 0 {
		return nil
	}
	out := make([]api.OwnerRef, len(refs))
	for i, r := range refs {
		out[i] = api.OwnerRef{APIVersion: r.APIVersion, Kind: r.Kind, Name: r.Name, UID: string(r.UID),
			Controller: r.Controller, BlockOwnerDeletion: r.BlockOwnerDeletion}
	}
	return out
}
