package app

import (
	"context"
	"errors"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/copies"
	"github.com/kubegcd/kubegcd/internal/db"
	kubehttp "github.com/kubegcd/kubegcd/internal/http"
	"github.com/kubegcd/kubegcd/internal/ingest"
	"github.com/kubegcd/kubegcd/internal/leader"
	"github.com/kubegcd/kubegcd/internal/reconcile"
	"github.com/kubegcd/kubegcd/internal/reconcile/cleanup"
)

// The HTTP server depends on neither ingestion, the controllers nor leader
// election; these adapters give it their state in its types or the API's.

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

// Status is the applier's own, in the API's type.
func (v applierView) Status() api.EnforcementStatus { return v.Applier.Status() }

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

// restorerView shows the restorer to the server and maps its errors to
// the server's.
type restorerView struct{ *copies.Restorer }

func (v restorerView) Restore(ctx context.Context, uid, by string, allowEmptySecret bool) (*api.RestoreResult, error) {
	res, err := v.Restorer.Restore(ctx, uid, by, allowEmptySecret)
	switch {
	case errors.Is(err, copies.ErrNoCopy):
		err = classified{err: err, kind: kubehttp.ErrNoCopy}
	case errors.Is(err, copies.ErrRefused):
		err = classified{err: err, kind: kubehttp.ErrRestoreRefused}
	}
	return res, err
}

type classified struct{ err, kind error }

func (c classified) Error() string   { return c.err.Error() }
func (c classified) Unwrap() []error { return []error{c.err, c.kind} }

// leaderView shows leader election to the server: the elector's state,
// and the Lease and its candidates as the mirror has them.
type leaderView struct {
	elector *leader.Elector
	reason  string // why there is no election, when there is none
	mirror  db.Objects
}

func (v leaderView) Status(ctx context.Context) api.LeaderStatus {
	e := v.elector
	st := api.LeaderStatus{Enabled: e.Enabled(), Leader: e.Leading(), Identity: e.Identity(), Reason: v.reason}
	if !st.Enabled {
		return st
	}
	ns, name := e.Lease()
	st.Lease = ns + "/" + name
	holder, seen := e.Holder()
	st.Holder = holder
	if !seen.IsZero() {
		st.HolderSince = &seen
	}
	// The Lease's own acquireTime, from the mirror, is the better "since".
	if leases, err := v.mirror.Leases(ctx, db.LeaseFilter{Namespace: ns, Name: name}); err == nil {
		for _, lease := range leases {
			held := lease.HolderIdentity != nil && *lease.HolderIdentity == st.Holder
			if held && lease.AcquireTime != nil {
				st.HolderSince = lease.AcquireTime
			}
			st.Strategy, st.PreferredHolder = deref(lease.Strategy), deref(lease.PreferredHolder)
		}
	}
	st.Coordinated = e.Coordinated()
	candidates, err := v.mirror.LeaseCandidates(ctx, db.LeaseCandidateFilter{Namespace: ns, LeaseName: name})
	if err == nil {
		st.Candidates = kubehttp.ElectionCandidates(candidates, e.Identity())
	}
	return st
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// rulesView shows the cleanup rules' runner to the server.
type rulesView struct{ *cleanup.Runner }

func (v rulesView) RuleList() api.RuleList { return v.Runner.List() }

func (v rulesView) EvaluateRules(ctx context.Context, file string, data []byte) (*kubehttp.RuleEvaluation, error) {
	evals, errs, err := v.Runner.Evaluate(ctx, file, data)
	if err != nil {
		return nil, err
	}
	out := &kubehttp.RuleEvaluation{Rules: make([]kubehttp.EvaluatedRule, len(evals)), Errors: errs}
	for i, e := range evals {
		out.Rules[i] = kubehttp.EvaluatedRule{ID: e.ID, Hash: e.Hash, At: e.At, Duration: e.Duration, Matches: e.Matches}
		if e.Err != nil {
			out.Rules[i].Error = e.Err.Error()
		}
	}
	return out, nil
}
