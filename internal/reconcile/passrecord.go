package reconcile

import (
	"context"
	"log/slog"

	"github.com/kubegcd/kubegcd/internal/api"
)

// RecordPass audits what a controller decided about a pass as a whole,
// not about one object: a cleanup rule whose pass its cap held back, say.
// The row names no target, and its outcome says what became of the pass.
func (a *Applier) RecordPass(ctx context.Context, controller api.Controller, rule string, action api.Action,
	outcome api.Outcome, reason string, facts any) error {
	if err := a.LedgerError(); err != nil {
		return err
	}
	e := a.event(controller, rule, action, reason, a.opts.Now(), facts)
	e.Outcome, e.DryRun = outcome, a.opts.DryRun
	a.logDecision(e, slog.LevelWarn)
	return a.audit(ctx, e)
}
