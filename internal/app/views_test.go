package app

import (
	"errors"
	"fmt"
	"testing"

	kubehttp "github.com/kubegcd/kubegcd/internal/http"
	"github.com/kubegcd/kubegcd/internal/reconcile"
)

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
