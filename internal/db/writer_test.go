package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/testutil"
)

// holdWriter occupies the writer with a write that waits until the
// returned function is called, so that the writes queued meanwhile are
// committed together, as one group, in the order queued.
func holdWriter(t *testing.T, d *DB) (release func()) {
	t.Helper()
	started, hold, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- d.inWriteTx(context.Background(), writeOp{name: "hold"}, func(*sql.Tx) error {
			close(started)
			<-hold
			return nil
		})
	}()
	<-started
	return func() {
		close(hold)
		if err := <-done; err != nil {
			t.Errorf("holding write: %v", err)
		}
	}
}

// queueWrite queues fn behind the held writer; its result arrives on the
// returned channel.
func queueWrite(d *DB, op string, fn func(*sql.Tx) error) chan error {
	done := make(chan error, 1)
	d.inWriteTxAsync(writeOp{name: op}, 0, fn, func(err error) { done <- err })
	return done
}

func insertResource(name string, runs *int) func(*sql.Tx) error {
	return func(tx *sql.Tx) error {
		*runs++
		_, err := tx.Exec(`INSERT INTO resources (api_group, version, resource, kind, namespaced, synced)
			VALUES ('example.com', 'v1', ?, ?, 1, 0)`, name, strings.ToUpper(name))
		return err
	}
}

func resourceNames(t *testing.T, d *DB) []string {
	t.Helper()
	return testutil.StringRows(t, d.read, `SELECT resource FROM resources WHERE api_group = 'example.com' ORDER BY resource`)
}

func recv(t *testing.T, c chan error) error {
	t.Helper()
	select {
	case err := <-c:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("a queued write never finished")
		return nil
	}
}

// A group commit runs its writes without savepoints; a write that fails
// rolls the group back, and the others are run again and committed
// without it: its own changes, made before it failed, are not.
func TestGroupCommitDropsOnlyTheFailingWrite(t *testing.T) {
	for _, tc := range []struct {
		name    string
		failing bool
		// runs of the write before the failing one
		wantRunsA int
	}{
		{"no write fails: one pass", false, 1},
		{"the second write fails: the one before runs again", true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := openTemp(t)
			ctx := context.Background()
			if _, err := d.Ledger().UpsertPending(ctx, &Pending{Controller: "ownergc", Rule: "r", Action: "delete", Reason: "x",
				Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "applied", UID: "applied"}}); err != nil {
				t.Fatal(err)
			}
			release := holdWriter(t, d)
			var runsA, runsB, runsC int
			a := queueWrite(d, "a", insertResource("a", &runsA))
			// An applied decision's row, queued between them: a replay
			// must write it once and tell its caller once.
			applied := make(chan error, 2)
			writeApplied(d, func(_ int, err error) { applied <- err }, auditEntry("ownergc", "delete", "applied", api.OutcomeApplied, time.Time{}))
			boom := errors.New("boom")
			b := queueWrite(d, "b", func(tx *sql.Tx) error {
				if err := insertResource("b", &runsB)(tx); err != nil || !tc.failing {
					return err
				}
				return boom
			})
			c := queueWrite(d, "c", insertResource("c", &runsC))
			release()

			if err := recv(t, a); err != nil {
				t.Errorf("write a: %v", err)
			}
			errB := recv(t, b)
			if tc.failing && !errors.Is(errB, boom) {
				t.Errorf("write b: %v, want boom", errB)
			}
			if !tc.failing && errB != nil {
				t.Errorf("write b: %v", errB)
			}
			if err := recv(t, c); err != nil {
				t.Errorf("write c: %v", err)
			}
			if err := recv(t, applied); err != nil {
				t.Errorf("applied row: %v", err)
			}
			select {
			case err := <-applied:
				t.Errorf("the applied row's caller heard twice (%v)", err)
			default:
			}
			want := []string{"a", "b", "c"}
			if tc.failing {
				want = []string{"a", "c"}
			}
			if got := resourceNames(t, d); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("resources committed %v, want %v", got, want)
			}
			if runsA != tc.wantRunsA || runsB != 1 || runsC != 1 {
				t.Errorf("runs a=%d b=%d c=%d, want %d, 1, 1", runsA, runsB, runsC, tc.wantRunsA)
			}
			rows, _, err := d.Decisions().ListAudit(ctx, AuditFilter{})
			if err != nil || len(rows) != 1 {
				t.Errorf("audit rows %+v (%v), want the applied one once", rows, err)
			}
			if pending, _, err := d.Decisions().ListPending(ctx, PendingFilter{}); err != nil || len(pending) != 0 {
				t.Errorf("pending %+v (%v), want the applied decision settled", pending, err)
			}
		})
	}
}

