package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

// LiveUID returns the UID of the object at t's coordinates in the cluster
// now, "" when there is none, or an error when the cluster cannot say.
type LiveUID func(ctx context.Context, t api.Target) (string, error)

// ErrKindNotServed is LiveUID's error for a target whose kind the cluster
// does not serve (as far as discovery knows): nothing can be read of it,
// and no controller can write to it either.
var ErrKindNotServed = errors.New("kind not served by the cluster")

// Reasons of the audit rows of intents settled at start.
const (
	recoveredGone = "recovered at start: the write was sent before kubegcd stopped " +
		"and its outcome was not recorded; the object is gone"
	recoveredUnknown = "recovered at start: the write was sent before kubegcd stopped " +
		"and its outcome was not recorded; the object is still there, " +
		"so the write may or may not have reached the API server: its controller decides again"
)

// RecoverIntents settles the intents an earlier run left open. An open
// intent is a write committed to be sent whose outcome a crash or a power
// loss kept from being recorded. Each intent is checked against the
// cluster by UID and gets exactly one audit row:
//   - The object is gone, or another UID holds its name: the outcome is
//     applied.
//   - The object is there with the same UID: the outcome is unknown, and
//     the decision stays pending, so that its controller decides again.
//
// An intent the cluster cannot answer for stays open, and RecoverIntents
// returns an error for the caller to try again. A guess could record a
// write that never happened. An intent whose kind is not served stays
// open without an error, for a later start. RecoverIntents writes nothing
// to the cluster, so a follower may run it too. Call it before the
// controllers run.
func (a *Applier) RecoverIntents(ctx context.Context, live LiveUID) error {
	a.recovering.Lock()
	defer a.recovering.Unlock()
	intents, err := a.opts.DB.OpenIntents(ctx)
	if err != nil {
		return err
	}
	var failed []error
	for _, in := range intents {
		e := in.Entry // IntentID is set: writing the row resolves the intent
		t := e.Target
		uid, err := live(ctx, t)
		if errors.Is(err, ErrKindNotServed) {
			a.log.Warn("write of an earlier run left without an outcome: "+
				"its kind is not served, it is settled at a later start",
				"controller", e.Controller, "action", e.Action,
				"kind", t.Kind, "namespace", t.Namespace, "name", t.Name, "uid", t.UID)
			continue
		}
		if err != nil {
			failed = append(failed, fmt.Errorf("%s %s: %w", t, t.UID, err))
			continue
		}
		var p *db.Pending
		if uid == t.UID {
			e.Outcome, e.Reason = api.OutcomeUnknown, recoveredUnknown+" ("+e.Reason+")"
			p = &db.Pending{Controller: e.Controller, Rule: e.Rule, Action: e.Action, Reason: e.Reason,
				Target: t, ResourceVersion: in.ResourceVersion}
		} else {
			e.Outcome, e.Reason = api.OutcomeApplied, recoveredGone+" ("+e.Reason+")"
		}
		if err := a.settleIntent(ctx, &e, p); err != nil {
			return a.storeFailed(ctx, err)
		}
		a.metrics.actions.WithLabelValues(string(e.Controller), e.Rule, string(e.Action), string(e.Outcome)).Inc()
		a.logDecision(&e, slog.LevelWarn)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d writes of an earlier run without an outcome "+
			"could not be checked against the cluster: %w", len(failed), len(intents), failed[0])
	}
	if len(intents) > 0 {
		a.log.Info("writes of an earlier run without an outcome settled", "intents", len(intents))
	}
	return nil
}

// MetadataLiveUID reads targets through client, resolving their kinds to
// resources through discovery as the database records it.
func MetadataLiveUID(store KindResolver, client metadata.Interface) LiveUID {
	return func(ctx context.Context, t api.Target) (string, error) {
		gv, err := schema.ParseGroupVersion(t.APIVersion)
		if err != nil {
			return "", fmt.Errorf("%w: apiVersion %q: %w", ErrKindNotServed, t.APIVersion, err)
		}
		r, err := store.ResourceForKind(ctx, gv.Group, t.Kind)
		if errors.Is(err, db.ErrNotFound) {
			return "", fmt.Errorf("%w: %s %s", ErrKindNotServed, t.APIVersion, t.Kind)
		}
		if err != nil {
			return "", err
		}
		gvr := schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Resource}
		rc := client.Resource(gvr)
		var obj *metav1.PartialObjectMetadata
		if r.Namespaced {
			obj, err = rc.Namespace(t.Namespace).Get(ctx, t.Name, metav1.GetOptions{})
		} else {
			obj, err = rc.Get(ctx, t.Name, metav1.GetOptions{})
		}
		switch {
		case PathNotServed(err, t.Name):
			return "", fmt.Errorf("the API server does not serve %s/%s: %w",
				gvr.GroupVersion(), gvr.Resource, err)
		case apierrors.IsNotFound(err):
			return "", nil
		case err != nil:
			return "", err
		}
		return string(obj.UID), nil
	}
}

// PathNotServed reports whether err is a 404 for the request path itself
// rather than for the object name. The API server may no longer serve the
// group/version or the resource: a CRD version was turned off, the CRD
// was deleted since the last discovery, or an API service was removed.
// The API server says that an object is missing with a Status whose
// details name it. An unserved path gets a bare "404 page not found" that
// names nothing. Only a 404 that names the object proves an owner absent
// or an object gone.
func PathNotServed(err error, name string) bool {
	if !apierrors.IsNotFound(err) {
		return false
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return true
	}
	d := st.Status().Details
	return d == nil || d.Name != name
}

// settleIntent writes e, the row of an intent found open at start. With p,
// the decision stays pending. Without it, what was pending about the
// target goes.
func (a *Applier) settleIntent(ctx context.Context, e *db.AuditEntry, p *db.Pending) error {
	if p == nil {
		return a.insertAudits(ctx, []*db.AuditEntry{e})
	}
	a.pending.add(p.Controller, p.Target.UID) // before the row: see pendingSet
	return a.opts.DB.SettleIntent(ctx, e, p)
}
