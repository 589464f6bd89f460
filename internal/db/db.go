// Package db owns kubegcd's SQLite database: opening it (pragmas, lock,
// migrations), batched writes from ingestion, and every query the rest of
// the daemon runs.
package db

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// ErrLocked is returned by Open when another process holds the database.
var ErrLocked = errors.New("database is in use by another kubegcd")

// core is an open kubegcd database. Writes go through a single connection,
// as SQLite allows one writer; reads use a pool of read-only connections
// that WAL lets run beside the writer. DB and the role types share it.
type core struct {
	// Path is the database file's absolute path.
	Path string
	// Now is the clock used for timestamps the database records.
	Now func() time.Time

	// listsEnded is Options.ListsEnded.
	listsEnded func()
	// copiesMaxBytes is Options.DeletedCopiesMaxBytes.
	copiesMaxBytes int64

	write *sql.DB
	read  *sql.DB
	// stream serves the walks of the whole graph (see Options.StreamConns).
	stream *sql.DB
	lock   *os.File
	// made is what this Open made that was not there (see Discard).
	made made
	// unpreparedWrites counts write statements prepared in their
	// transaction rather than taken from writeStmts (see txStmt).
	unpreparedWrites atomic.Int64

	writeSeconds *prometheus.HistogramVec
	// writesPerCommit shows group commit at work: how many callers' writes
	// each transaction carried, such as an intent per worker about to send
	// a write, ingest batches, or audit rows.
	writesPerCommit prometheus.Histogram
	// pairedReads counts the wide reads readSnapshot ran, by whether they
	// had a second transaction on their snapshot.
	pairedReads *prometheus.CounterVec
	// pairSlots bounds the reads holding two connections (readSnapshot).
	pairSlots chan struct{}
	split     splitting

	readStmts, writeStmts stmtCache

	// The writer goroutine (see writer.go) and its queue.
	writes     chan *writeReq
	stopWriter chan struct{}
	writerDone chan struct{}
	probes     chan struct{} // WriterAlive's
	// foreignKeysOff says the write connection checks no foreign keys, for
	// a write of op.unchecked (see setForeignKeys). Only the writer's
	// goroutine reads and sets it.
	foreignKeysOff bool
	// lazySync says the write connection commits without syncing the WAL
	// (synchronous=NORMAL), for a group of replayable writes (see
	// setSync). Only the writer's goroutine reads and sets it.
	lazySync bool
	// lists is what the writer knows of the lists under way (first_fill.go).
	lists listState
	// checkpointer copies the WAL into the database file (checkpoint.go);
	// nil when read-only.
	checkpointer *checkpointer

	// Closed when a write found the file corrupt (see corrupt.go).
	corrupt     chan struct{}
	corruptErr  error
	corruptOnce sync.Once
}

// Options tune Open.
type Options struct {
	// Registerer receives the database's metrics; nil means none.
	Registerer prometheus.Registerer
	// ReadOnly opens without migrating, without taking the write lock and
	// without a writer. It serves tools that only inspect a database, and
	// the HTTP API's reads, which get connections of their own so that API
	// clients never take the controllers'.
	ReadOnly bool
	// ReadConns bounds the read connections (default 8).
	ReadConns int
	// StreamConns bounds the connections of the walks of the whole graph
	// (WalkGraph; default 2), a pool apart from ReadConns. A walk lasts as
	// long as its reader takes, and must never hold a connection the short
	// reads need. Its connections are opened at the first walk, and do not
	// map the file, since a walk reads every page of the graph once.
	StreamConns int
	// MapReads maps the database file into memory for the reads
	// (mmap_size), instead of a pread and a copy per page. A read that hops
	// through B-trees then costs a fifth less, but every page a connection
	// has mapped counts in RSS, once per connection. The HTTP API's reads
	// map, since the diagnosis reads hop most. The controllers' reads do
	// not, so that the daemon's memory at rest stays its own.
	MapReads bool
	// CheckpointEvery is the least time between two checkpoints (default
	// 2 s; see checkpoint.go).
	CheckpointEvery time.Duration
	// Driver names the database/sql driver of the read connections. "" is
	// modernc's "sqlite". A test registers a driver that wraps it, to see
	// every statement the reads run and check their query plans.
	Driver string
	// ListsEnded, when set, runs on a goroutine of its own each time the
	// last list under way ends: the burst of a cold start or a relist is
	// over. The daemon gives back the memory the lists used there.
	ListsEnded func()
	// DeletedCopiesMaxBytes bounds the compressed bytes of the copies of
	// deleted objects: a copy that would pass it makes room first, by
	// dropping the oldest (see PutDeletedCopy). 0: no bound.
	DeletedCopiesMaxBytes int64
}

