package app

import (
	"context"
	"fmt"
	"net"
	"time"

	"golang.org/x/sync/errgroup"
)

// parts run the daemon's parts in one group, and the first to fail ends
// the run: a daemon that can no longer mirror, decide or serve must exit,
// for systemd to restart it, rather than stay up looking healthy.
type parts struct {
	g *errgroup.Group
	d *daemonRun
}

// add runs the part name.
func (p parts) add(name string, fn func() error) {
	p.g.Go(func() error {
		err := fn()
		if err != nil {
			err = p.d.redact(err)
			p.d.log.Error("stopping: a part of kubegcd failed", "part", name, "err", err)
		}
		return err
	})
}

// runParts runs every part until ctx ends or one fails. Shutdown order:
// stop serving, then stop the controllers and ingestion (work ends when
// serving has stopped), then (in run) close the database.
func (d *daemonRun) runParts(ctx context.Context, srv *server, ln net.Listener) error {
	g, gctx := errgroup.WithContext(ctx)
	work, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()
	p := parts{g: g, d: d}
	// The first count, in the background, so that the first GET /lint or
	// scrape need not wait for it; each pass ends with the work.
	srv.lintCounter.Start(work)
	p.add("http", func() error {
		defer stopWork()
		return srv.serve(gctx, ln)
	})
	// READY=1 now: the database is open and the API serves.
	state := func() sdState { return sdStateOf(d.ing, d.ctrls.applier, d.lead) }
	if sd := newSystemd(d.log.With("component", "systemd"), state, aliveCheck(d.loops, d.store)); sd != nil {
		p.add("systemd", func() error {
			sd.run(gctx)
			return nil
		})
	}
	d.watchDatabase(work, p)
	d.runWork(work, p)
	if err := g.Wait(); err != nil {
		return err
	}
	d.log.Info("kubegcd stopped")
	return nil
}

// watchDatabase adds the parts that end the run when the database goes
// bad or its file goes away.
func (d *daemonRun) watchDatabase(work context.Context, p parts) {
	p.add("database", func() error {
		select {
		case <-d.store.Corrupt():
			return d.dbFile.Cause(d.store.CorruptErr())
		case <-work.Done():
			return nil
		}
	})
	// A stat every 2 s: the writes that go to a file nobody will read
	// again are those of a few seconds at most.
	p.add("database file", func() error { return d.dbFile.Watch(work, 2*time.Second) })
}

// runWork adds the parts that do kubegcd's work: ingestion, the
// controllers (under leader election when there is one), pruning, and
// the report of the first sync.
func (d *daemonRun) runWork(work context.Context, p parts) {
	p.add("ingest", func() error {
		if err := d.ing.Run(work); err != nil {
			return fmt.Errorf("ingest: %w", err)
		}
		return nil
	})
	if d.lead.Enabled() {
		// Every instance settles the writes its database left open, leader
		// or not: the audit history then holds their outcome wherever it
		// is read. A leader's controllers wait for it (settleIntents).
		p.add("open writes", func() error {
			d.ctrls.settleIntents(work)
			return nil
		})
		p.add("leader election", func() error {
			defer d.ctrls.stop() // a follower never ran them
			return d.lead.Run(work, d.restCfg, d.log.With("component", "leader-election"), d.leaderWork)
		})
	} else {
		p.add("controllers", func() error { return d.ctrls.run(work) })
	}
	// The rules run on every instance: each reports, and those that delete
	// act only where the instance may write.
	p.add("rules", func() error { return d.rules.Run(work) })
	d.runAuditSharing(work, p)
	// Every instance ships the audit rows it records.
	d.addAuditSinks(work, p)
	p.add("audit pruning", func() error {
		pruneAudit(work, d.store, d.cfg.auditRetention, d.log)
		return nil
	})
	p.add("deleted copies pruning", func() error {
		pruneDeletedCopies(work, d.store, d.cfg.deletedCopiesRetention, d.cfg.deletedCopiesMaxBytes, d.log)
		return nil
	})
	if d.cfg.historyRetention > 0 {
		p.add("history pruning", func() error {
			pruneHourly(work, "object history", d.cfg.historyRetention, d.store.History().PruneHistory,
				d.log)
			return nil
		})
	}
	p.add("sync report", func() error {
		if err := d.ing.WaitForSync(work); err == nil {
			d.log.Info("mirror synced", "resources", len(d.ing.Resources()),
				"after", time.Since(d.started).Round(time.Millisecond))
		}
		return nil
	})
}
