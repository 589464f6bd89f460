package clusteradd

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
)

// Outcomes of applying or deleting one object, as the lines say them.
const (
	created   = "created"
	unchanged = "unchanged"
	updated   = "updated"
	// replaced: deleted and created again, for a field the API server
	// does not let change (a binding's roleRef, a Secret's type).
	replaced = "replaced"
	deleted  = "deleted"
	notFound = "not found"
)

// client is what cluster add asks of one kind's typed client.
type client[T metav1.Object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// step applies or deletes one object.
type step struct {
	obj    runtime.Object
	apply  func(ctx context.Context) (string, error)
	delete func(ctx context.Context) (string, error)
}

// reconciler makes have match want: it returns have's copy with want's
// fields set and whether that changed anything, or replace when a field
// that cannot change differs.
type reconciler[T metav1.Object] func(have, want T) (next T, changed, replace bool)

// newStep is the step of want through c: level-based, as a controller's
// sync, so that a second run finds nothing to do and says so.
func newStep[T interface {
	metav1.Object
	runtime.Object
}](c client[T], want T, reconcile reconciler[T]) step {
	return step{
		obj: want,
		apply: func(ctx context.Context) (string, error) {
			have, err := c.Get(ctx, want.GetName(), metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				_, err = c.Create(ctx, want, metav1.CreateOptions{})
				return created, err
			}
			if err != nil {
				return "", err
			}
			next, changed, replace := reconcile(have.DeepCopyObject().(T), want)
			labels := labelsWith(next.GetLabels(), want.GetLabels())
			if !maps.Equal(labels, next.GetLabels()) {
				next.SetLabels(labels)
				changed = true
			}
			switch {
			case replace:
				uid := have.GetUID()
				if err := c.Delete(ctx, want.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil {
					return "", err
				}
				_, err = c.Create(ctx, want, metav1.CreateOptions{})
				return replaced, err
			case changed:
				_, err = c.Update(ctx, next, metav1.UpdateOptions{})
				return updated, err
			}
			return unchanged, nil
		},
		delete: func(ctx context.Context) (string, error) {
			err := c.Delete(ctx, want.GetName(), metav1.DeleteOptions{})
			switch {
			case apierrors.IsNotFound(err):
				return notFound, nil
			case err != nil:
				return "", err
			}
			return deleted, nil
		},
	}
}

// steps are the steps of m's objects, in m's order, through cs.
func steps(cs kubernetes.Interface, m manifests) []step {
	core, rbac := cs.CoreV1(), cs.RbacV1()
	out := []step{
		newStep(core.ServiceAccounts(m.ServiceAccount.Namespace), m.ServiceAccount,
			func(have, _ *corev1.ServiceAccount) (*corev1.ServiceAccount, bool, bool) { return have, false, false }),
		newStep(rbac.ClusterRoles(), m.ClusterRole, func(have, want *rbacv1.ClusterRole) (*rbacv1.ClusterRole, bool, bool) {
			changed := !equality.Semantic.DeepEqual(have.Rules, want.Rules) || have.AggregationRule != nil
			have.Rules, have.AggregationRule = want.Rules, nil
			return have, changed, false
		}),
		newStep(rbac.ClusterRoleBindings(), m.ClusterRoleBinding,
			func(have, want *rbacv1.ClusterRoleBinding) (*rbacv1.ClusterRoleBinding, bool, bool) {
				changed := !equality.Semantic.DeepEqual(have.Subjects, want.Subjects)
				have.Subjects = want.Subjects
				return have, changed, have.RoleRef != want.RoleRef
			}),
		newStep(rbac.Roles(m.Role.Namespace), m.Role, func(have, want *rbacv1.Role) (*rbacv1.Role, bool, bool) {
			changed := !equality.Semantic.DeepEqual(have.Rules, want.Rules)
			have.Rules = want.Rules
			return have, changed, false
		}),
		newStep(rbac.RoleBindings(m.RoleBinding.Namespace), m.RoleBinding,
			func(have, want *rbacv1.RoleBinding) (*rbacv1.RoleBinding, bool, bool) {
				changed := !equality.Semantic.DeepEqual(have.Subjects, want.Subjects)
				have.Subjects = want.Subjects
				return have, changed, have.RoleRef != want.RoleRef
			}),
	}
	if m.Secret != nil {
		out = append(out, newStep(core.Secrets(m.Secret.Namespace), m.Secret, reconcileTokenSecret))
	}
	return out
}

// reconcileTokenSecret keeps a token Secret of the ServiceAccount (the
// token controller fills its data and annotates the account's UID); one of
// another type or account is made again.
func reconcileTokenSecret(have, want *corev1.Secret) (*corev1.Secret, bool, bool) {
	name := corev1.ServiceAccountNameKey
	return have, false, have.Type != want.Type || have.Annotations[name] != want.Annotations[name]
}

// applyAll applies each step in order and reports each object's outcome
// through say; it stops at the first error.
func applyAll(ctx context.Context, ss []step, say func(obj runtime.Object, outcome string)) (changed bool, err error) {
	for _, s := range ss {
		outcome, err := s.apply(ctx)
		if err != nil {
			return changed, fmt.Errorf("applying %s: %w", describe(s.obj), err)
		}
		say(s.obj, outcome)
		changed = changed || outcome != unchanged
	}
	return changed, nil
}

// deleteAll deletes each step's object, last applied first, and reports
// each outcome through say; it goes on past an error and returns the
// first.
func deleteAll(ctx context.Context, ss []step, say func(obj runtime.Object, outcome string)) (removed bool, err error) {
	for i := len(ss) - 1; i >= 0; i-- {
		outcome, derr := ss[i].delete(ctx)
		if derr != nil {
			if err == nil {
				err = fmt.Errorf("deleting %s: %w", describe(ss[i].obj), derr)
			}
			continue
		}
		say(ss[i].obj, outcome)
		removed = removed || outcome == deleted
	}
	return removed, err
}
