package db

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
)

// listState is what the writer knows of the lists under way. Only write
// transactions change it, and they all run on the writer's goroutine. A
// transaction that rolls back leaves it changed, which is harmless: it
// tunes how pages are written, never what they hold.
type listState struct {
	// listing holds the resources whose list has begun and not ended.
	listing map[int64]bool
	// fresh holds, for a resource that had no object when its list began,
	// that list's epoch: its pages take the first-fill path. IsFirstFill
	// reads it from other goroutines, under mu.
	mu    sync.Mutex
	fresh map[int64]int64
	// bigCache says the writer's page cache is at listCacheKB.
	bigCache bool
	// off turns the first-fill path off, for tests that compare it with
	// upsertObject's. filled counts the objects of pages on that path.
	off    bool
	filled int64
}

// begin records that the list of resourceID at epoch began, and whether
// the resource had any object then.
func (l *listState) begin(resourceID, epoch int64, empty bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.listing == nil {
		l.listing, l.fresh = map[int64]bool{}, map[int64]int64{}
	}
	l.listing[resourceID] = true
	delete(l.fresh, resourceID)
	if empty && !l.off {
		l.fresh[resourceID] = epoch
	}
}

// isFresh says whether the pages of resourceID's list at epoch take the
// first-fill path.
func (l *listState) isFresh(resourceID, epoch int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.fresh[resourceID]
	return ok && e == epoch
}

// end forgets the list of resourceID. It reports whether it was the last
// list under way.
func (l *listState) end(resourceID int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.listing, resourceID)
	delete(l.fresh, resourceID)
	return len(l.listing) == 0
}

// growCache gives the writer listCacheKB of page cache while lists are
// under way. A transaction that changes more pages than the writer caches
// spills them into the WAL before its commit, which writes them again. A
// list changes a leaf of every index keyed by UID per object. At SQLite's
// default cache of 2 MB, 10,000 objects wrote 88 MB for 9 MB of pages.
func (d *core) growCache(ctx context.Context, tx *sql.Tx) error {
	if d.lists.bigCache {
		return nil
	}
	if err := setWriterCache(ctx, tx, listCacheKB); err != nil {
		return err
	}
	d.lists.bigCache = true
	return nil
}

// shrinkCache brings the writer's page cache back to SQLite's default
// once no list is under way, and runs Options.ListsEnded. A cache that
// large, if kept, would fill with the pages of every later write. The
// cache stays large from one page of a list to the next: shrinking it
// after each page threw away, and then read again, the pages the next one
// writes (a quarter of a cold start's CPU at 200,000 objects).
func (d *core) shrinkCache(ctx context.Context, tx *sql.Tx) error {
	if !d.lists.bigCache {
		return nil
	}
	if err := setWriterCache(ctx, tx, defaultCacheKB); err != nil {
		return err
	}
	d.lists.bigCache = false
	if _, err := tx.ExecContext(ctx, `PRAGMA shrink_memory`); err != nil {
		return err
	}
	if d.listsEnded != nil {
		go d.listsEnded()
	}
	return nil
}

const (
	// listCacheKB bounds the page cache of the writer, in KB, while lists
	// are under way. defaultCacheKB, SQLite's default, bounds it at all
	// other times.
	listCacheKB    = 32 << 10
	defaultCacheKB = 2000
)

// setWriterCache bounds the page cache of the writer's connection, in KB.
// It runs in a write, as the writer owns the connection. A pragma changes
// nothing in the file, so the write commits nothing.
func setWriterCache(ctx context.Context, tx *sql.Tx, kb int) error {
	_, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA cache_size = %d`, -kb))
	return err
}

// IsFirstFill says whether the pages of resourceID's list at epoch take
// the first-fill path: the resource had no object when the list began.
// Ingestion then writes larger batches (see FirstFillBatch).
func (d Mirror) IsFirstFill(resourceID, epoch int64) bool { return d.lists.isFresh(resourceID, epoch) }

// FirstFillBatch is how many objects of a first fill one transaction
// should write. Objects keyed by UID land on random leaves of the B-trees
// keyed by UID, and a commit writes each leaf it changed whole. Five times
// the objects per commit change few more leaves: at 200,000 ConfigMaps,
// 25,000 a commit wrote 2.3 KB per object where 5,000 wrote 5.8 KB, and
// took a sixth less CPU.
const FirstFillBatch = 25000

// EndList forgets a list that ended without FinishList: it failed, or it
// starts over. The writer keeps its large cache while any list is under
// way.
func (d Mirror) EndList(ctx context.Context, resourceID int64) error {
	return d.inWriteTx(ctx, opResource, func(tx *sql.Tx) error {
		if d.lists.end(resourceID) {
			return d.shrinkCache(ctx, tx)
		}
		return nil
	})
}

// firstFill writes o, from a page of a list that began with no object of
// its resource in the mirror (a cold start, or a new resource). What
// upsertObject reads first (the stored row, its extracted hash, the last
// history row, the owner references) cannot be there, so firstFill reads
// none of it and writes what upsertObject would. An object whose UID the
// mirror holds under another resource takes upsertObject.
func (s *statements) firstFill(ctx context.Context, resourceID, epoch int64, o *Object) error {
	hash := o.extractedHash()
	refs, finalizers := jsonOrNull(o.OwnerReferences), jsonOrNull(o.Finalizers)
	res, err := s.insertNew.ExecContext(ctx, o.UID, resourceID, o.APIVersion, o.Kind, o.Namespace, o.Name,
		o.ResourceVersion, formatTime(o.CreationTimestamp), formatTime(o.DeletionTimestamp),
		ptrOrNull(o.DeletionGracePeriodSeconds), finalizers, epoch, hash, ownersHash(refs))
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		_, _, err := s.upsertObject(ctx, resourceID, epoch, o)
		return err
	}
	if err := s.history.recordNew(ctx, o, refs, finalizers); err != nil {
		return err
	}
	if err := s.addRefs(ctx, o); err != nil {
		return err
	}
	if hash != nil {
		if err := s.extracted.writeFirst(ctx, o); err != nil {
			return err
		}
	}
	_, err = s.upsertTyped(ctx, o)
	return err
}

// finish ends the writes of one transaction: what it leaves to the end
// (see extractedStatements.finish).
func (s *statements) finish(ctx context.Context) error { return s.extracted.finish(ctx) }
