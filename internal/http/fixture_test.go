package http

import (
	"context"
	"testing"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/db/dbtest"
)

// benchStore opens a fresh database, closed when the benchmark ends.
func benchStore(b *testing.B) *db.DB {
	b.Helper()
	store := dbtest.Open(b)
	return store
}

// events writes objects to a store as watch events do, 1,000 to a batch.
type events struct {
	b     *testing.B
	store *db.DB
	batch []db.Event
}

func (e *events) add(resourceID int64, o *db.Object) {
	if e.batch = append(e.batch, db.Event{ResourceID: resourceID, Object: o}); len(e.batch) == 1000 {
		e.flush()
	}
}

func (e *events) flush() {
	if _, err := e.store.Mirror().ApplyEvents(context.Background(), e.batch); err != nil {
		e.b.Fatal(err)
	}
	e.batch = e.batch[:0]
}
