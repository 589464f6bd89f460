package reconcile

import (
	"context"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

// Ledger is what the applier keeps in the database: the decisions held
// pending, the intents of writes about to leave, the audit history, and
// what the blast-radius cap restores from it. db.Ledger is one.
type Ledger interface {
	// Pending decisions.
	UpsertPending(ctx context.Context, p *db.Pending) (bool, error)
	ClearPending(ctx context.Context, controller api.Controller, uid string) error
	PendingUIDs(ctx context.Context) ([]db.PendingUID, error)

	// Intents, and the rows that resolve them.
	InsertIntent(ctx context.Context, in *db.Intent) error
	WithdrawIntent(ctx context.Context, id int64) error
	OpenIntents(ctx context.Context) ([]db.Intent, error)
	SettleIntent(ctx context.Context, e *db.AuditEntry, p *db.Pending) error
	RecordFailure(ctx context.Context, p *db.Pending, e *db.AuditEntry) (bool, error)

	// The audit history.
	InsertAudit(ctx context.Context, e *db.AuditEntry) error
	InsertAudits(ctx context.Context, entries []*db.AuditEntry) error
	WriteApplied(take func() []db.AppliedRow, done func(rows []db.AppliedRow, failed []error, err error))
	AppliedWriteTimes(ctx context.Context, since time.Time) ([]time.Time, error)
	LastHold(ctx context.Context) (action api.Action, at time.Time, err error)
}

// KindResolver maps a kind to the resource that serves it, as discovery
// recorded it.
type KindResolver interface {
	ResourceForKind(ctx context.Context, group, kind string) (*db.Resource, error)
}
