package http

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/db/dbtest"
)

// The daemon serves the API from a *db.DB.
var _ Store = db.Reads{}

// failingStore is a Store whose audit history cannot be read: ListAudit
// returns err, or with err nil waits for the request to end. Any other read
// panics, except DeletedCopiesSize: its metric reads one row, through DB.
type failingStore struct {
	Store
	err error
}

func (f failingStore) DeletedCopiesSize(context.Context) (int, int64, error) { return 0, 0, nil }

func (f failingStore) ListAudit(ctx context.Context, _ db.AuditFilter) ([]db.AuditEntry, int64, error) {
	if f.err == nil {
		<-ctx.Done()
		return nil, 0, ctx.Err()
	}
	return nil, 0, f.err
}

// TestStoreErrors checks what a client gets when a read fails: a 500 that
// keeps the database's error to the log, or a 503 when the read outlasted
// the request's time.
func TestStoreErrors(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		code      int
		wantError string
	}{
		{"read fails", errors.New("disk I/O error on audit_by_time"), http.StatusInternalServerError, "internal error"},
		{"read outlasts the request", nil, http.StatusServiceUnavailable, "request timed out"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			h, err := NewHandler(Options{DB: failingStore{err: tc.err}, Ingest: fakeIngest{}, Registry: prometheus.NewRegistry(),
				RequestTimeout: 50 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1/audit", nil))
			if rec.Code != tc.code {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.code, rec.Body)
			}
			var e errorJSON
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
				t.Fatalf("body %s: %v", rec.Body, err)
			}
			if e.Error != tc.wantError {
				t.Errorf("error %q, want %q", e.Error, tc.wantError)
			}
			if tc.err != nil && !strings.Contains(logs.String(), tc.err.Error()) {
				t.Errorf("the log lacks the database's error:\n%s", logs.String())
			}
		})
	}
}

// The metrics that scan the whole mirror read MetricsDB when it is set,
// never DB: in the daemon DB's connections map the file, and a scan
// through them would keep every page resident.
func TestMetricsReadTheirOwnStore(t *testing.T) {
	metrics := dbtest.Open(t)
	rid, err := metrics.Mirror().EnsureResource(context.Background(), db.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap",
		Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := metrics.Mirror().ApplyEvents(context.Background(), []db.Event{{ResourceID: rid, Object: &db.Object{UID: "cm",
		APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "cm", ResourceVersion: "1"}}}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	// failingStore panics on any read but ListAudit.
	if _, err := NewHandler(Options{DB: failingStore{}, MetricsDB: metrics.Objects(), Ingest: fakeIngest{}, Registry: reg}); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range families {
		names = append(names, f.GetName())
	}
	for _, want := range []string{"kubegcd_objects", "kubegcd_ownerref_findings", "kubegcd_namespaces_terminating", "kubegcd_leases"} {
		if !slices.Contains(names, want) {
			t.Errorf("no %s among %q", want, names)
		}
	}
}
