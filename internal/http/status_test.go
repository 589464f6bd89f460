package http

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegcd/kubegcd/internal/db"
)

type statusIngest struct{}

func (statusIngest) Synced() bool { return false }
func (statusIngest) Resources() []ResourceStatus {
	return []ResourceStatus{
		{Resource: db.Resource{ID: 1, Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}, Synced: true},
		{Resource: db.Resource{ID: 2, Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespaced: true}},
	}
}

type statusApplier struct{}

func (statusApplier) Status() EnforcementStatus {
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return EnforcementStatus{DryRun: true, Paused: true, PausedBy: []string{"audit-store", "blast-radius"}, PausedSince: &since,
		PausedReason: "why", MaxDeletionsPerMinute: 60, WritesLastMinute: 7, BlastRadiusResume: "manual", AuditBacklog: 3}
}

// TestStatusJSONUnchanged compares /status with testdata/status.json, the
// output of the same state when the server still showed ingest's and
// reconcile's own types: owning its types changed no field name or value.
func TestStatusJSONUnchanged(t *testing.T) {
	store, err := db.Open(context.Background(), filepath.Join(t.TempDir(), "kubegcd.db"), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	h, err := NewHandler(Options{DB: store, Ingest: statusIngest{}, Applier: statusApplier{}, Version: "v9",
		StartedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Registry: prometheus.NewRegistry(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "status.json"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	_, got := get(t, srv, "/status")
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("/status (-want +got):\n%s", diff)
	}
}