// Applied rows queued together are written in one request without
// savepoints; one the database refuses fails alone: the others are
// written once, each caller hears once, and a settled decision leaves
// pending. So too when another write of the group failed first and the
// group is replayed before the applied rows ran.
func TestAppliedRowsFailAlone(t *testing.T) {
	for _, earlierFails := range []bool{false, true} {
		t.Run(fmt.Sprintf("earlier write fails=%v", earlierFails), func(t *testing.T) {
			d := openTemp(t)
			ctx := context.Background()
			if _, err := d.write.Exec(`CREATE TRIGGER refuse BEFORE INSERT ON audit WHEN NEW.name = 'bad'
				BEGIN SELECT RAISE(ABORT, 'refused'); END`); err != nil {
				t.Fatal(err)
			}
			for _, uid := range []string{"good1", "bad", "good2"} {
				if _, err := d.Ledger().UpsertPending(ctx, &Pending{Controller: "ownergc", Rule: "r", Action: "delete", Reason: "x",
					Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: uid, UID: uid}}); err != nil {
					t.Fatal(err)
				}
			}
			release := holdWriter(t, d)
			var runs int
			first := queueWrite(d, "first", func(tx *sql.Tx) error {
				if err := insertResource("first", &runs)(tx); err != nil || !earlierFails {
					return err
				}
				return errors.New("boom")
			})
			// Three rows in one request, as the applier queues them.
			heard := map[string]chan error{}
			uids := []string{"good1", "bad", "good2"}
			var entries []*AuditEntry
			for _, uid := range uids {
				heard[uid] = make(chan error, 2)
				entries = append(entries, auditEntry("ownergc", "delete", uid, api.OutcomeApplied, time.Time{}))
			}
			writeApplied(d, func(i int, err error) { heard[uids[i]] <- err }, entries...)
			release()
			if err := recv(t, first); (err != nil) != earlierFails {
				t.Errorf("first write: %v", err)
			}
			for uid, c := range heard {
				err := recv(t, c)
				if (err != nil) != (uid == "bad") {
					t.Errorf("%s: caller heard %v", uid, err)
				}
				select {
				case err := <-c:
					t.Errorf("%s: caller heard twice (%v)", uid, err)
				default:
				}
			}
			rows, _, err := d.Decisions().ListAudit(ctx, AuditFilter{})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, r := range rows {
				names = append(names, r.Target.Name)
			}
			sort.Strings(names)
			if strings.Join(names, ",") != "good1,good2" {
				t.Errorf("audit rows %v, want good1 and good2 once each", names)
			}
			pending, _, err := d.Decisions().ListPending(ctx, PendingFilter{})
			if err != nil || len(pending) != 1 || pending[0].Target.UID != "bad" {
				t.Errorf("pending %+v (%v), want only bad's", pending, err)
			}
		})
	}
}

// Every write on the collectors' and the watches' hot paths runs a
// statement prepared once (writeQueries), not prepared again in each
// transaction: preparing costs SQLite more than running the statement.
func TestHotWritesArePrepared(t *testing.T) {
	ctx := context.Background()
	d, rid := openConfigMaps(t)
	now := time.Now()
	cm := configMap
	epoch, err := d.Mirror().BeginList(ctx, rid)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Mirror().WriteListPage(ctx, rid, epoch, []*Object{cm("owner"), cm("a", "owner"), cm("b", "owner")}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Mirror().FinishList(ctx, rid, epoch, "1"); err != nil {
		t.Fatal(err)
	}
	before := d.unpreparedWrites.Load()
	deleting := cm("c", "owner")
	deleting.DeletionTimestamp = &now
	if _, err := d.Mirror().ApplyWatchEvents(ctx, rid, "2", []Event{{ResourceID: rid, Object: cm("a", "owner", "b")},
		{ResourceID: rid, Object: deleting}, {ResourceID: rid, Deleted: true, Object: cm("owner")}}); err != nil {
		t.Fatal(err)
	}
	target := api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "a", UID: "a"}
	if _, err := d.Ledger().UpsertPending(ctx, &Pending{Controller: "ownergc", Rule: "r", Action: "delete", Reason: "x", Target: target}); err != nil {
		t.Fatal(err)
	}
	in := &Intent{Entry: AuditEntry{Instance: "i", Controller: "ownergc", Rule: "r", Action: "delete", Target: target}, ResourceVersion: "1"}
	if err := d.Ledger().InsertIntent(ctx, in); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	row := in.Entry
	row.Outcome = api.OutcomeApplied
	writeApplied(d, func(_ int, err error) { done <- err }, &row)
	if err := recv(t, done); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Mirror().ApplyWatchEvents(ctx, rid, "3", []Event{{ResourceID: rid, Deleted: true, Object: cm("a", "owner", "b")}}); err != nil {
		t.Fatal(err)
	}
	if n := d.unpreparedWrites.Load() - before; n != 0 {
		t.Errorf("%d write statements prepared in their transaction; add them to writeQueries", n)
	}
}

