package app

import (
	"context"
	"errors"

	kubehttp "github.com/kubegcd/kubegcd/internal/http"
	"github.com/kubegcd/kubegcd/internal/ingest"
	"github.com/kubegcd/kubegcd/internal/reconcile"
)

// The HTTP server owns the types it shows and depends on neither ingestion
// nor the controllers; these adapters give it their state in its types.

// ingestView shows the ingester to the server.
type ingestView struct{ *ingest.Ingester }

func (v ingestView) Resources() []kubehttp.ResourceStatus {
	rs := v.Ingester.Resources()
	out := make([]kubehttp.ResourceStatus, len(rs))
	for i, r := range rs {
		out[i] = kubehttp.ResourceStatus{Resource: r.Resource, Synced: r.Synced}
	}
	return out
}

// applierView shows the applier to the server and maps its release errors
// to the server's.
type applierView struct{ *reconcile.Applier }

// Status is the applier's own: reconcile.Status is the API's type.
func (v applierView) Status() kubehttp.EnforcementStatus { return v.Applier.Status() }

func (v applierView) Release(ctx context.Context, reason, by string) error {
	return releaseError(v.Applier.Release(ctx, reason, by))
}

// releaseError keeps the applier's message and adds the server's sentinel
// that picks the status code.
func releaseError(err error) error {
	switch {
	case errors.Is(err, reconcile.ErrNotHeld):
		return classified{err: err, kind: kubehttp.ErrNotHeld}
	case errors.Is(err, reconcile.ErrLedgerUnavailable):
		return classified{err: err, kind: kubehttp.ErrLedgerUnavailable}
	}
	return err
}

type classified struct{ err, kind error }

func (c classified) Error() string   { return c.err.Error() }
func (c classified) Unwrap() []error { return []error{c.err, c.kind} }
