package ingest

import (
	"context"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// forgetForeignResumePoints makes every resource list at this start unless
// the mirror comes from this very cluster: resourceVersions are one etcd's
// revisions, and a watch resumed from another cluster's would leave that
// cluster's objects in the mirror as ghosts (a relist removes them). The
// cluster is known by its kube-system namespace's UID, which the mirror
// keeps like any object; when it cannot be read, nothing is resumed.
func (i *Ingester) forgetForeignResumePoints(ctx context.Context) error {
	mirrored, err := i.opts.DB.NamespaceUID(ctx, "kube-system")
	if err != nil {
		return err
	}
	live := ""
	if ns, err := i.typed.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{}); err != nil {
		i.log.Warn("cannot tell which cluster the mirror came from; listing every resource", "err", err)
	} else {
		live = string(ns.UID)
	}
	if sameCluster(mirrored, live) {
		return nil
	}
	if mirrored != "" && live != "" {
		i.log.Warn("the database mirrors another cluster; listing every resource",
			"mirrored_kube_system", mirrored, "kube_system", live)
	}
	return i.opts.DB.ForgetResumePoints(ctx)
}

// sameCluster reports whether the mirror's kube-system namespace UID is the
// cluster's; an unknown one on either side is not.
func sameCluster(mirrored, live string) bool { return mirrored != "" && mirrored == live }

// resumePlan is how a start brings a resource's mirror, written by an
// earlier run, up to date.
type resumePlan int

const (
	// planList: list the resource again, as on an empty database.
	planList resumePlan = iota
	// planCaughtUp: the mirror is at the cluster's current resourceVersion.
	planCaughtUp
	// planCatchUp: watch from the stored point until the mirror reaches
	// the current resourceVersion.
	planCatchUp
)

func (p resumePlan) String() string {
	switch p {
	case planList:
		return "list"
	case planCaughtUp:
		return "caught up"
	case planCatchUp:
		return "catch up"
	}
	return strconv.Itoa(int(p))
}

// planResume decides how a resource starts. stored is the point up to
// which the mirror holds every change. current is the collection's
// resourceVersion, read after the start. resourceVersions are opaque to
// clients, but an etcd-backed API server's are etcd revisions, which the
// API server itself compares. Any other kind, such as an aggregated API's,
// is listed, never guessed at. A stored point ahead of the cluster means
// that the cluster's history went back, as when etcd is restored from a
// backup. A watch from there would skip every change in between, so the
// resource is listed.
func planResume(stored, current string) resumePlan {
	s, errS := strconv.ParseUint(stored, 10, 64)
	c, errC := strconv.ParseUint(current, 10, 64)
	switch {
	case errS != nil || errC != nil || s == 0 || s > c:
		return planList
	case s == c:
		return planCaughtUp
	}
	return planCatchUp
}

// reached reports whether a watch at rv has delivered every change up to
// target: a watch delivers events in resourceVersion order, so an event or
// bookmark at or past target proves it.
func reached(rv, target string) bool {
	r, errR := strconv.ParseUint(rv, 10, 64)
	t, errT := strconv.ParseUint(target, 10, 64)
	return errR == nil && errT == nil && r >= t
}

// catchUp starts a resource from the resume point an earlier run stored,
// instead of listing it: it returns the resourceVersion to watch from and
// the target the mirror must reach before the resource is in sync (see
// watch), or "" to list. The target is the resourceVersion of a list of
// one item, a consistent read made now: once the watch from the stored
// point has passed it, the mirror holds every change made while kubegcd
// was down, deletions included. A watch resumed from an old point gives no
// other sign of having caught up.
func (w *watcher) catchUp(ctx context.Context) (rv, target string) {
	_, current, _, err := w.src.list(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		w.log.Info("cannot read the current resourceVersion; listing", "err", err)
		return "", ""
	}
	plan := planResume(w.stored, current)
	w.log.Debug("resuming", "stored", w.stored, "current", current, "plan", plan)
	switch plan {
	case planCatchUp:
		return w.stored, current
	case planCaughtUp:
		if err := w.db.SetSynced(ctx, w.res.ID, true); err != nil {
			return "", ""
		}
		w.metrics.resumes.WithLabelValues(w.label).Inc()
		w.markSynced()
		return w.stored, ""
	}
	w.log.Info("stored resourceVersion unusable; listing", "stored", w.stored, "current", current)
	return "", ""
}
