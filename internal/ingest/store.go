package ingest

import (
	"context"

	"github.com/kubegcd/kubegcd/internal/db"
)

// Mirror is what ingestion writes and reads of the database: the
// resources it watches, the objects each list and watch event brings, and
// where each watch may resume. db.Mirror is one.
type Mirror interface {
	// The resources watched.
	Resources(ctx context.Context) ([]db.Resource, error)
	EnsureResource(ctx context.Context, r db.Resource) (int64, error)
	DeleteResource(ctx context.Context, resourceID int64) ([]db.Change, error)
	MarkAllUnsynced(ctx context.Context) error
	SetSynced(ctx context.Context, resourceID int64, synced bool) error

	// A list, page by page, and the watch events after it.
	BeginList(ctx context.Context, resourceID int64) (int64, error)
	WriteListPage(ctx context.Context, resourceID, epoch int64, objs []*db.Object) error
	FinishList(ctx context.Context, resourceID, epoch int64, resourceVersion string) ([]db.Change, error)
	// EndList ends a list that will not finish.
	EndList(ctx context.Context, resourceID int64) error
	ApplyWatchEvents(ctx context.Context, resourceID int64, resourceVersion string,
		events []db.Event) ([]db.Change, error)

	// Where each watch resumes after a restart.
	ResumeVersion(ctx context.Context, resourceID int64) (string, error)
	SetResumeVersion(ctx context.Context, resourceID int64, resourceVersion string) error
	ForgetResumePoints(ctx context.Context) error

	// NamespaceUID reads a namespace's uid: kube-system's names the
	// cluster the resume points belong to.
	NamespaceUID(ctx context.Context, name string) (string, error)
}
