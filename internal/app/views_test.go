package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	kubehttp "github.com/kubegcd/kubegcd/internal/http"
	"github.com/kubegcd/kubegcd/internal/reconcile"
)

// TestEnforcementStatusJSON proves /status shows the applier's state as
// reconcile.Status would: every field converted, the same JSON.
func TestEnforcementStatusJSON(t *testing.T) {
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st := reconcile.Status{DryRun: true, Paused: true, PausedBy: []string{"audit-store"}, PausedSince: &since,
		PausedReason: "why", MaxDeletionsPerMinute: 60, WritesLastMinute: 7, BlastRadiusResume: "manual", AuditBacklog: 3}
	// A field added to one type and not the other fails here, before a
	// value silently goes missing from /status.
	if a, b := reflect.TypeOf(st).NumField(), reflect.TypeOf(kubehttp.EnforcementStatus{}).NumField(); a != b {
		t.Fatalf("reconcile.Status has %d fields, kubehttp.EnforcementStatus %d", a, b)
	}
	for _, s := range []reconcile.Status{st, {BlastRadiusResume: "auto"}} {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(enforcementStatus(s))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("enforcement JSON (-want +got):\n%s", diff)
		}
	}
}

func TestReleaseError(t *testing.T) {
	notHeld := fmt.Errorf("%w: nothing is paused by the blast-radius cap", reconcile.ErrNotHeld)
	ledger := fmt.Errorf("%w: disk full", reconcile.ErrLedgerUnavailable)
	other := errors.New("boom")
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"nothing held", notHeld, kubehttp.ErrNotHeld},
		{"ledger unavailable", ledger, kubehttp.ErrLedgerUnavailable},
		{"other", other, nil},
		{"none", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := releaseError(tc.err)
			if tc.err == nil {
				if got != nil {
					t.Fatalf("releaseError(nil) = %v", got)
				}
				return
			}
			if !errors.Is(got, tc.err) || got.Error() != tc.err.Error() {
				t.Errorf("releaseError lost the cause: %v", got)
			}
			if tc.want != nil && !errors.Is(got, tc.want) {
				t.Errorf("releaseError(%v) is not %v", tc.err, tc.want)
			}
			for _, s := range []error{kubehttp.ErrNotHeld, kubehttp.ErrLedgerUnavailable} {
				if s != tc.want && errors.Is(got, s) {
					t.Errorf("releaseError(%v) is also %v", tc.err, s)
				}
			}
		})
	}
}
