package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegcd/kubegcd/internal/app"
	"github.com/kubegcd/kubegcd/internal/db"
	kubehttp "github.com/kubegcd/kubegcd/internal/http"
)

// The reads benchmark needs no cluster. It fills a database through the
// ingestion and ledger code, in list pages and audit batches. Then it
// serves every read endpoint through the daemon's handler over read-only
// handles of its own, as the daemon does, and times each.
const (
	readsTarget   = 100 * time.Millisecond // p99 of each endpoint
	readsRequests = 60                     // per endpoint
	graphRSSLimit = 50 * mib               // the whole graph's stream over idle RSS
	stuckObjects  = 2_000
)

// runReads fills a database with objects and auditRows, then times the
// read endpoints. One tree of treeSize objects is among the objects, for
// /graph?uid= and the cascade preview to walk. With keep, the database is
// kept at that path, with its fixture beside it, and a later run reuses
// both instead of filling. With profileDir, each endpoint's requests are
// CPU-profiled into a file of their own there. With only, a regular
// expression, just the endpoints it matches are timed ("whole" names the
// whole graph's stream).
func runReads(ctx context.Context, dir string, objects, auditRows, treeSize int, keep, profileDir, only string) error {
	match := func(string) bool { return true }
	if only != "" {
		re, err := regexp.Compile(only)
		if err != nil {
			return fmt.Errorf("endpoints: %w", err)
		}
		match = re.MatchString
	}
	fmt.Printf("\n== reads: %d mirrored objects, %d audit rows ==\n", objects, auditRows)
	// The handler runs in this process, so it gets the daemon's collector
	// target.
	gogc, fromEnv := app.TuneGC(os.Getenv)
	fmt.Printf("  GOGC %s (%s)\n", gogc,
		map[bool]string{false: "the daemon's default", true: "from the environment"}[fromEnv])
	path := filepath.Join(dir, "reads.db")
	if keep != "" {
		path = keep
	}
	fx, err := openReads(ctx, path, keep, objects, auditRows, treeSize)
	if err != nil {
		return err
	}
	h, closeDBs, err := readsHandler(ctx, path)
	if err != nil {
		return err
	}
	defer closeDBs()
	// The 100th page of 100 rows, or the last a small history has.
	auditPage100, err := auditCursor(h, max(1, min(99, auditRows/100-1)))
	if err != nil {
		return err
	}
	fmt.Printf("  %-34s %10s %10s %10s  %s\n", "endpoint", "p50", "p99", "max", "target p99 < 100 ms")
	for _, e := range readEndpoints(fx, treeSize, auditPage100) {
		if !match(e.name) {
			continue
		}
		if err := timeEndpoint(h, e, profileDir); err != nil {
			return err
		}
	}
	if !match("whole /graph") {
		return nil
	}
	return timeWholeGraph(h, objects)
}

// openReads returns the fixture of the database at path. It fills the
// database first unless keep holds one to reuse.
func openReads(ctx context.Context, path, keep string, objects, auditRows, treeSize int) (*readsFixture, error) {
	fx, err := loadFixture(path, keep)
	if err != nil {
		return nil, err
	}
	if fx != nil {
		fmt.Printf("  reusing %s (%d objects asked for are not checked against it)\n", path, objects)
		// The read-only handles do not migrate. A database kept by an
		// older kubegcd is brought to this one's schema first.
		start := time.Now()
		store, err := db.Open(ctx, path, db.Options{})
		if err != nil {
			return nil, err
		}
		if err := store.Close(); err != nil {
			return nil, err
		}
		fmt.Printf("  opened for writing (and migrated) in %s\n", time.Since(start).Round(time.Millisecond))
	} else if fx, err = fillReads(ctx, path, objects, auditRows, treeSize, keep); err != nil {
		return nil, err
	}
	if st, err := os.Stat(path); err == nil {
		fmt.Printf("  database: %d MiB\n", st.Size()/mib)
	}
	return fx, nil
}