// Open locks the database at path against other kubegcd processes, checks
// that the file is not corrupt, applies pragmas, and migrates the schema up.
// A schema newer than this binary knows is refused rather than touched.
// Unless read-only, it creates the file, and the directories above it,
// when they are missing. An Open that fails removes what it created.
func Open(ctx context.Context, path string, opts Options) (*DB, error) {
	path, err := resolve(path)
	if err != nil {
		return nil, err
	}
	d := &core{Path: path, Now: time.Now, split: splitting{rowMin: defaultSplitRowMin},
		writes: make(chan *writeReq, maxGroup), stopWriter: make(chan struct{}),
		writerDone: make(chan struct{}), probes: make(chan struct{}), corrupt: make(chan struct{}),
		listsEnded: opts.ListsEnded, copiesMaxBytes: opts.DeletedCopiesMaxBytes}
	if opts.ReadOnly {
		// Writes fail at once: a nil queue is never ready, so inWriteTx
		// always picks the closed writerDone.
		d.writes = nil
		close(d.writerDone)
	} else {
		if d.made.dirs, err = makeDirs(filepath.Dir(path)); err != nil {
			return nil, err
		}
		if err := d.startWriter(); err != nil {
			removeDirs(d.made.dirs)
			return nil, err
		}
	}
	ok := false
	defer func() {
		if !ok {
			// A failed Open leaves nothing it made, as a failed start.
			(&DB{d}).Discard()
		}
	}()
	if !opts.ReadOnly {
		if err := d.openWriter(ctx); err != nil {
			return nil, err
		}
	}
	if err := d.openReaders(ctx, opts); err != nil {
		return nil, err
	}
	if !opts.ReadOnly {
		if err := d.warmWrites(ctx); err != nil {
			return nil, fmt.Errorf("database %s: %w", path, err)
		}
	}
	d.newMetrics()
	if !opts.ReadOnly {
		if err := d.startCheckpointer(cmp.Or(opts.CheckpointEvery, defaultCheckpointEvery)); err != nil {
			return nil, fmt.Errorf("database %s: %w", path, err)
		}
	}
	if err := d.register(opts.Registerer); err != nil {
		return nil, err
	}
	ok = true
	return &DB{d}, nil
}

// startWriter takes the lock and starts the writer goroutine. It starts the
// goroutine only once the lock is held, so a refused Open leaves no
// goroutine behind. From then on Close stops it. The goroutine touches
// d.write only for a request, and requests come after Open.
func (d *core) startWriter() error {
	lock, err := lockFile(d.Path, &d.made)
	if err != nil {
		return err
	}
	d.lock = lock
	d.checkpointer = newCheckpointer()
	go d.runWriter()
	return nil
}

// openWriter opens the write connection, checks the file and migrates it.
// The check comes before the migration: a damaged file stops the daemon
// at start with one clear line, rather than failing it later, half-running.
func (d *core) openWriter(ctx context.Context) error {
	var err error
	if d.write, err = openPool(d.Path, false); err != nil {
		return err
	}
	d.write.SetMaxOpenConns(1)
	if err := quickCheck(ctx, d.write, d.Path); err != nil {
		return err
	}
	return migrateUp(ctx, d.Path)
}

