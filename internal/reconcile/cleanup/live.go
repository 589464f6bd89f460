package cleanup

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/kubegcd/kubegcd/internal/db"
)

// NewLive returns the Live of a rule that deletes: reads and deletes go
// through dyn, notices through events, which name instance as their
// reporter. now stamps the Events.
func NewLive(dyn dynamic.Interface, events typedcorev1.EventsGetter, instance string, now func() time.Time) Live {
	if now == nil {
		now = time.Now
	}
	return &live{dyn: dyn, events: events, instance: instance, now: now}
}

type live struct {
	dyn      dynamic.Interface
	events   typedcorev1.EventsGetter
	instance string
	now      func() time.Time
}

func (l *live) resource(m db.ActMatch) dynamic.ResourceInterface {
	r := l.dyn.Resource(schema.GroupVersionResource{Group: m.Group, Version: m.Version, Resource: m.Resource})
	if m.Namespaced {
		return r.Namespace(m.Target.Namespace)
	}
	return r
}

// Get reads m's object in full, as the API server has it now.
func (l *live) Get(ctx context.Context, m db.ActMatch) (*unstructured.Unstructured, error) {
	return l.resource(m).Get(ctx, m.Target.Name, metav1.GetOptions{})
}

// Delete deletes m's object if it still has this UID and resourceVersion.
func (l *live) Delete(ctx context.Context, m db.ActMatch, uid, resourceVersion string,
	propagation metav1.DeletionPropagation) error {
	u := types.UID(uid)
	return l.resource(m).Delete(ctx, m.Target.Name, metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: &u, ResourceVersion: &resourceVersion},
		PropagationPolicy: &propagation,
	})
}

// Notify creates a Warning Event about obj, so that kubectl describe shows
// it. An Event about a cluster-scoped object goes to namespace default, as
// Kubernetes' own do.
func (l *live) Notify(ctx context.Context, obj *unstructured.Unstructured, reason, message string) error {
	ns := obj.GetNamespace()
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	now := metav1.NewTime(l.now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: obj.GetName() + ".", Namespace: ns},
		InvolvedObject: corev1.ObjectReference{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(),
			Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID(),
			ResourceVersion: obj.GetResourceVersion()},
		Reason: reason, Message: message, Type: corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: "kubegcd"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
		ReportingController: "kubegcd.io/rules", ReportingInstance: l.instance,
	}
	if _, err := l.events.Events(ns).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the notice Event: %w", err)
	}
	return nil
}
