package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
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

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/app"
	"github.com/kubegcd/kubegcd/internal/db"
	kubehttp "github.com/kubegcd/kubegcd/internal/http"
)

// The reads benchmark needs no cluster: it fills a database through the
// ingestion and ledger code (list pages, audit batches), then serves every
// read endpoint through the daemon's handler over a read-only DB of its
// own, as the daemon does, and times each.
const (
	readsTarget   = 100 * time.Millisecond // p99 of each endpoint
	readsRequests = 60                     // per endpoint
	graphRSSLimit = 50 * mib               // the whole graph's stream over idle RSS
	stuckObjects  = 2_000
)

// readsFixture names the objects the requests ask about.
type readsFixture struct {
	TreeRoot  string   `json:"treeRoot"`
	Objects   []string `json:"objects"` // a sample of UIDs for /objects/{uid}
	Names     []string `json:"names"`   // "namespace/name" of ConfigMaps, for /objects?kind=
	Kinds     []string `json:"kinds"`
	AuditRows int      `json:"auditRows"`
}

// runReads fills a database with objects (one tree of treeSize among them,
// which /graph?uid= and the cascade preview walk) and auditRows, then times
// the read endpoints. With keep, the database is kept at that path, with
// its fixture beside it, and a later run reuses both instead of filling.
// With profileDir, each endpoint's requests are CPU-profiled into a file of
// their own there. With only, a regular expression, just the endpoints it
// matches are timed ("whole" names the whole graph's stream).
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
	// The handler runs in this process: with the daemon's collector target.
	gogc, fromEnv := app.TuneGC(os.Getenv)
	fmt.Printf("  GOGC %s (%s)\n", gogc, map[bool]string{false: "the daemon's default", true: "from the environment"}[fromEnv])
	path := filepath.Join(dir, "reads.db")
	if keep != "" {
		path = keep
	}
	fx, err := loadFixture(path, keep)
	if err != nil {
		return err
	}
	if fx != nil {
		fmt.Printf("  reusing %s (%d objects asked for are not checked against it)\n", path, objects)
		// The read-only handle below does not migrate: a database kept by
		// an older kubegcd is brought to this one's schema first.
		start := time.Now()
		store, err := db.Open(ctx, path, db.Options{})
		if err != nil {
			return err
		}
		if err := store.Close(); err != nil {
			return err
		}
		fmt.Printf("  opened for writing (and migrated) in %s\n", time.Since(start).Round(time.Millisecond))
	} else if fx, err = fillReads(ctx, path, objects, auditRows, treeSize, keep); err != nil {
		return err
	}
	if st, err := os.Stat(path); err == nil {
		fmt.Printf("  database: %d MiB\n", st.Size()/mib)
	}

	api, err := db.Open(ctx, path, db.Options{ReadOnly: true, ReadConns: 4, MapReads: true})
	if err != nil {
		return err
	}
	defer api.Close()
	// The metrics and the lint counts read the whole mirror through
	// connections of their own that do not map the file, as the daemon's.
	metrics, err := db.Open(ctx, path, db.Options{ReadOnly: true, ReadConns: 2})
	if err != nil {
		return err
	}
	defer metrics.Close()
	lintCounter := kubehttp.NewLintCounter(metrics.Objects(), kubehttp.DefaultLintCountsMaxAge, discardLogger())
	h, err := kubehttp.NewHandler(kubehttp.Options{DB: api.Reads(), MetricsDB: metrics.Objects(), LintCounter: lintCounter, Ingest: syncedIngest{},
		Registry: prometheus.NewRegistry(), StuckAfter: time.Minute, Logger: discardLogger()})
	if err != nil {
		return err
	}
	// The daemon starts the lint counts' first pass as it starts serving;
	// the timings begin once it is done, and what it cost is shown.
	start := time.Now()
	lintCounter.Start(ctx)
	if _, err := lintCounter.Wait(ctx); err != nil {
		return err
	}
	fmt.Printf("  lint counts' first pass (in the background, at start): %s\n", time.Since(start).Round(time.Millisecond))
	r := rand.New(rand.NewPCG(7, 7))
	// The 100th page of 100 rows, or the last a small history has.
	auditPage100, err := auditCursor(h, max(1, min(99, auditRows/100-1)))
	if err != nil {
		return err
	}
	endpoints := []struct {
		name string
		path func() string
	}{
		{"/status", func() string { return "/status" }},
		{"/pending?limit=100", func() string { return "/pending?limit=100" }},
		{"/audit (first page)", func() string { return "/audit" }},
		{"/audit (100th page)", func() string { return "/audit?cursor=" + auditPage100 }},
		{"/audit?controller=podgc", func() string { return "/audit?controller=podgc" }},
		{"/audit?outcome=failed", func() string { return "/audit?outcome=failed" }},
		{"/objects/{uid}", func() string { return "/objects/" + fx.Objects[r.IntN(len(fx.Objects))] }},
		{"/objects/{uid}/history", func() string { return "/objects/" + fx.Objects[r.IntN(len(fx.Objects))] + "/history" }},
		{"/objects?kind=&name=", func() string {
			ns, name, _ := strings.Cut(fx.Names[r.IntN(len(fx.Names))], "/")
			return "/objects?kind=cm&namespace=" + ns + "&name=" + name
		}},
		{fmt.Sprintf("/graph?uid= (a tree of %d)", treeSize), func() string { return "/graph?uid=" + fx.TreeRoot }},
		{fmt.Sprintf("/objects/{uid}/cascade (%d)", treeSize), func() string { return "/objects/" + fx.TreeRoot + "/cascade" }},
		{"/stuck", func() string { return "/stuck" }},
		{"/lint", func() string { return "/lint" }},
		{"/overview", func() string { return "/overview" }},
	}
	fmt.Printf("  %-34s %10s %10s %10s  %s\n", "endpoint", "p50", "p99", "max", "target p99 < 100 ms")
	for _, e := range endpoints {
		if !match(e.name) {
			continue
		}
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
			// Each request's time, in order: the first finds the pages
			// and the heap cold.
			var each []string
			for _, t := range times {
				each = append(each, fmt.Sprintf("%.1f", float64(t.Microseconds())/1000))
			}
			fmt.Printf("  %-34s each (ms): %s\n", "", strings.Join(each, " "))
		}
		slices.Sort(times)
		p50, p99 := times[len(times)/2], times[len(times)*99/100]
		fmt.Printf("  %-34s %10s %10s %10s  %s\n", e.name, ms(p50), ms(p99), ms(times[len(times)-1]), verdict(p99 < readsTarget))
	}

	if !match("whole /graph") {
		return nil
	}
	// The whole graph streams: the process's own memory while serving it
	// stays near idle. Its RSS also counts the database pages the read
	// connections map (the page cache's, shared and reclaimable), shown
	// apart.
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
	fmt.Printf("  (the database's pages mapped by the reads: %d MiB before, %d MiB at most)\n", idle.File/mib, peakFile.Load()/mib)
	return nil
}