// readsHandler opens the database at path read-only, as the daemon does,
// and returns the daemon's handler over it once the lint counts' first
// pass is done. closeDBs closes the handles.
func readsHandler(ctx context.Context, path string) (h http.Handler, closeDBs func(), err error) {
	reads, err := db.Open(ctx, path, db.Options{ReadOnly: true, ReadConns: 4, MapReads: true})
	if err != nil {
		return nil, nil, err
	}
	// The metrics and the lint counts read the whole mirror through
	// connections of their own that do not map the file, as the daemon's
	// do.
	metrics, err := db.Open(ctx, path, db.Options{ReadOnly: true, ReadConns: 2})
	if err != nil {
		reads.Close()
		return nil, nil, err
	}
	closeDBs = func() {
		metrics.Close()
		reads.Close()
	}
	lintCounter := kubehttp.NewLintCounter(metrics.Objects(), kubehttp.DefaultLintCountsMaxAge, discardLogger())
	h, err = kubehttp.NewHandler(kubehttp.Options{DB: reads.Reads(), MetricsDB: metrics.Objects(),
		LintCounter: lintCounter, Ingest: syncedIngest{}, Registry: prometheus.NewRegistry(),
		StuckAfter: time.Minute, Logger: discardLogger()})
	if err != nil {
		closeDBs()
		return nil, nil, err
	}
	// The daemon starts the lint counts' first pass as it starts serving.
	// The timings begin once it is done, and what it cost is shown.
	start := time.Now()
	lintCounter.Start(ctx)
	if _, err := lintCounter.Wait(ctx); err != nil {
		closeDBs()
		return nil, nil, err
	}
	fmt.Printf("  lint counts' first pass (in the background, at start): %s\n", time.Since(start).Round(time.Millisecond))
	return h, closeDBs, nil
}

// readEndpoint is an endpoint the reads benchmark times. path returns the
// path of its next request.
type readEndpoint struct {
	name string
	path func() string
}

// readEndpoints are the endpoints to time, asking about the fixture's
// objects in a random order that is the same in each run.
func readEndpoints(fx *readsFixture, treeSize int, auditPage100 string) []readEndpoint {
	r := rand.New(rand.NewPCG(7, 7))
	object := func() string { return fx.Objects[r.IntN(len(fx.Objects))] }
	return []readEndpoint{
		{"/status", func() string { return "/status" }},
		{"/pending?limit=100", func() string { return "/pending?limit=100" }},
		{"/audit (first page)", func() string { return "/audit" }},
		{"/audit (100th page)", func() string { return "/audit?cursor=" + auditPage100 }},
		{"/audit?controller=podgc", func() string { return "/audit?controller=podgc" }},
		{"/audit?outcome=failed", func() string { return "/audit?outcome=failed" }},
		{"/objects/{uid}", func() string { return "/objects/" + object() }},
		{"/objects/{uid}/history", func() string { return "/objects/" + object() + "/history" }},
		{"/objects?kind=&name=", func() string {
			ns, name, _ := strings.Cut(fx.Names[r.IntN(len(fx.Names))], "/")
			return "/objects?kind=cm&namespace=" + ns + "&name=" + name
		}},
		{fmt.Sprintf("/graph?uid= (a tree of %d)", treeSize), func() string { return "/graph?uid=" + fx.TreeRoot }},
		{fmt.Sprintf("/objects/{uid}/cascade (%d)", treeSize), func() string {
			return "/objects/" + fx.TreeRoot + "/cascade"
		}},
		{"/stuck", func() string { return "/stuck" }},
		{"/lint", func() string { return "/lint" }},
		{"/overview", func() string { return "/overview" }},
	}
}

// timeEndpoint sends readsRequests requests to e through h and prints
// their p50, p99 and slowest time.
func timeEndpoint(h http.Handler, e readEndpoint, profileDir string) error {
	stop, err := startProfile(profileDir, e.name)
	if err != nil {
		return err
	}
	var times []time.Duration
	for range readsRequests {
		path := e.path()
		t0 := time.Now()
		code, _ := serve(h, path)
		times = append(times, time.Since(t0))
		if code != http.StatusOK {
			return fmt.Errorf("GET %s: %d", path, code)
		}
	}
	if err := stop(); err != nil {
		return err
	}
	if os.Getenv("KUBEGCD_BENCH_READS_TIMES") != "" {
		// Each request's time, in order: the first finds the pages and the
		// heap cold.
		var each []string
		for _, t := range times {
			each = append(each, fmt.Sprintf("%.1f", float64(t.Microseconds())/1000))
		}
		fmt.Printf("  %-34s each (ms): %s\n", "", strings.Join(each, " "))
	}
	slices.Sort(times)
	p50, p99 := times[len(times)/2], times[len(times)*99/100]
	fmt.Printf("  %-34s %10s %10s %10s  %s\n",
		e.name, ms(p50), ms(p99), ms(times[len(times)-1]), verdict(p99 < readsTarget))
	return nil
}

