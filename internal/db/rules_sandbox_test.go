package db

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// openSandbox opens a database holding two ConfigMaps, one labelled, and
// a sandbox on it.
func openSandbox(t *testing.T, opts SandboxOptions) (*DB, *Sandbox) {
	t.Helper()
	d := openTemp(t)
	ctx := context.Background()
	for _, q := range []string{
		`INSERT INTO resources (id, api_group, version, resource, kind, namespaced) VALUES (1, '', 'v1', 'configmaps', 'ConfigMap', 1)`,
		`INSERT INTO objects (uid, resource_id, api_version, kind, namespace, name, resource_version, creation_timestamp)
			VALUES ('u1', 1, 'v1', 'ConfigMap', 'a', 'one', '1', '2026-01-01T00:00:00.000000Z'),
			       ('u2', 1, 'v1', 'ConfigMap', 'a', 'two', '1', '2026-01-02T00:00:00.000000Z')`,
		`INSERT INTO object_labels (uid, key, value) VALUES ('u1', 'app', 'x')`,
	} {
		if _, err := d.write.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	s, err := d.Rules().OpenSandbox(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return d, s
}

// TestSandboxRefuses tries each way out of the sandbox: each is refused
// with the reason, and a good rule run after it still runs.
func TestSandboxRefuses(t *testing.T) {
	d, s := openSandbox(t, SandboxOptions{TimeLimit: 300 * time.Millisecond, MaxRows: 1, MaxLength: 1000})
	ctx := context.Background()
	now := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name, query string
		params      map[string]any
		want        error
		wantText    string
	}{
		{"insert", `INSERT INTO objects (uid) VALUES ('x')`, nil, ErrRuleNotSelect, `"INSERT"`},
		{"insert after with", `WITH x AS (SELECT 1) INSERT INTO labels SELECT 'u1', 'k', 'v' FROM x`, nil, ErrRuleDenied, "writing to labels"},
		{"update", `UPDATE objects SET name = 'x'`, nil, ErrRuleNotSelect, `"UPDATE"`},
		{"delete", `DELETE FROM objects`, nil, ErrRuleNotSelect, `"DELETE"`},
		{"delete after with", `WITH x AS (SELECT 1) DELETE FROM main.objects`, nil, ErrRuleDenied, "writing to objects"},
		{"attach", `ATTACH DATABASE '/tmp/x.db' AS x`, nil, ErrRuleNotSelect, `"ATTACH"`},
		{"pragma", `PRAGMA query_only = 0`, nil, ErrRuleNotSelect, `"PRAGMA"`},
		{"pragma function", `SELECT name AS uid FROM pragma_table_info('objects')`, nil, ErrRuleDenied, "pragma_table_info"},
		{"create temp", `CREATE TEMP TABLE t (uid)`, nil, ErrRuleNotSelect, `"CREATE"`},
		{"vacuum into", `VACUUM INTO '/tmp/copy.db'`, nil, ErrRuleNotSelect, `"VACUUM"`},
		{"two statements", `SELECT uid FROM objects; DELETE FROM objects`, nil, ErrRuleNotOneStatement, "after the ';'"},
		{"two selects", "SELECT uid FROM objects;\nSELECT uid FROM labels", nil, ErrRuleNotOneStatement, "after the ';'"},
		{"main table", `SELECT uid FROM main.objects`, nil, ErrRuleDenied, "reading main.objects"},
		{"table without a view", `SELECT dependent_uid AS uid FROM owner_refs`, nil, ErrRuleDenied, "reading main.owner_refs"},
		{"table in a CTE", `WITH objects AS (SELECT * FROM main.objects) SELECT uid FROM objects`, nil, ErrRuleDenied, "reading main.objects"},
		{"schema", `SELECT name AS uid FROM sqlite_master`, nil, ErrRuleDenied, "sqlite_master"},
		{"temp schema", `SELECT name AS uid FROM temp.sqlite_master`, nil, ErrRuleDenied, "sqlite_temp_master"},
		{"denied function", `SELECT hex(randomblob(8)) AS uid`, nil, ErrRuleDenied, "function"},
		{"load_extension", `SELECT load_extension('x') AS uid`, nil, ErrRuleDenied, "load_extension"},
		{"json_each", `SELECT value AS uid FROM json_each('["u1"]')`, nil, ErrRuleDenied, "json_each"},
		{"time limit", `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT max(i) AS uid FROM n`, nil,
			ErrRuleTimeLimit, "longer than 300ms"},
		{"row cap", `SELECT uid FROM objects`, nil, ErrRuleRowCap, "more than 1 rows"},
		{"no uid", `SELECT name FROM objects`, nil, ErrRuleNoUID, "(name)"},
		{"unknown parameter", `SELECT uid FROM objects WHERE name = :who`, nil, ErrRuleParam, ":who"},
		{"positional parameter", `SELECT uid FROM objects WHERE name = ?`, nil, ErrRuleSyntax, "positional"},
		{"syntax", `SELECT uid FORM objects`, nil, ErrRuleSyntax, "syntax error"},
		{"unknown column", `SELECT nope AS uid FROM objects`, nil, ErrRuleSyntax, "no such column"},
		{"big string", `SELECT length(replace(printf('%.*c', 100, 'x'), 'x', printf('%.*c', 100, 'y'))) AS uid`, nil,
			ErrRuleSyntax, "too big"},
		{"big string by recursion", `WITH RECURSIVE r(s) AS (SELECT 'x' UNION ALL SELECT s || s FROM r) SELECT max(length(s)) AS uid FROM r`,
			nil, ErrRuleSyntax, "too big"},
		{"subquery named like a view", `SELECT uid FROM (SELECT uid FROM main.objects) AS objects`, nil, ErrRuleDenied, "reading main.objects"},
		{"empty", `-- nothing`, nil, ErrRuleSyntax, "empty"},
	}
	good := `SELECT o.uid, 'labelled ' || l.value AS reason FROM objects o JOIN labels l ON l.uid = o.uid WHERE l.key = :key`
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Query(ctx, tt.query, tt.params, now)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("Query: got %v, want %v with %q", err, tt.want, tt.wantText)
			}
			// What only running finds, preparing cannot.
			if tt.want != ErrRuleTimeLimit && tt.want != ErrRuleRowCap && !strings.HasPrefix(tt.name, "big string") {
				if _, err := s.Validate(ctx, tt.query, tt.params); !errors.Is(err, tt.want) {
					t.Errorf("Validate: got %v, want %v", err, tt.want)
				}
			}
			got, err := s.Query(ctx, good, map[string]any{"key": "app"}, now)
			if err != nil || len(got) != 1 || got[0] != (RuleMatch{UID: "u1", Reason: "labelled x"}) {
				t.Errorf("the good rule after it: %v, %v", got, err)
			}
		})
	}
	// Nothing was written.
	var n int
	if err := d.write.QueryRow(`SELECT count(*) FROM objects`).Scan(&n); err != nil || n != 2 {
		t.Errorf("objects: %d, %v; want 2", n, err)
	}
}