// TestAsyncWriteNeverWaitsForRoom: with the writer busy and its queue
// full, an asynchronous write returns at once, and is still committed
// once the writer catches up.
func TestAsyncWriteNeverWaitsForRoom(t *testing.T) {
	d := openTemp(t)
	release := holdWriter(t, d)
	var waiting []chan error
	for len(d.writes) < cap(d.writes) {
		done := make(chan error, 1)
		go func() {
			done <- d.inWriteTx(context.Background(), writeOp{name: "fill"}, func(*sql.Tx) error { return nil })
		}()
		waiting = append(waiting, done)
		for deadline := time.Now().Add(5 * time.Second); len(d.writes) < min(len(waiting), cap(d.writes)); {
			if time.Now().After(deadline) {
				t.Fatalf("the writer's queue holds %d of %d writes", len(d.writes), len(waiting))
			}
			time.Sleep(time.Millisecond)
		}
	}
	runs := 0
	returned, result := make(chan struct{}), make(chan error, 1)
	go func() {
		d.inWriteTxAsync(writeOp{name: "async"}, 0, insertResource("async", &runs), func(err error) { result <- err })
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		release()
		t.Fatal("inWriteTxAsync waited for room in the writer's full queue")
	}
	release()
	for _, w := range waiting {
		if err := <-w; err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-result:
		if err != nil || runs == 0 {
			t.Fatalf("the asynchronous write: %v, ran %d times", err, runs)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the asynchronous write was never committed")
	}
	if got := resourceNames(t, d); !slices.Contains(got, "async") {
		t.Fatalf("resources %v, want async among them", got)
	}
}

// TestUncheckedWritesRunApart: a write of an unchecked op runs with
// foreign keys off, in a transaction of its own kind, and the writes of
// its group around it still check them and cascade.
func TestUncheckedWritesRunApart(t *testing.T) {
	d := openTemp(t)
	ctx := context.Background()
	if err := d.inWriteTx(ctx, opResource, func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO resources (id, api_group, version, resource, kind, namespaced)
			VALUES (1, '', 'v1', 'configmaps', 'ConfigMap', 1);
			INSERT INTO objects (uid, resource_id, api_version, kind, namespace, name, resource_version)
			VALUES ('cm', 1, 'v1', 'ConfigMap', 'ns', 'cm', '1');
			INSERT INTO object_labels (uid, key, value) VALUES ('cm', 'app', 'a')`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// A label of an object the mirror does not hold: only a write that
	// checks no foreign key can add it. Every write uses the one statement
	// the writer prepared at start: SQLite must compile it again when the
	// pragma changes.
	if _, ok := d.writeStmts.lookup(sqlAddLabel); !ok {
		t.Fatal("the writer has not prepared the statement that adds a label")
	}
	orphan := func(key string) func(*sql.Tx) error {
		return func(tx *sql.Tx) error {
			st, err := d.txStmt(ctx, tx, sqlAddLabel)
			if err == nil {
				_, err = st.ExecContext(ctx, "gone", key, "")
			}
			return err
		}
	}
	queue := func(op writeOp, fn func(*sql.Tx) error) chan error {
		done := make(chan error, 1)
		d.inWriteTxAsync(op, 0, fn, func(err error) { done <- err })
		return done
	}
	release := holdWriter(t, d)
	first := queue(opFirstFill, orphan("first"))
	checked := queue(opList, orphan("checked"))
	drop := queue(opEvents, func(tx *sql.Tx) error {
		_, err := tx.Exec(`DELETE FROM objects WHERE uid = 'cm'`)
		return err
	})
	last := queue(opFirstFill, orphan("last"))
	release()
	for name, c := range map[string]chan error{"first": first, "drop": drop, "last": last} {
		if err := recv(t, c); err != nil {
			t.Errorf("the %s write: %v", name, err)
		}
	}
	if err := recv(t, checked); err == nil || !strings.Contains(err.Error(), "FOREIGN KEY") {
		t.Errorf("a checked write of an orphan label: %v, want a foreign key error", err)
	}
	keys := testutil.StringRows(t, d.read, `SELECT uid || '/' || key FROM object_labels ORDER BY 1`)
	// The object's own label went with it, by the cascade.
	if want := "gone/first,gone/last"; strings.Join(keys, ",") != want {
		t.Errorf("labels %v, want %s", keys, want)
	}
	// The check TestFirstFillEqualsUpsertPath relies on sees them.
	var broken int
	if err := d.read.QueryRow(`SELECT count(*) FROM pragma_foreign_key_check`).Scan(&broken); err != nil || broken != 2 {
		t.Errorf("foreign_key_check found %d rows (%v), want the 2 orphans", broken, err)
	}
}

// TestFailedFirstFillWriteLeavesNoRow: the inserts of a first fill use OR
// FAIL, which keeps the rows a failing statement wrote before its error
// (SQLite then needs no statement journal). The writer must still drop
// them: a failing write, alone or in a group, leaves none of its rows.
func TestFailedFirstFillWriteLeavesNoRow(t *testing.T) {
	d := openTemp(t)
	ctx := context.Background()
	refRow := func(uid, name string) []any {
		var n any = name
		if name == "" {
			n = nil // NOT NULL fails on this row
		}
		return []any{uid, "", "ConfigMap", "ns", n, "spec.volumes[].configMap", false, false}
	}
	write := func(rows ...[]any) func(*sql.Tx) error {
		return func(tx *sql.Tx) error { return addRefs.exec(ctx, d.core, tx, slices.Concat(rows...)) }
	}
	queue := func(fn func(*sql.Tx) error) chan error {
		done := make(chan error, 1)
		d.inWriteTxAsync(opFirstFill, 0, fn, func(err error) { done <- err })
		return done
	}
	// Unchecked writes may name referrers the mirror does not hold.
	release := holdWriter(t, d)
	failing := queue(write(refRow("a", "kept-by-or-fail"), refRow("a", ""), refRow("a", "never")))
	other := queue(write(refRow("b", "one"), refRow("b", "two")))
	release()
	if err := recv(t, failing); err == nil || !strings.Contains(err.Error(), "NOT NULL") {
		t.Errorf("a write with a NULL name: %v, want a NOT NULL error", err)
	}
	if err := recv(t, other); err != nil {
		t.Errorf("the other write of the group: %v", err)
	}
	if err := recv(t, queue(write(refRow("c", "first"), refRow("c", "")))); err == nil {
		t.Error("a lone write with a NULL name succeeded")
	}
	rows := testutil.StringRows(t, d.read, `SELECT referrer_uid || '/' || target_name FROM refs ORDER BY 1`)
	if want := "b/one,b/two"; strings.Join(rows, ",") != want {
		t.Errorf("refs %v, want %s", rows, want)
	}
}

// TestReplayableWritesCommitLazily: a group of writes that only mirror the
// cluster commits without syncing the WAL (synchronous=NORMAL, 1). A group
// with any other write commits with FULL (2), which syncs the mirror's
// writes before it too. Each write reads the level its transaction runs at.
func TestReplayableWritesCommitLazily(t *testing.T) {
	d := openTemp(t)
	ctx := context.Background()
	tests := []struct {
		name string
		ops  []writeOp
		want int
	}{
		{"watch events alone", []writeOp{opEvents, opEvents}, 1},
		{"an intent with watch events", []writeOp{opEvents, opIntent, opEvents}, 2},
		{"list pages and events", []writeOp{opList, opEvents}, 1},
		{"an audit row alone", []writeOp{opAudit}, 2},
		{"a first fill page", []writeOp{opFirstFill}, 1},
		{"a resource's row", []writeOp{opResource}, 2},
		{"the history's pruning after events", []writeOp{opEvents, opHistory}, 2},
	}
	for _, tt := range tests {
		release := holdWriter(t, d)
		levels := make([]int, len(tt.ops))
		done := make([]chan error, len(tt.ops))
		for i, op := range tt.ops {
			done[i] = make(chan error, 1)
			d.inWriteTxAsync(op, 0, func(tx *sql.Tx) error {
				return tx.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&levels[i])
			}, func(err error) { done[i] <- err })
		}
		release()
		for i := range tt.ops {
			if err := recv(t, done[i]); err != nil {
				t.Fatalf("%s: write %d: %v", tt.name, i, err)
			}
			if levels[i] != tt.want {
				t.Errorf("%s: write %d (%s) ran at synchronous=%d, want %d", tt.name, i, tt.ops[i].name, levels[i],
					tt.want)
			}
		}
	}
}
