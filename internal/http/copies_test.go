package http

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/db/dbtest"
)

type fakeRestorer struct {
	res         *api.RestoreResult
	err         error
	uid, by     string
	allowEmpty  bool
	restoreRuns int
}

func (f *fakeRestorer) Restore(_ context.Context, uid, by string, allowEmptySecret bool) (*api.RestoreResult, error) {
	f.uid, f.by, f.allowEmpty = uid, by, allowEmptySecret
	f.restoreRuns++
	return f.res, f.err
}

func TestRestoreEndpoint(t *testing.T) {
	made := &api.RestoreResult{Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: "c", UID: "new"},
		DeletedUID: "old"}
	tests := []struct {
		name        string
		notLoopback bool
		contentType string
		body        string
		res         *api.RestoreResult
		err         error
		code        int
		wantError   string
		wantAllow   bool
	}{
		{name: "restored", contentType: "application/json", res: made, code: 201},
		{name: "an empty Secret asked for", contentType: "application/json", body: `{"allowEmptySecret": true}`, res: made,
			code: 201, wantAllow: true},
		{name: "no authentication off loopback", notLoopback: true, contentType: "application/json", code: 403,
			wantError: "needs the API's authentication"},
		{name: "not JSON, as a browser posts across origins", contentType: "text/plain", code: 415,
			wantError: "Content-Type: application/json"},
		{name: "unknown field", contentType: "application/json", body: `{"force": true}`, code: 400, wantError: "invalid body"},
		{name: "no copy", contentType: "application/json", code: 404, err: fmt.Errorf("%w: no copy of uid old", ErrNoCopy),
			wantError: "only the instance that deleted an object keeps its copy"},
		{name: "refused", contentType: "application/json", code: 409,
			err: fmt.Errorf("%w: ConfigMap a/c exists (uid x)", ErrRestoreRefused), wantError: "ConfigMap a/c exists (uid x)"},
		{name: "made, not recorded", contentType: "application/json", res: made, err: errors.New("disk full"), code: 201},
		{name: "other failure is not leaked", contentType: "application/json", err: errors.New("secret detail"), code: 500,
			wantError: "internal error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs := &fakeRestorer{res: tc.res, err: tc.err}
			h, err := NewHandler(Options{Ingest: fakeIngest{}, Registry: prometheus.NewRegistry(), Restorer: rs,
				Loopback: !tc.notLoopback, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/objects/old/restore", strings.NewReader(tc.body))
			if tc.contentType != "" {
				r.Header.Set("Content-Type", tc.contentType)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.code {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.code, w.Body)
			}
			if tc.code == 201 {
				var got api.RestoreResult
				if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || got.Target.UID != "new" {
					t.Errorf("answer %s (%v), want the restored target", w.Body, err)
				}
				if (tc.err != nil) != strings.Contains(got.Warning, "disk full") {
					t.Errorf("warning %q for error %v", got.Warning, tc.err)
				}
				if rs.uid != "old" || rs.by == "" || rs.allowEmpty != tc.wantAllow {
					t.Errorf("restored uid %q by %q allowEmpty %v", rs.uid, rs.by, rs.allowEmpty)
				}
				return
			}
			var e errorJSON
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || !strings.Contains(e.Error, tc.wantError) {
				t.Errorf("error %s, want it to name %q", w.Body, tc.wantError)
			}
			if tc.code < 404 && rs.restoreRuns > 0 {
				t.Error("a refused request restored")
			}
		})
	}
}

func TestDeletedCopiesEndpoints(t *testing.T) {
	store := dbtest.Open(t)
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i, name := range []string{"a", "b", "c"} {
		err := store.Copies().PutDeletedCopy(ctx, &db.DeletedCopy{
			Target:   api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: name, UID: "u-" + name},
			Resource: "configmaps", Controller: api.ControllerOwnerGC, TakenAt: t0.Add(time.Duration(i) * time.Minute),
			Object: []byte(`{"kind":"ConfigMap","metadata":{"name":"` + name + `"}}`)})
		if err != nil {
			t.Fatal(err)
		}
	}
	h, err := NewHandler(Options{DB: store.Reads(), Ingest: fakeIngest{}, Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string, code int, v any) {
		t.Helper()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil))
		if w.Code != code {
			t.Fatalf("GET %s: %d, want %d: %s", path, w.Code, code, w.Body)
		}
		if err := json.Unmarshal(w.Body.Bytes(), v); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	path := "/deleted-copies?kind=configmaps&limit=2"
	for range 3 {
		var page api.DeletedCopyList
		get(path, 200, &page)
		for _, c := range page.Items {
			names = append(names, c.Target.Name)
		}
		if page.Next == "" {
			break
		}
		path = "/deleted-copies?kind=configmaps&limit=2&cursor=" + page.Next
	}
	if strings.Join(names, ",") != "c,b,a" {
		t.Errorf("listed %v, want c, b, a: newest first, over pages", names)
	}
	var none api.DeletedCopyList
	get("/deleted-copies?kind=Secret", 200, &none)
	if none.Items == nil || len(none.Items) != 0 {
		t.Errorf("Secrets' copies %+v, want []", none)
	}
	var one api.DeletedCopyDetail
	get("/deleted-copies/u-b", 200, &one)
	if one.Copy.Target.Name != "b" || !strings.Contains(string(one.Object), `"name":"b"`) {
		t.Errorf("copy %+v, want b with its object", one)
	}
	var e errorJSON
	get("/deleted-copies/ghost", 404, &e)
	get("/deleted-copies?cursor=nope", 400, &e)
	if !strings.Contains(e.Error, "invalid cursor") {
		t.Errorf("bad cursor: %q", e.Error)
	}
}

// fakeCopySizes answers DeletedCopiesSize; the collector reads nothing
// else of Copies.
type fakeCopySizes struct {
	Copies
	n     int
	bytes int64
	err   error
}

func (f fakeCopySizes) DeletedCopiesSize(context.Context) (int, int64, error) {
	return f.n, f.bytes, f.err
}

func TestCopiesCollector(t *testing.T) {
	c := newCopiesCollector(fakeCopySizes{n: 3, bytes: 4096}, 1<<30)
	want := `
# HELP kubegcd_deleted_copies Copies of deleted objects kept for a restore (see GET /deleted-copies).
# TYPE kubegcd_deleted_copies gauge
kubegcd_deleted_copies 3
# HELP kubegcd_deleted_copies_bytes Compressed bytes of the copies of deleted objects. A new copy that would pass kubegcd_deleted_copies_max_bytes drops the oldest first.
# TYPE kubegcd_deleted_copies_bytes gauge
kubegcd_deleted_copies_bytes 4096
# HELP kubegcd_deleted_copies_max_bytes The most the copies of deleted objects may take, compressed (--deleted-copies-max-bytes; 0: no bound).
# TYPE kubegcd_deleted_copies_max_bytes gauge
kubegcd_deleted_copies_max_bytes 1.073741824e+09
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
	// A database that cannot be read fails the scrape of the copies'
	// figures, and says why.
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(newCopiesCollector(fakeCopySizes{err: errors.New("database is locked")}, 0))
	if _, err := reg.Gather(); err == nil || !strings.Contains(err.Error(), "database is locked") {
		t.Errorf("gather with a failing database: %v, want its error", err)
	}
}