// TestSandboxReads: what a rule may do, it can: every view, CTEs,
// recursion, window functions, the rules' functions and :now.
func TestSandboxReads(t *testing.T) {
	_, s := openSandbox(t, SandboxOptions{})
	ctx := context.Background()
	now := time.Date(2026, 1, 22, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name, query string
		params      map[string]any
		want        []RuleMatch
	}{
		{"every view", `SELECT o.uid FROM objects o
			LEFT JOIN labels l ON l.uid = o.uid LEFT JOIN annotations a ON a.uid = o.uid
			LEFT JOIN refs r ON r.referrer_uid = o.uid LEFT JOIN last_referenced h ON h.target_name = o.name
			LEFT JOIN jobs j ON j.uid = o.uid LEFT JOIN cronjobs c ON c.uid = o.uid LEFT JOIN secrets s ON s.uid = o.uid
			LEFT JOIN pvcs p ON p.uid = o.uid LEFT JOIN workloads w ON w.uid = o.uid LEFT JOIN pods po ON po.uid = o.uid
			CROSS JOIN mirror m
			WHERE o.name = 'one' AND m.watched_since IS NULL AND o.owners = 0 AND NOT o.deleting AND o.api_group = ''`,
			nil, []RuleMatch{{UID: "u1"}}},
		{"cte and window", `WITH x AS (SELECT uid, row_number() OVER (ORDER BY name DESC) AS n FROM objects)
			SELECT uid, 'number ' || n AS reason FROM x WHERE n = 1`, nil, []RuleMatch{{UID: "u2", Reason: "number 1"}}},
		{"recursion", `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2)
			SELECT o.uid FROM objects o JOIN n ON o.name = CASE n.i WHEN 1 THEN 'one' ELSE 'two' END ORDER BY o.uid`, nil,
			[]RuleMatch{{UID: "u1"}, {UID: "u2"}}},
		{"functions and now", `SELECT uid, 1 AS finding, time_add(created_at, duration_seconds(:ttl)) AS reason FROM objects
			WHERE time_add(created_at, duration_seconds(:ttl)) <= :now AND parse_time('2026-01-01') < :now`,
			map[string]any{"ttl": "3w"}, []RuleMatch{{UID: "u1", Reason: "2026-01-22T00:00:00.000000Z", Finding: true}}},
		{"views in CTEs and subqueries", `WITH mine AS (SELECT * FROM objects WHERE name = 'one')
			SELECT uid FROM (SELECT o.uid FROM mine o JOIN labels l USING (uid)) AS labels`, nil, []RuleMatch{{UID: "u1"}}},
		{"params of each type", `SELECT uid FROM objects WHERE :n = 2 AND :f > 1.4 AND :b AND :s = 'x' AND :z IS NULL AND name = 'two'`,
			map[string]any{"n": 2, "f": 1.5, "b": true, "s": "x", "z": nil}, []RuleMatch{{UID: "u2"}}},
		{"one row per uid", `SELECT uid, name AS reason FROM objects UNION ALL SELECT uid, 'again' FROM objects ORDER BY 2`, nil,
			[]RuleMatch{{UID: "u1", Reason: "again"}, {UID: "u2", Reason: "again"}}},
		{"trailing semicolon and comment", "SELECT uid FROM objects WHERE name = 'one'; -- done", nil, []RuleMatch{{UID: "u1"}}},
		{"semicolon in a string", `SELECT uid FROM objects WHERE name != ';' AND name = 'one' /* ; */`, nil, []RuleMatch{{UID: "u1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := s.Validate(ctx, tt.query, tt.params); err != nil {
				t.Errorf("Validate: %v", err)
			}
			got, err := s.Query(ctx, tt.query, tt.params, now)
			if err != nil {
				t.Fatalf("Query: %v", err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSandboxColumns(t *testing.T) {
	_, s := openSandbox(t, SandboxOptions{})
	got, err := s.Validate(context.Background(), `SELECT uid AS UID, 'x' AS Reason FROM objects`, nil)
	if err != nil || got != (RuleColumns{Reason: true}) {
		t.Errorf("Validate: %+v, %v", got, err)
	}
}

// TestSandboxBelowTheLexer: statements the lexer would stop never reach
// SQLite through Query; sent to a sandbox connection straight, the
// authorizer and query_only refuse them still.
func TestSandboxBelowTheLexer(t *testing.T) {
	d, s := openSandbox(t, SandboxOptions{})
	ctx := context.Background()
	for _, q := range []string{
		`INSERT INTO labels (uid, key, value) VALUES ('u2', 'k', 'v')`,
		`DELETE FROM main.objects`,
		`UPDATE main.objects SET name = 'x'`,
		`PRAGMA query_only = 0`,
		`ATTACH DATABASE ':memory:' AS x`,
		`CREATE TEMP TABLE t (x)`,
		`DROP VIEW objects`,
		`BEGIN IMMEDIATE`,
	} {
		if _, err := s.pool.ExecContext(ctx, q); err == nil {
			t.Errorf("%s: ran in the sandbox", q)
		}
	}
	var n int
	if err := d.write.QueryRow(`SELECT count(*) FROM objects`).Scan(&n); err != nil || n != 2 {
		t.Errorf("objects: %d, %v; want 2", n, err)
	}
	if got, err := s.Query(ctx, `SELECT uid FROM objects`, nil, time.Now()); err != nil || len(got) != 2 {
		t.Errorf("the views after it: %v, %v", got, err)
	}
}