// fillReads fills the database at path and, with keep, saves its fixture
// beside it.
func fillReads(ctx context.Context, path string, objects, auditRows, treeSize int, keep string) (*readsFixture, error) {
	store, err := db.Open(ctx, path, db.Options{})
	if err != nil {
		return nil, err
	}
	defer store.Close()
	start := time.Now()
	fx, err := fillMirror(ctx, store, objects, treeSize)
	if err != nil {
		return nil, err
	}
	fmt.Printf("  mirror written in %s (%.0f objects/s)\n", time.Since(start).Round(time.Second), float64(objects)/time.Since(start).Seconds())
	start = time.Now()
	if err := fillAudit(ctx, store, auditRows, fx); err != nil {
		return nil, err
	}
	fx.AuditRows = auditRows
	fmt.Printf("  audit written in %s\n", time.Since(start).Round(time.Second))
	if keep == "" {
		return fx, nil
	}
	b, err := json.Marshal(fx)
	if err != nil {
		return nil, err
	}
	return fx, os.WriteFile(keep+".json", b, 0o600)
}

// loadFixture returns the fixture kept beside a kept database, or nil when
// there is none to reuse.
func loadFixture(path, keep string) (*readsFixture, error) {
	if keep == "" {
		return nil, nil
	}
	b, err := os.ReadFile(keep + ".json")
	if errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(path); err == nil {
			return nil, fmt.Errorf("%s exists without its fixture %s.json: remove it to fill it afresh", path, keep)
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var fx readsFixture
	if err := json.Unmarshal(b, &fx); err != nil {
		return nil, fmt.Errorf("%s.json: %w", keep, err)
	}
	return &fx, nil
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

type countingWriter struct {
	header http.Header
	code   int
	n      int
	tail   []byte // the last KiB, for cursors
}

func (w *countingWriter) Header() http.Header  { return w.header }
func (w *countingWriter) WriteHeader(code int) { w.code = code }
func (w *countingWriter) Write(p []byte) (int, error) {
	w.tail = append(w.tail, p[max(0, len(p)-1<<10):]...)
	w.tail = w.tail[max(0, len(w.tail)-1<<10):]
	w.n += len(p)
	return len(p), nil
}

var nextRe = regexp.MustCompile(`"next":\s*"?([0-9A-Za-z_=-]+)"?`)

// auditCursor follows /audit's cursor pages times.
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

type syncedIngest struct{}

func (syncedIngest) Synced() bool                         { return true }
func (syncedIngest) Resources() []kubehttp.ResourceStatus { return nil }

// fillMirror writes objects through ingestion's list path: namespaces of
// Zipf-distributed sizes; Deployments → ReplicaSets → Pods, ConfigMaps and
// Secrets owned by ConfigMaps in chains up to 6 deep; 5 % of the owned
// objects dangling (their owner's UID matches nothing); one tree of
// treeSize objects; stuckObjects being deleted, held by a finalizer.
func fillMirror(ctx context.Context, store *db.DB, objects, treeSize int) (*readsFixture, error) {
	r := rand.New(rand.NewPCG(1, 1))
	fx := &readsFixture{}
	type res struct {
		db.Resource
		id    int64
		epoch int64
		page  []*db.Object
	}
	mk := func(group, version, resource, kind string, namespaced bool) *res {
		return &res{Resource: db.Resource{Group: group, Version: version, Resource: resource, Kind: kind, Namespaced: namespaced}}
	}
	nss, deps, rss, pods := mk("", "v1", "namespaces", "Namespace", false), mk("apps", "v1", "deployments", "Deployment", true),
		mk("apps", "v1", "replicasets", "ReplicaSet", true), mk("", "v1", "pods", "Pod", true)
	cms, secrets := mk("", "v1", "configmaps", "ConfigMap", true), mk("", "v1", "secrets", "Secret", true)
	all := []*res{nss, deps, rss, pods, cms, secrets}
	for _, rs := range all {
		var err error
		if rs.id, err = store.Mirror().EnsureResource(ctx, rs.Resource); err != nil {
			return nil, err
		}
		if rs.epoch, err = store.Mirror().BeginList(ctx, rs.id); err != nil {
			return nil, err
		}
	}
	add := func(rs *res, o *db.Object) error {
		if rs.page = append(rs.page, o); len(rs.page) == 500 {
			if err := store.Mirror().WriteListPage(ctx, rs.id, rs.epoch, rs.page); err != nil {
				return err
			}
			rs.page = rs.page[:0]
		}
		return nil
	}
	created := time.Now().Add(-48 * time.Hour)
	uid := 0
	obj := func(rs *res, ns, name string, owner *db.Object) *db.Object {
		uid++
		apiVersion := rs.Version
		if rs.Group != "" {
			apiVersion = rs.Group + "/" + rs.Version
		}
		o := &db.Object{UID: fmt.Sprintf("%08x-0000-4000-8000-%012x", r.Uint32(), uid), APIVersion: apiVersion, Kind: rs.Kind,
			Namespace: ns, Name: name, ResourceVersion: fmt.Sprint(uid), CreationTimestamp: &created}
		if owner != nil {
			yes := true
			ref := api.OwnerRef{APIVersion: owner.APIVersion, Kind: owner.Kind, Name: owner.Name, UID: owner.UID, Controller: &yes, BlockOwnerDeletion: &yes}
			if r.IntN(20) == 0 {
				ref.UID = fmt.Sprintf("gone-%d", uid) // dangling
			}
			o.OwnerReferences = []api.OwnerRef{ref}
		}
		return o
	}
	const namespaces = 1000
	nsNames := make([]string, namespaces)
	for i := range nsNames {
		nsNames[i] = fmt.Sprintf("team-%04d", i)
		if err := add(nss, obj(nss, "", nsNames[i], nil)); err != nil {
			return nil, err
		}
	}
	zipf := rand.NewZipf(r, 1.2, 1, namespaces-1)
	sample := func(o *db.Object) {
		if r.IntN(1000) == 0 {
			fx.Objects = append(fx.Objects, o.UID)
		}
	}
	// The tree: one ConfigMap owning 99 owning 100 each (≈ treeSize).
	root := obj(cms, "tree", "root", nil)
	fx.TreeRoot = root.UID
	if err := add(cms, root); err != nil {
		return nil, err
	}
	made := 1
	for i := 0; made < treeSize; i++ {
		mid := obj(cms, "tree", fmt.Sprint("mid-", i), root)
		mid.OwnerReferences[0].UID = root.UID
		if err := add(cms, mid); err != nil {
			return nil, err
		}
		made++
		for j := 0; j < 100 && made < treeSize; j++ {
			leaf := obj(cms, "tree", fmt.Sprintf("leaf-%d-%d", i, j), mid)
			leaf.OwnerReferences[0].UID = mid.UID
			if err := add(cms, leaf); err != nil {
				return nil, err
			}
			made++
		}
	}
	deleting := time.Now().Add(-time.Hour)
	stuck := 0
	for made < objects-namespaces {
		ns := nsNames[zipf.Uint64()]
		switch k := r.IntN(10); {
		case k < 5: // a Deployment, a ReplicaSet, 1–8 Pods
			d := obj(deps, ns, fmt.Sprint("web-", made), nil)
			rs := obj(rss, ns, d.Name+"-5d4f", d)
			if err := add(deps, d); err != nil {
				return nil, err
			}
			if err := add(rss, rs); err != nil {
				return nil, err
			}
			made += 2
			for p := range 1 + r.IntN(8) {
				pod := obj(pods, ns, fmt.Sprintf("%s-%d", rs.Name, p), rs)
				if stuck < stuckObjects && r.IntN(50) == 0 {
					pod.DeletionTimestamp, pod.Finalizers = &deleting, []string{"example.com/hold"}
					stuck++
				}
				pod.Pod = &db.Pod{Phase: "Running", NodeName: fmt.Sprint("node-", r.IntN(2000))}
				sample(pod)
				if err := add(pods, pod); err != nil {
					return nil, err
				}
				made++
			}
		default: // a chain of ConfigMaps and Secrets, 1–6 deep
			var owner *db.Object
			for depth := range 1 + r.IntN(6) {
				rs := cms
				if r.IntN(3) == 0 {
					rs = secrets
				}
				o := obj(rs, ns, fmt.Sprintf("cfg-%d-%d", made, depth), owner)
				sample(o)
				if rs == cms && r.IntN(20) == 0 {
					fx.Names = append(fx.Names, ns+"/"+o.Name)
				}
				if err := add(rs, o); err != nil {
					return nil, err
				}
				owner = o
				made++
			}
		}
	}
	for _, rs := range all {
		if len(rs.page) > 0 {
			if err := store.Mirror().WriteListPage(ctx, rs.id, rs.epoch, rs.page); err != nil {
				return nil, err
			}
		}
		if _, err := store.Mirror().FinishList(ctx, rs.id, rs.epoch, "1"); err != nil {
			return nil, err
		}
	}
	for _, rs := range all {
		fx.Kinds = append(fx.Kinds, rs.Kind)
	}
	return fx, nil
}

// fillAudit writes rows through the ledger's batch insert: 30 days of
// decisions of the four controllers, most applied, some failed, and 10,000
// pending decisions.
func fillAudit(ctx context.Context, store *db.DB, rows int, fx *readsFixture) error {
	r := rand.New(rand.NewPCG(2, 2))
	controllers := []string{"ownergc", "podgc", "ttl", "svgc"}
	outcomes := []string{api.OutcomeApplied, api.OutcomeApplied, api.OutcomeApplied, api.OutcomeApplied, api.OutcomeDryRun,
		api.OutcomeNotFound, api.OutcomeFailed, api.OutcomeConflict}
	start := time.Now().Add(-30 * 24 * time.Hour)
	step := 30 * 24 * time.Hour / time.Duration(max(rows, 1))
	var batch []*db.AuditEntry
	for i := range rows {
		target := api.Target{APIVersion: "v1", Kind: fx.Kinds[r.IntN(len(fx.Kinds))], Namespace: fmt.Sprintf("team-%04d", r.IntN(1000)),
			Name: fmt.Sprint("obj-", i), UID: fmt.Sprintf("audit-%d", i)}
		if r.IntN(100) == 0 && len(fx.Objects) > 0 {
			target.UID = fx.Objects[r.IntN(len(fx.Objects))]
		}
		batch = append(batch, &db.AuditEntry{Time: start.Add(time.Duration(i) * step), Instance: "bench",
			Controller: controllers[r.IntN(len(controllers))], Rule: fmt.Sprintf("BR-21-%02d", 1+r.IntN(8)), Action: "delete",
			Target: target, Reason: "its owner is gone", Outcome: outcomes[r.IntN(len(outcomes))]})
		if len(batch) == 1000 {
			if err := store.Ledger().InsertAudits(ctx, batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		if err := store.Ledger().InsertAudits(ctx, batch); err != nil {
			return err
		}
	}
	for i := range 10_000 {
		if _, err := store.Ledger().UpsertPending(ctx, &db.Pending{Controller: "ownergc", Rule: "BR-21-03", Action: "delete",
			Reason: "its owner is gone", Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "team-0001",
				Name: fmt.Sprint("p-", i), UID: fmt.Sprint("pending-", i)}}); err != nil {
			return err
		}
	}
	return nil
}
