package http

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"modernc.org/sqlite"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

// planRequests are the API reads whose statements TestQueryPlans checks:
// every endpoint, with each filter it takes.
var planRequests = []string{
	"/status", "/overview", "/metrics", "/leases", "/leases?namespace=kube-node-lease&expired=true",
	"/pending", "/pending?order=newest&limit=2", "/pending?controller=ownergc&namespace=a&kind=configmaps",
	"/pending?limit=1&cursor=CURSOR:/pending?limit=1",
	"/audit", "/audit?controller=ownergc", "/audit?namespace=a", "/audit?uid=uid-B", "/audit?kind=ConfigMap",
	"/audit?rule=BR-21-03", "/audit?outcome=applied", "/audit?outcome=failed", "/audit?since=2026-01-01T00:00:00Z&until=2027-01-01T00:00:00Z",
	"/audit?limit=1&cursor=CURSOR:/audit?limit=1",
	"/graph", "/graph?limit=2", "/graph?format=dot&limit=2", "/graph?namespace=a", "/graph?uid=uid-B", "/graph?uid=uid-A&uid=uid-E", "/graph?format=dot&namespace=a",
	"/graph?uid=uid-B&at=2026-06-01T00:00:00Z",
	"/objects?kind=cm&name=A&namespace=a", "/objects?kind=configmaps", "/objects?kind=ConfigMap&apiVersion=v1&name=B",
	"/objects?kind=deployments.apps&name=web",
	"/objects/uid-A", "/objects/uid-B", "/objects/uid-D", "/objects/uid-G", "/objects/uid-gone",
	"/objects/uid-A/cascade", "/objects/uid-A/cascade?propagation=foreground", "/objects/uid-A/cascade?propagation=orphan",
	"/objects/uid-B/history", "/lint", "/lint?namespace=a&severity=warning", "/lint?rule=KG-LINT-01",
	"/stuck", "/stuck?minAge=0", "/stuck?namespace=a&kind=configmaps&minAge=0",
	"/rules", "/rules/unused-configmaps/matches", "/rules/unused-configmaps/matches?namespace=a&kind=configmaps",
	"/rules/unused-configmaps/matches?limit=1&cursor=CURSOR:/rules/unused-configmaps/matches?limit=1",
}

// bigTables grow with the cluster or its history: a read that scans one
// whole, with no index, is slow at a million rows.
var bigTables = map[string]bool{"objects": true, "owner_refs": true, "audit": true, "pending": true,
	"object_history": true, "history_owner_refs": true, "pods": true, "nodes": true, "leases": true, "namespaces": true,
	"refs": true, "ref_history": true, "rule_matches": true}

// fullScans are the whole-table scans the API makes on purpose, each with
// why: a statement matching one of them may scan the table named.
var fullScans = []struct {
	query, table, why string
}{
	{"FROM audit ORDER BY id DESC LIMIT ?", "audit", "newest first in rowid order: reads one page"},
	{"FROM audit WHERE outcome = ? AND NOT outcome NOT IN ('applied', 'dry-run', 'skipped') ORDER BY id DESC LIMIT ?", "audit",
		"a common outcome (applied, dry-run, skipped): most rows have one, so a walk back finds a page at once; a rare one uses audit_rare_outcomes"},
	{"SELECT controller, count(*) FROM pending GROUP BY controller", "pending", "the overview counts every pending decision"},
	{"SELECT uid FROM (SELECT dependent_uid AS uid FROM owner_refs UNION SELECT owner_uid FROM owner_refs) ORDER BY uid LIMIT 2 OFFSET ?",
		"owner_refs", "the whole graph's cut: its limit-th UID, in the order of owner_refs' key and owner index"},
	{"FROM (SELECT dependent_uid AS uid FROM owner_refs UNION SELECT owner_uid FROM owner_refs) k", "owner_refs",
		"the whole graph's nodes, streamed in UID order"},
	{"FROM owner_refs ORDER BY dependent_uid, position", "owner_refs", "the whole graph's edges, streamed in key order"},
}