// openReaders opens the pools of read connections: the short reads' and
// the graph walks'.
func (d *core) openReaders(ctx context.Context, opts Options) error {
	var err error
	if d.read, err = openPoolWith(cmp.Or(opts.Driver, "sqlite"), d.Path, true, opts.MapReads); err != nil {
		return err
	}
	readConns := cmp.Or(opts.ReadConns, 8)
	d.read.SetMaxOpenConns(readConns)
	// At most half the read connections, less one, go to the second
	// transactions of paired reads. The others always serve single reads.
	d.pairSlots = make(chan struct{}, (readConns-1)/2)
	// The pool keeps two connections open (database/sql's default). Both
	// are opened now, because a wide read takes two.
	if err := openReads(ctx, d.read, min(2, readConns)); err != nil {
		return fmt.Errorf("database %s: %w", d.Path, err)
	}
	if d.stream, err = openPoolWith(cmp.Or(opts.Driver, "sqlite"), d.Path, true, false); err != nil {
		return err
	}
	d.stream.SetMaxOpenConns(cmp.Or(opts.StreamConns, 2))
	// Walks are rare, so their connections, and the page caches they
	// filled, go once idle.
	d.stream.SetConnMaxIdleTime(time.Minute)
	return nil
}

// newMetrics makes the database's metrics.
func (d *core) newMetrics() {
	d.writeSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "kubegcd",
		Subsystem: "db",
		Name:      "write_duration_seconds",
		Help:      "Time to apply one batched write transaction to SQLite.",
		Buckets:   prometheus.ExponentialBuckets(0.0005, 2, 14),
	}, []string{"operation"})
	d.writesPerCommit = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "kubegcd",
		Subsystem: "db",
		Name:      "writes_per_commit",
		Help:      "Writes (of concurrent callers) committed together in one SQLite transaction.",
		Buckets:   prometheus.ExponentialBuckets(1, 2, 9),
	})
	d.pairedReads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "kubegcd",
		Subsystem: "db",
		Name:      "wide_reads_total",
		Help: "Reads of a big part of the graph (its walks, cascade previews), " +
			"by whether they split their widest queries over two read transactions on one snapshot: " +
			"paired; single (one core, or all pair slots taken); " +
			"moved (a commit came between the two transactions' starts).",
	}, []string{"read"})
}

// register hands the database's metrics to r, when there is one.
func (d *core) register(r prometheus.Registerer) error {
	if r == nil {
		return nil
	}
	cs := []prometheus.Collector{d.writeSeconds, d.writesPerCommit, d.pairedReads}
	if d.checkpointer != nil {
		cs = append(cs, d.checkpointer.seconds, d.checkpointer.errors)
	}
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// Close releases the connections and the lock.
func (d *DB) Close() error { return d.close(false) }

// close releases the connections and the lock. With discard, it removes
// what Open made before it releases the lock (see Discard).
func (d *DB) close(discard bool) error {
	var errs []error
	select {
	case <-d.writerDone:
	default:
		close(d.stopWriter)
		<-d.writerDone
	}
	d.readStmts.close()
	d.writeStmts.close()
	if d.read != nil {
		errs = append(errs, d.read.Close())
	}
	if d.stream != nil {
		errs = append(errs, d.stream.Close())
	}
	if d.checkpointer != nil {
		errs = append(errs, d.checkpointer.close())
	}
	if d.write != nil {
		errs = append(errs, d.write.Close())
	}
	if discard && d.lock != nil {
		errs = append(errs, d.removeMade())
	}
	if d.lock != nil {
		errs = append(errs, d.lock.Close())
		d.lock = nil
	}
	return errors.Join(errs...)
}

// resolve makes path absolute, so that the lock file and the database are
// one file whatever the working directory.
func resolve(path string) (string, error) {
	if path == "" {
		return "", errors.New("database path is empty")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("database %s: %w", path, err)
	}
	return abs, nil
}

// dsn is the connection string of the database at the absolute path. The
// path is URI-escaped, because SQLite would end it at a '#' and the driver
// at a '?', and so open another file than the one locked.
func dsn(path string, readOnly, mapped bool) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "journal_mode(WAL)")
	// The writer syncs the WAL at every commit (FULL). A committed intent
	// must survive a power loss, since its write may already be out (see
	// docs/architecture.md, Intents). Group commit makes that one fsync per
	// transaction, not per write. Readers write nothing.
	if readOnly {
		q.Add("_pragma", "synchronous(NORMAL)")
	} else {
		q.Add("_pragma", "synchronous(FULL)")
		// A write of a group commit may run in a savepoint, whose
		// sub-journal copies every page it first changes. temp_store keeps
		// the sub-journal in memory, not in a temporary file.
		q.Add("_pragma", "temp_store(MEMORY)")
		// The checkpointer copies the WAL into the file. A writer does so
		// itself only past a backstop (see checkpoint.go).
		q.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", walBackstopPages))
		q.Add("_pragma", fmt.Sprintf("journal_size_limit(%d)", walSizeLimit))
	}
	if readOnly {
		q.Add("_pragma", "query_only(1)")
		// A reader never creates the file. Once the database is deleted
		// under a running daemon, a new read connection fails instead of
		// leaving an empty database at the path.
		q.Add("mode", "rw")
	}
	if mapped {
		// Reads go through the file's pages in the kernel's page cache,
		// mapped, instead of a pread and a copy per page (see
		// Options.MapReads).
		q.Add("_pragma", "mmap_size(1073741824)")
	}
	q.Add("_txlock", "immediate")
	u := url.URL{Scheme: "file", Path: path, RawQuery: q.Encode()}
	return u.String()
}

