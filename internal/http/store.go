package http

import (
	"context"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/diagnose"
)

// Store is every read the server makes of the database, by role; db.Reads is
// one. The server writes nothing: an operator's release goes through the
// Releaser, and a restore through the Restorer, which record them.
type Store interface {
	Objects
	History
	Decisions
	RuleMatches
	Copies
}

// RuleMatches is what the server reads of the cleanup rules' matches:
// those of one rule, and those of one object; db.Rules reads them.
type RuleMatches interface {
	ListRuleMatches(ctx context.Context, f db.RuleMatchFilter) ([]db.StoredMatch, *db.RuleMatchKey, error)
	MatchesOf(ctx context.Context, uid string) ([]db.StoredMatch, error)
}

// Objects is what the server reads of the objects as the cluster holds
// them now: /status's counts, /objects, the graph, the cascade preview,
// lint, stuck deletions, Leases and their candidates, and the metrics
// computed from them. db.Objects is the role that reads them; db.Mirror is
// ingestion's, which writes them.
type Objects interface {
	ResourceStats(ctx context.Context) ([]db.ResourceStat, error)
	LookupObjects(ctx context.Context, f db.LookupFilter) ([]*db.Object, bool, error)
	ObjectDetail(ctx context.Context, uid string, maxDependents int) (*db.ObjectDetail, error)
	Graph(ctx context.Context, f db.GraphFilter) (*db.Graph, error)
	WalkGraph(ctx context.Context, limit int, w db.GraphWalk) error
	Cascade(ctx context.Context, uid string, limit int) (*db.CascadeFacts, error)
	// LintSource is what /lint and its metric read; LintRefsOf the same
	// for one object.
	diagnose.LintSource
	LintRefsOf(ctx context.Context, uid string, fn func(*db.LintRef) error) error
	Stuck(ctx context.Context, f db.StuckFilter) (*db.StuckData, error)
	StuckCounts(ctx context.Context, requestedBefore time.Time) (counts []db.StuckCount, terminatingNamespaces int, err error)
	ObjectCounts(ctx context.Context) (objects []db.KindCount, owned []db.OwnedCount, err error)
	Leases(ctx context.Context, f db.LeaseFilter) ([]db.LeaseRow, error)
	LeaseCandidates(ctx context.Context, f db.LeaseCandidateFilter) ([]db.LeaseCandidateRow, error)
	// ReferencesAround and TargetsOf read the references around an object
	// and name a rule's matches.
	ReferencesAround(ctx context.Context, o *db.Object, limit int) (*db.ObjectReferences, error)
	TargetsOf(ctx context.Context, uids []string) (map[string]api.Target, error)
}

// History is what the server reads of the objects' history: an object's
// past states, the graph at a past time, a Lease's holders.
type History interface {
	HistoryOf(ctx context.Context, uid string) ([]db.HistoryEntry, error)
	RecentHistoryOf(ctx context.Context, uid string, n int) ([]db.HistoryEntry, bool, error)
	HistoryAt(ctx context.Context, uids []string, at time.Time, limit int) (*db.HistorySnapshot, error)
	LeaseHolderHistory(ctx context.Context, uids []string) (map[string][]db.HistoryEntry, error)
	HistoriesOf(ctx context.Context, uids []string) (map[string][]db.HistoryEntry, error)
}

// Decisions is what the server reads of the controllers' decisions: the
// audit history and the decisions held pending, listed and counted.
type Decisions interface {
	ListAudit(ctx context.Context, f db.AuditFilter) ([]db.AuditEntry, int64, error)
	ListPending(ctx context.Context, f db.PendingFilter) ([]db.Pending, *db.PendingKey, error)
	PendingByController(ctx context.Context) (map[api.Controller]int, error)
	DeletionsPerMinute(ctx context.Context, since time.Time) ([]db.DeletionMinute, error)
}
