package auditsink

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/db/dbtest"
	kubehttp "github.com/kubegcd/kubegcd/internal/http"
	"github.com/kubegcd/kubegcd/internal/testutil"
)

// readLines returns the lines of the files at paths, in order.
func readLines(t *testing.T, paths ...string) []string {
	t.Helper()
	var out []string
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			out = append(out, sc.Text())
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// ids reads the id of each line.
func ids(t *testing.T, lines []string) []int64 {
	t.Helper()
	out := make([]int64, len(lines))
	for i, l := range lines {
		var e struct{ ID int64 }
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("line %d is not JSON: %v: %.80s", i, err, l)
		}
		out[i] = e.ID
	}
	return out
}

func oneTo(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i + 1)
	}
	return out
}

// The file rotates at --audit-log-maxsize and keeps --audit-log-maxbackup
// rotated files, as kube-apiserver's does: lumberjack's own rotation.
func TestLogRotatesAtMaxSizeKeepingMaxBackups(t *testing.T) {
	d := dbtest.Open(t)
	// 300 rows of 20 KB: about 6 MB, six files of 1 MB.
	insertRows(t, d, "cm", 300, 20<<10)
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	o, reg := opts(d)
	l := NewLog(LogConfig{Path: path, MaxSizeMB: 1, MaxBackups: 2}, nil, o)
	stop := testutil.Start(t, l.Run)
	testutil.WaitFor(t, 30*time.Second, "300 rows written", func() bool {
		return metric(t, reg, "rows_sent_total", BackendLog) == 300
	})
	stop()
	// lumberjack removes the backups past MaxBackups in a goroutine of its
	// own, after the rotation.
	var files []string
	testutil.Eventually(t, 10*time.Second, func() error {
		files = testutil.FilesIn(t, dir)
		if len(files) != 3 {
			return fmt.Errorf("files %v, want audit.log and 2 backups", files)
		}
		return nil
	})
	var backups []string
	for _, f := range files {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > 1<<20 {
			t.Errorf("%s has %d bytes, more than --audit-log-maxsize 1 MB", f, fi.Size())
		}
		if f != "audit.log" {
			if !strings.HasPrefix(f, "audit-") || !strings.HasSuffix(f, ".log") {
				t.Errorf("backup %s is not named as lumberjack names them", f)
			}
			backups = append(backups, filepath.Join(dir, f))
		}
	}
	// The newest rows are kept, in order, up to the last.
	got := ids(t, readLines(t, append(backups, path)...))
	if len(got) == 0 || got[len(got)-1] != 300 {
		t.Fatalf("the kept files end at row %v, want 300", got[len(got)-1:])
	}
	if diff := cmp.Diff(oneTo(300)[300-len(got):], got); diff != "" {
		t.Errorf("rows of the kept files (-want +got):\n%s", diff)
	}
}

// Each line is the row's AuditEntry, byte for byte what GET /audit
// answers for it, every field of the API's type set.
func TestLogLinesAreTheAPIsAuditEntries(t *testing.T) {
	ctx := context.Background()
	d := dbtest.Open(t)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	rows := []*db.AuditEntry{
		{Time: t0, Instance: "host_0a1b2c3d", Controller: api.ControllerOwnerGC, Rule: "BR-21-01",
			Action: api.ActionDelete, Target: api.Target{APIVersion: "apps/v1", Kind: "ReplicaSet",
				Namespace: "web", Name: "web-<1>&", UID: "3f1c2d4e-0000-4000-8000-000000000001"},
			Facts: json.RawMessage(`{"owners":[{"uid":"gone","class":"dangling"}]}`), Reason: "every owner is gone",
			DryRun: true, Outcome: api.OutcomeFailed, Error: `conflict: "x" <y>`},
		{Time: t0.Add(time.Second), Instance: "host_0a1b2c3d", Controller: api.ControllerKubegcd,
			Action: api.ActionPause, Reason: "blast-radius cap", Outcome: api.OutcomeApplied},
	}
	if err := d.Ledger().InsertAudits(ctx, rows); err != nil {
		t.Fatal(err)
	}
	var out testutil.SyncBuffer
	o, reg := opts(d)
	l := NewLog(LogConfig{Path: "-"}, &out, o)
	stop := testutil.Start(t, l.Run)
	testutil.WaitFor(t, 10*time.Second, "2 rows written", func() bool {
		return metric(t, reg, "rows_sent_total", BackendLog) == 2
	})
	stop()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")

	// GET /audit of the API server, over the same database.
	h, err := kubehttp.NewHandler(kubehttp.Options{DB: d.Reads(), Logger: slog.New(slog.DiscardHandler),
		Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/audit", nil)
	req.Host = "127.0.0.1"
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /audit: %d %s", rec.Code, rec.Body)
	}
	var list struct{ Items []json.RawMessage }
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := len(list.Items) - 1; i >= 0; i-- { // /audit lists the newest first
		want = append(want, string(list.Items[i]))
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("log lines against GET /audit's items (-want +got):\n%s", diff)
	}

	// The first row sets every field of api.AuditEntry: a field added to
	// the API but not to db.AuditEntry.API shows here as a zero.
	var first api.AuditEntry
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	v := reflect.ValueOf(first)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Errorf("field %s of the first line is empty; the test row sets it", v.Type().Field(i).Name)
		}
	}
}

// A restart resumes after the saved cursor: a clean stop ships nothing
// again, and a stop between a write and its cursor's save ships only that
// page again.
func TestLogResumesAfterRestart(t *testing.T) {
	d := dbtest.Open(t)
	path := filepath.Join(t.TempDir(), "audit.log")
	src := &savesFail{Source: d.Decisions()}
	run := func(want float64) {
		t.Helper()
		o, reg := opts(d)
		o.Source, o.PageSize = src, 10
		l := NewLog(LogConfig{Path: path, MaxSizeMB: 100}, nil, o)
		stop := testutil.Start(t, l.Run)
		testutil.WaitFor(t, 10*time.Second, fmt.Sprintf("%v rows written", want), func() bool {
			return metric(t, reg, "rows_sent_total", BackendLog) == want
		})
		stop()
	}
	insertRows(t, d, "a", 25, 0)
	run(25)
	insertRows(t, d, "b", 5, 0)
	run(5) // a clean restart: only the new rows
	if diff := cmp.Diff(oneTo(30), ids(t, readLines(t, path))); diff != "" {
		t.Fatalf("after a clean restart (-want +got):\n%s", diff)
	}

	// The cursor cannot be saved: as if kubegcd died after each write.
	src.set(true)
	insertRows(t, d, "c", 7, 0)
	run(7)
	src.set(false)
	insertRows(t, d, "d", 3, 0)
	run(10) // the 7 rows whose cursor was lost, again, and the 3 new ones
	want := append(oneTo(37), oneTo(40)[30:]...)
	if diff := cmp.Diff(want, ids(t, readLines(t, path))); diff != "" {
		t.Errorf("after a restart that lost its last save (-want +got):\n%s", diff)
	}
}

// A log path whose directory is missing is refused at start, in a line.
func TestCheckPath(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, want string
	}{
		{path: "-"},
		{path: filepath.Join(dir, "audit.log")},
		{path: filepath.Join(dir, "missing", "audit.log"), want: "its directory " + dir + "/missing must exist"},
		{path: filepath.Join(file, "audit.log"), want: file + " must be a directory"},
	} {
		err := CheckPath(tc.path)
		if got := fmt.Sprint(err); (tc.want == "" && err != nil) || (tc.want != "" && got != tc.want) {
			t.Errorf("CheckPath(%s) = %v, want %q", tc.path, err, tc.want)
		}
	}
}