// TestQueryPlans runs every API read against a database whose driver
// records each statement, then asks SQLite for each statement's plan: a
// scan of a big table without an index fails, unless fullScans explains
// it. A query added without its index fails here rather than at a million
// rows.
func TestQueryPlans(t *testing.T) {
	_, store := testServer(t)
	ctx := context.Background()
	for _, name := range []string{"G", "E", "L"} {
		target := api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: name, UID: "uid-" + name}
		if _, err := store.Ledger().UpsertPending(ctx, &db.Pending{Controller: "ownergc", Rule: "BR-21-03", Action: "delete",
			Reason: "test", Target: target}); err != nil {
			t.Fatal(err)
		}
		if err := store.Ledger().InsertAudit(ctx, &db.AuditEntry{Controller: "ownergc", Rule: "BR-21-03", Action: "delete",
			Target: target, Reason: "test", Outcome: api.OutcomeApplied}); err != nil {
			t.Fatal(err)
		}
	}
	tracer := registerTracer()
	traced, err := db.Open(ctx, store.Path, db.Options{ReadOnly: true, Driver: tracer.name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { traced.Close() })
	storeMatches(t, store, "unused-configmaps", "uid-A", "uid-B")
	h, err := NewHandler(Options{DB: traced.Reads(), Ingest: fakeIngest{}, Registry: prometheus.NewRegistry(),
		Rules: sandboxRules{list: testRuleList()}})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range planRequests {
		if before, after, ok := strings.Cut(path, "CURSOR:"); ok {
			path = before + nextCursor(t, h, after)
		}
		req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK && rec.Code != http.StatusNotFound {
			t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
		}
	}
	queries := tracer.queries()
	if len(queries) < 30 {
		t.Fatalf("only %d statements seen: is the tracing driver in the path?", len(queries))
	}

	conn, err := sql.Open("sqlite", store.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	used := map[int]bool{}
	for _, q := range queries {
		plan, err := explain(conn, q)
		if err != nil {
			t.Errorf("EXPLAIN QUERY PLAN %s: %v", q, err)
			continue
		}
		for _, table := range scannedTables(plan) {
			i := slices.IndexFunc(fullScans, func(f struct{ query, table, why string }) bool {
				return f.table == table && strings.Contains(q, f.query)
			})
			if i < 0 {
				t.Errorf("a full scan of %s, with no index:\n%s\nplan:\n%s", table, q, strings.Join(plan, "\n"))
				continue
			}
			used[i] = true
		}
	}
	for i, f := range fullScans {
		if !used[i] {
			t.Errorf("fullScans[%d] (%s in %q) matched no statement: remove it", i, f.table, f.query)
		}
	}
}

// scanRe matches a plan step that reads a whole table: "SCAN t" or "SCAN t
// AS x", not "SCAN t USING INDEX" (an index's order, bounded by a LIMIT or
// a range) nor "SEARCH".
var scanRe = regexp.MustCompile(`^SCAN (\w+)(?: AS \w+)?$`)

func scannedTables(plan []string) []string {
	var out []string
	for _, step := range plan {
		if m := scanRe.FindStringSubmatch(strings.TrimSpace(step)); m != nil && bigTables[m[1]] {
			out = append(out, m[1])
		}
	}
	return out
}

// explain returns the plan steps of q, its parameters bound to NULL (a plan
// does not depend on them without sqlite_stat1).
func explain(pool *sql.DB, q string) ([]string, error) {
	ctx := context.Background() //nolint:usetesting // also outside a test
	conn, err := pool.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	var plan []string
	err = conn.Raw(func(dc any) error {
		st, err := dc.(driver.ConnPrepareContext).PrepareContext(ctx, "EXPLAIN QUERY PLAN "+q)
		if err != nil {
			return err
		}
		defer st.Close()
		// More NULLs than any statement has parameters: the driver binds
		// those it has, by ordinal.
		args := make([]driver.NamedValue, 100)
		for i := range args {
			args[i] = driver.NamedValue{Ordinal: i + 1}
		}
		rows, err := st.(driver.StmtQueryContext).QueryContext(ctx, args)
		if err != nil {
			return err
		}
		defer rows.Close()
		vals := make([]driver.Value, len(rows.Columns()))
		for {
			if err := rows.Next(vals); err == io.EOF {
				return nil
			} else if err != nil {
				return err
			}
			plan = append(plan, fmt.Sprint(vals[len(vals)-1]))
		}
	})
	return plan, err
}

func nextCursor(t *testing.T, h http.Handler, path string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	m := regexp.MustCompile(`"next":"([^"]+)"`).FindStringSubmatch(rec.Body.String())
	if m == nil {
		t.Fatalf("GET %s: no next cursor in %s", path, rec.Body)
	}
	return m[1]
}

// tracer is a database/sql driver that wraps modernc's and records the
// text of every statement prepared.
type tracer struct {
	name string
	mu   sync.Mutex
	seen map[string]bool
}

var (
	tracerOnce sync.Once
	theTracer  = &tracer{name: "sqlite-plan-test", seen: map[string]bool{}}
)

func registerTracer() *tracer {
	tracerOnce.Do(func() { sql.Register(theTracer.name, theTracer) })
	return theTracer
}

func (tr *tracer) queries() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var out []string
	for q := range tr.seen {
		out = append(out, q)
	}
	slices.Sort(out)
	return out
}

func (tr *tracer) record(q string) {
	q = strings.TrimSpace(q)
	upper := strings.ToUpper(q)
	if strings.HasPrefix(upper, "PRAGMA") || strings.HasPrefix(upper, "BEGIN") || strings.HasPrefix(upper, "COMMIT") ||
		strings.HasPrefix(upper, "ROLLBACK") {
		return
	}
	tr.mu.Lock()
	tr.seen[q] = true
	tr.mu.Unlock()
}

func (tr *tracer) Open(name string) (driver.Conn, error) {
	c, err := (&sqlite.Driver{}).Open(name)
	if err != nil {
		return nil, err
	}
	return &tracedConn{Conn: c, tr: tr}, nil
}

// tracedConn offers database/sql no QueryerContext, so that every
// statement goes through PrepareContext, where it is recorded.
type tracedConn struct {
	driver.Conn
	tr *tracer
}

func (c *tracedConn) Prepare(q string) (driver.Stmt, error) {
	c.tr.record(q)
	return c.Conn.Prepare(q)
}

func (c *tracedConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	c.tr.record(q)
	return c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, q)
}

func (c *tracedConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}
