package app

import (
	"context"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegcd/kubegcd/internal/db"
	kubehttp "github.com/kubegcd/kubegcd/internal/http"
)

// apiReadConns is the size of the HTTP API's own read pool.
const apiReadConns = 4

// stores are a run's handles on its database file.
type stores struct {
	// store writes, and serves the controllers' reads.
	store *db.DB
	// dbFile is which file the path names: one deleted or replaced while
	// kubegcd runs ends the run (the part "database file").
	dbFile *db.FileWatch
	// apiStore is the API's, read-only. However many clients ask, the
	// controllers' reads never wait behind theirs. Its streams of the
	// whole graph, which last as long as their clients read, have one
	// connection each beside those, so that they never hold one the short
	// reads need.
	apiStore *db.DB
	// metricsStore serves the metrics that count the whole mirror, which
	// scan it every scrape. Its connections do not map the file, so that
	// the scan's pages stay the kernel's page cache and not the process's
	// resident memory.
	metricsStore *db.DB
	// sandbox runs the cleanup rules' SQL, on connections of its own that
	// can only read the rules' views.
	sandbox *db.Sandbox
}

// openStores opens the database at path, and the read-only handles beside
// it. copiesMaxBytes bounds the copies of deleted objects
// (--deleted-copies-max-bytes).
func openStores(ctx context.Context, path string, copiesMaxBytes int64, reg prometheus.Registerer) (_ *stores,
	err error) {
	s := &stores{}
	defer func() {
		if err != nil {
			s.close(true)
		}
	}()
	// Once the lists end, the memory they decoded and batched goes back
	// to the system: the Go runtime would keep it for minutes, and the
	// cold start's peak would show as the daemon's resident set at rest.
	if s.store, err = db.Open(ctx, path, db.Options{Registerer: reg, ListsEnded: debug.FreeOSMemory,
		DeletedCopiesMaxBytes: copiesMaxBytes}); err != nil {
		return nil, err
	}
	if s.dbFile, err = s.store.WatchFile(); err != nil {
		return nil, err
	}
	s.apiStore, err = db.Open(ctx, path, db.Options{ReadOnly: true, ReadConns: apiReadConns, MapReads: true,
		StreamConns: kubehttp.DefaultMaxGraphStreams})
	if err != nil {
		return nil, err
	}
	if s.metricsStore, err = db.Open(ctx, path, db.Options{ReadOnly: true, ReadConns: 2}); err != nil {
		return nil, err
	}
	if s.sandbox, err = s.store.Rules().OpenSandbox(db.SandboxOptions{}); err != nil {
		return nil, err
	}
	return s, nil
}

// close closes every handle open, the writer's last. With discard, the
// writer also removes the database, if its Open created it, and what it
// created with it (see db.DB.Discard).
func (s *stores) close(discard bool) error {
	if s.sandbox != nil {
		s.sandbox.Close()
	}
	for _, h := range []*db.DB{s.metricsStore, s.apiStore} {
		if h != nil {
			h.Close()
		}
	}
	switch {
	case s.store == nil:
		return nil
	case discard:
		return s.store.Discard()
	}
	return s.store.Close()
}

// dbFileLedger is the applier's ledger, unavailable also while the
// database file is gone: its audit rows would be written to a file no
// start opens again, and /readyz says so until the run ends.
type dbFileLedger struct {
	kubehttp.Ledger
	file *db.FileWatch
}

func (l dbFileLedger) LedgerError() error {
	if err := l.file.Check(); err != nil {
		return err
	}
	return l.Ledger.LedgerError()
}