func openPool(path string, readOnly bool) (*sql.DB, error) {
	return openPoolWith("sqlite", path, readOnly, false)
}

// openPoolWith opens a pool of connections of driver to the database at
// path. For mapped, see Options.MapReads.
func openPoolWith(driver, path string, readOnly, mapped bool) (*sql.DB, error) {
	db, err := sql.Open(driver, dsn(path, readOnly, mapped))
	if err != nil {
		return nil, fmt.Errorf("database %s: %w", path, err)
	}
	return db, nil
}

// createPrivate creates the database file, if it does not exist, readable
// by its owner only, because it holds the cluster's object names and owner
// edges. SQLite creates the -wal and -shm files with the main file's mode.
// An existing file keeps the mode it has. created says whether the file
// is new.
func createPrivate(path string) (created bool, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		// It is there: open it as before, which checks it is writable.
		f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	} else if err == nil {
		created = true
	}
	if err != nil {
		return false, fmt.Errorf("database %s: %w", path, err)
	}
	return created, f.Close()
}

// lockFile takes an exclusive flock on PATH.lock, so that two daemons never
// share one database. The lock dies with the process, so a crash leaves
// nothing to clean up. lockFile then creates the database file if needed.
// It notes in made the lock file and the database file it created.
func lockFile(path string, made *made) (*os.File, error) {
	lockPath := path + ".lock"
	// A failed first start removes the lock file it made, holding the
	// lock (see Discard). A lock taken on the file just removed guards
	// nothing: take it again, on the file the path names now.
	for attempt := 1; ; attempt++ {
		f, created, err := openLock(path, lockPath)
		if err != nil {
			return nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			holder, _ := os.ReadFile(lockPath)
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				if pid := strings.TrimSpace(string(holder)); pid != "" {
					return nil, fmt.Errorf("%w (pid %s): %s", ErrLocked, pid, path)
				}
				return nil, fmt.Errorf("%w: %s", ErrLocked, path)
			}
			return nil, fmt.Errorf("database %s: cannot lock: %w", path, err)
		}
		same, err := isFileAt(f, lockPath)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("database %s: cannot lock: %w", path, err)
		}
		if !same {
			f.Close()
			if attempt == 3 {
				return nil, fmt.Errorf("database %s: cannot lock: %s was removed each time it was locked",
					path, lockPath)
			}
			continue
		}
		if err := f.Truncate(0); err == nil {
			_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		}
		// Create the file under the lock, so that whatever writes the
		// database (the daemon, migrate) finds it created private.
		made.file, err = createPrivate(path)
		if err != nil {
			if created {
				os.Remove(lockPath)
			}
			f.Close()
			return nil, err
		}
		made.lock = created
		return f, nil
	}
}

// openLock opens the lock file at lockPath, the lock of the database at
// path, and creates it if needed. created says whether it did.
func openLock(path, lockPath string) (f *os.File, created bool, err error) {
	f, err = os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		f, err = os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o600)
	} else if err == nil {
		created = true
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, fmt.Errorf("database %s: directory %s does not exist", path, filepath.Dir(path))
	}
	if err != nil {
		return nil, false, fmt.Errorf("database %s: cannot create lock file: %w", path, err)
	}
	return f, created, nil
}

// observe records how long a write took.
func (d *core) observe(op string, start time.Time) {
	d.writeSeconds.WithLabelValues(op).Observe(time.Since(start).Seconds())
}
