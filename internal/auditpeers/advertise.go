package auditpeers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
)

// Where an instance advertises its API URL.
const (
	// AnnotationURL holds the URL on the instance's own record: its
	// LeaseCandidate under coordinated election, else its peer Lease.
	AnnotationURL = "kubegcd.io/audit-url"
	// LabelPeerOf marks a peer Lease with the election Lease it belongs
	// to (its name, or a hash of a name too long for a label).
	LabelPeerOf = "kubegcd.io/audit-peer-of"
	// staleAdvert is how long past its term a peer Lease is kept. A dead
	// instance's stays that long, so that a new leader still finds where
	// it served; then any instance deletes it.
	staleAdvert = time.Hour
)

// Advertiser writes this instance's URL where its peers look for it, and
// lists theirs. Under coordinated election the record is this instance's
// LeaseCandidate, which it already renews. Otherwise it is a Lease of its
// own beside the election Lease, named after the election Lease and a
// hash of the identity, holding the identity and the URL: the cluster
// already holds Leases there, and an operator sees them with kubectl.
type Advertiser struct {
	Client      kubernetes.Interface
	Namespace   string
	Lease       string // the election Lease's name
	Identity    string
	URL         string
	Coordinated bool
	// Every is the time between two renewals (0: 10 s).
	Every  time.Duration
	Logger *slog.Logger
	Now    func() time.Time
}

// peerLeaseName is the name of identity's peer Lease.
func peerLeaseName(lease, identity string) string {
	sum := sha256.Sum256([]byte(identity))
	suffix := "-audit-" + hex.EncodeToString(sum[:5])
	if n := validation.DNS1123SubdomainMaxLength - len(suffix); len(lease) > n {
		lease = lease[:n]
	}
	return lease + suffix
}

// peerOf is the value of LabelPeerOf for the election Lease lease.
func peerOf(lease string) string {
	if len(validation.IsValidLabelValue(lease)) == 0 {
		return lease
	}
	sum := sha256.Sum256([]byte(lease))
	return hex.EncodeToString(sum[:16])
}

func (a *Advertiser) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func (a *Advertiser) every() time.Duration {
	if a.Every > 0 {
		return a.Every
	}
	return 10 * time.Second
}

// Run advertises the URL until ctx ends, renewing it every Every, then
// takes the peer Lease away. A failure is logged, and tried again.
func (a *Advertiser) Run(ctx context.Context) error {
	if a.URL == "" {
		return nil
	}
	tick := time.NewTicker(a.every())
	defer tick.Stop()
	failing := false
	for {
		err := a.advertise(ctx)
		switch {
		case err != nil && !failing && ctx.Err() == nil:
			a.Logger.Warn("audit peers: cannot advertise this instance's URL; tried again", "err", err)
			failing = true
		case err == nil && failing:
			a.Logger.Info("audit peers: this instance's URL is advertised again")
			failing = false
		}
		select {
		case <-ctx.Done():
			a.withdraw()
			return nil
		case <-tick.C:
		}
	}
}

// advertise writes the URL once.
func (a *Advertiser) advertise(ctx context.Context) error {
	if a.Coordinated {
		// client-go's candidate creates the LeaseCandidate and renews it
		// with an update of what it read, which keeps the annotation.
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
			"annotations": map[string]string{AnnotationURL: a.URL}}})
		_, err := a.Client.CoordinationV1beta1().LeaseCandidates(a.Namespace).Patch(ctx, a.Identity,
			types.MergePatchType, patch, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			return nil // not standing yet: the next renewal writes it
		}
		return err
	}
	leases := a.Client.CoordinationV1().Leases(a.Namespace)
	name := peerLeaseName(a.Lease, a.Identity)
	now := metav1.NewMicroTime(a.now())
	secs := int32(3 * a.every() / time.Second)
	// A merge patch renews it: deploy/clusterrole.yaml grants patch of
	// every resource, and update of the election Lease alone.
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{AnnotationURL: a.URL}},
		"spec": map[string]any{"holderIdentity": a.Identity, "leaseDurationSeconds": secs,
			"renewTime": now}})
	_, err := leases.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	if !apierrors.IsNotFound(err) {
		return err
	}
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: a.Namespace,
		Labels:      map[string]string{LabelPeerOf: peerOf(a.Lease)},
		Annotations: map[string]string{AnnotationURL: a.URL}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &a.Identity, LeaseDurationSeconds: &secs,
			AcquireTime: &now, RenewTime: &now}}
	_, err = leases.Create(ctx, l, metav1.CreateOptions{})
	return err
}

// withdraw deletes the peer Lease on the way out: a stopped instance is
// no longer read. A LeaseCandidate goes with the election.
func (a *Advertiser) withdraw() {
	if a.Coordinated {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := a.Client.CoordinationV1().Leases(a.Namespace).Delete(ctx, peerLeaseName(a.Lease, a.Identity),
		metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		a.Logger.Warn("audit peers: cannot delete this instance's peer Lease", "err", err)
	}
}

// Discover lists the instances' advertisements: the LeaseCandidates of the
// election Lease, or the peer Leases. A peer Lease past its term by more
// than staleAdvert is deleted; one within it is listed, for a new leader
// to find where its predecessor served.
func (a *Advertiser) Discover(ctx context.Context) ([]Advert, error) {
	var out []Advert
	if a.Coordinated {
		list, err := a.Client.CoordinationV1beta1().LeaseCandidates(a.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("leasecandidates: %w", err)
		}
		for _, c := range list.Items {
			if c.Spec.LeaseName == a.Lease && c.Annotations[AnnotationURL] != "" {
				out = append(out, Advert{Identity: c.Name, URL: c.Annotations[AnnotationURL]})
			}
		}
		return out, nil
	}
	leases := a.Client.CoordinationV1().Leases(a.Namespace)
	list, err := leases.List(ctx, metav1.ListOptions{LabelSelector: LabelPeerOf + "=" + peerOf(a.Lease)})
	if err != nil {
		return nil, fmt.Errorf("leases: %w", err)
	}
	now := a.now()
	for _, l := range list.Items {
		s := l.Spec
		if s.HolderIdentity == nil || l.Annotations[AnnotationURL] == "" {
			continue
		}
		if s.RenewTime != nil && s.LeaseDurationSeconds != nil &&
			now.Sub(s.RenewTime.Add(time.Duration(*s.LeaseDurationSeconds)*time.Second)) > staleAdvert {
			uid := l.UID
			err := leases.Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				a.Logger.Warn("audit peers: cannot delete a stale peer Lease", "lease", l.Name, "err", err)
			}
			continue
		}
		out = append(out, Advert{Identity: *s.HolderIdentity, URL: l.Annotations[AnnotationURL]})
	}
	slices.SortFunc(out, func(x, y Advert) int { return strings.Compare(x.Identity, y.Identity) })
	return out, nil
}
