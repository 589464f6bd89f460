package auditsink

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/testutil"
)

// insertRows writes n audit rows to d, their UIDs prefix-0 … prefix-(n-1),
// each with facts of factBytes bytes (at least a small object).
func insertRows(t *testing.T, d *db.DB, prefix string, n, factBytes int) {
	t.Helper()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	entries := make([]*db.AuditEntry, n)
	for i := range entries {
		facts, _ := json.Marshal(map[string]string{"pad": strings.Repeat("x", factBytes)})
		entries[i] = &db.AuditEntry{Time: t0.Add(time.Duration(i) * time.Millisecond), Instance: "host_0a1b2c3d",
			Controller: api.ControllerOwnerGC, Rule: "BR-21-01", Action: api.ActionDelete,
			Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns",
				Name: fmt.Sprintf("%s-%d", prefix, i), UID: fmt.Sprintf("%s-%d", prefix, i)},
			Facts: facts, Reason: "every owner is gone", Outcome: api.OutcomeApplied}
	}
	if err := d.Ledger().InsertAudits(context.Background(), entries); err != nil {
		t.Fatal(err)
	}
}

// opts are the options of a test's sink: quick polls, its own registry.
func opts(d *db.DB) (Options, *prometheus.Registry) {
	reg := prometheus.NewRegistry()
	return Options{Source: d.Decisions(), Metrics: NewMetrics(reg), PollPeriod: 10 * time.Millisecond}, reg
}

// metric is the value of kubegcd_audit_sink_<name> of backend (and reason).
func metric(t *testing.T, reg *prometheus.Registry, name, backend string, reason ...string) float64 {
	t.Helper()
	labels := []string{"backend", backend}
	if len(reason) > 0 {
		labels = append(labels, "reason", reason[0])
	}
	return testutil.Metric(t, reg, "kubegcd_audit_sink_"+name, labels...)
}

// savesFail is a Source whose cursor saves fail while fail is set: a
// crash between a write and its cursor's save.
type savesFail struct {
	Source
	mu   sync.Mutex
	fail bool
}

func (s *savesFail) set(fail bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = fail
}

func (s *savesFail) SaveSinkCursor(ctx context.Context, sink string, lastID int64, now time.Time) error {
	s.mu.Lock()
	fail := s.fail
	s.mu.Unlock()
	if fail {
		return fmt.Errorf("saving is off")
	}
	return s.Source.SaveSinkCursor(ctx, sink, lastID, now)
}
