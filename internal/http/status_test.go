package http

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/db/dbtest"
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

func (statusApplier) Status() api.EnforcementStatus {
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return api.EnforcementStatus{DryRun: true, Paused: true, PausedBy: []string{"audit-store", "blast-radius"}, PausedSince: &since,
		PausedReason: "why", MaxDeletionsPerMinute: 60, WritesLastMinute: 7, BlastRadiusResume: "manual", AuditBacklog: 3}
}

// TestStatusJSONUnchanged compares /status with testdata/status.json, the
// output of the same state when the server still showed ingest's and
// reconcile's own types: owning its types changed no field name or value.
func TestStatusJSONUnchanged(t *testing.T) {
	store := dbtest.Open(t)
	h, err := NewHandler(Options{DB: store.Reads(), Ingest: statusIngest{}, Applier: statusApplier{}, Version: "v9",
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
	// curl gets it indented, as before; a program, compact.
	for _, ua := range []string{"curl/8.5.0", "Go-http-client/1.1"} {
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/status", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("User-Agent", ua)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		want := want
		if !strings.HasPrefix(ua, "curl/") {
			var b bytes.Buffer
			if err := json.Compact(&b, want); err != nil {
				t.Fatal(err)
			}
			want = append(b.Bytes(), '\n')
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("/status for %s (-want +got):\n%s", ua, diff)
		}
	}
}

type failingDiscovery map[string]string

func (f failingDiscovery) DiscoveryFailures() map[string]string { return f }

// TestStatusDiscoveryFailures: /status names the API group/versions whose
// discovery fails, and says nothing of them when none does.
func TestStatusDiscoveryFailures(t *testing.T) {
	store := dbtest.Open(t)
	tests := []struct {
		name     string
		failures failingDiscovery
		want     map[string]string
	}{
		{"one group fails", failingDiscovery{"dead.example.com/v1": "the server is currently unable to handle the request"},
			map[string]string{"dead.example.com/v1": "the server is currently unable to handle the request"}},
		{"none fails", failingDiscovery{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := NewHandler(Options{DB: store.Reads(), Ingest: statusIngest{}, Discovery: tt.failures, Registry: prometheus.NewRegistry(),
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://localhost/status", nil))
			var got struct {
				DiscoveryFailures map[string]string `json:"discoveryFailures"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != http.StatusOK {
				t.Fatalf("%d %s: %v", rec.Code, rec.Body, err)
			}
			if diff := cmp.Diff(tt.want, got.DiscoveryFailures); diff != "" {
				t.Errorf("discoveryFailures (-want +got):\n%s", diff)
			}
		})
	}
}