// timeWholeGraph streams the whole graph of objects through h and prints
// how much the process's own memory grew meanwhile, which should stay near
// idle. Its RSS also counts the database pages the read connections map.
// Those belong to the page cache, shared and reclaimable, and are shown
// apart.
func timeWholeGraph(h http.Handler, objects int) error {
	idle, err := readMemoryOf("self")
	if err != nil {
		return err
	}
	var peakAnon, peakFile atomic.Uint64
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if m, err := readMemoryOf("self"); err == nil {
					peakAnon.Store(max(peakAnon.Load(), m.Anon))
					peakFile.Store(max(peakFile.Load(), m.File))
				}
			}
		}
	}()
	t0 := time.Now()
	code, size := serve(h, fmt.Sprintf("/graph?limit=%d", objects*2))
	close(done)
	if code != http.StatusOK {
		return fmt.Errorf("GET /graph: %d", code)
	}
	grew := max(peakAnon.Load(), idle.Anon) - idle.Anon
	fmt.Printf("  whole /graph: %d MB in %s; anonymous RSS %d MiB idle, +%d MiB at most while serving it  %s\n",
		size/1e6, time.Since(t0).Round(time.Millisecond), idle.Anon/mib, grew/mib, verdict(grew <= graphRSSLimit))
	fmt.Printf("  (the database's pages mapped by the reads: %d MiB before, %d MiB at most)\n",
		idle.File/mib, peakFile.Load()/mib)
	return nil
}

// startProfile starts a CPU profile of the requests to one endpoint, into
// dir; without dir it does nothing.
func startProfile(dir, endpoint string) (stop func() error, err error) {
	if dir == "" {
		return func() error { return nil }, nil
	}
	name := strings.Trim(regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(endpoint, "-"), "-")
	f, err := os.Create(filepath.Join(dir, name+".pprof"))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

// verdict marks a figure that meets its target "ok", and one that misses
// it "FAIL".
func verdict(ok bool) string {
	if ok {
		return "ok"
	}
	return "FAIL"
}

// serve runs one request through h, counting the answer's bytes.
func serve(h http.Handler, path string) (int, int) {
	w := &countingWriter{header: http.Header{}, code: http.StatusOK}
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil))
	return w.code, w.n
}

// countingWriter is a ResponseWriter that keeps only the answer's status,
// its size and its last KiB.
type countingWriter struct {
	header http.Header
	code   int
	n      int
	tail   []byte // the last KiB, for cursors
}

func (w *countingWriter) Header() http.Header { return w.header }

func (w *countingWriter) WriteHeader(code int) { w.code = code }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.tail = append(w.tail, p[max(0, len(p)-1<<10):]...)
	w.tail = w.tail[max(0, len(w.tail)-1<<10):]
	w.n += len(p)
	return len(p), nil
}

var nextRe = regexp.MustCompile(`"next":\s*"?([0-9A-Za-z_=-]+)"?`)

// auditCursor follows /audit's next cursor for pages pages and returns
// the last cursor.
func auditCursor(h http.Handler, pages int) (string, error) {
	cursor := ""
	for i := range pages {
		path := "/audit"
		if cursor != "" {
			path += "?cursor=" + cursor
		}
		w := &countingWriter{header: http.Header{}, code: http.StatusOK}
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil))
		// The cursor is the last field: read it from the answer's end.
		m := nextRe.FindSubmatch(w.tail)
		if w.code != http.StatusOK || m == nil {
			return "", fmt.Errorf("GET %s (page %d): %d, no next cursor", path, i+1, w.code)
		}
		cursor = string(m[1])
	}
	return cursor, nil
}

// syncedIngest tells the handler that ingestion has synced.
type syncedIngest struct{}

func (syncedIngest) Synced() bool { return true }

func (syncedIngest) Resources() []kubehttp.ResourceStatus { return nil }
