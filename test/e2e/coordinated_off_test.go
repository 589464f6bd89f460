package e2e

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestCoordinatedElectionRefused: on this suite's control plane, without
// the CoordinatedLeaderElection gate and LeaseCandidates, kubegcd run
// --leader-elect-coordinated refuses at start: exit 1, its last line
// naming the gate and the runtime-config it needs, before it ran for any
// Lease. Without leader election to coordinate, the flag is a usage error.
func TestCoordinatedElectionRefused(t *testing.T) {
	t.Parallel()
	ns := namespaces.New(t, "coordinated-off")
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     []string // the words of the last line of stderr
	}{
		{"no gate, no LeaseCandidates", []string{"--dry-run=false", "--leader-elect-coordinated"}, 1,
			[]string{"kubegcd: --leader-elect-coordinated: the API server does not serve leasecandidates.coordination.k8s.io/v1beta1",
				"CoordinatedLeaderElection", "--feature-gates=CoordinatedLeaderElection=true", "--runtime-config=coordination.k8s.io/v1beta1=true"}},
		{"dry-run", []string{"--leader-elect-coordinated"}, 2,
			[]string{"kubegcd: invalid --leader-elect-coordinated: dry-run runs no leader election", "add --dry-run=false"}},
		{"no leader election", []string{"--dry-run=false", "--leader-elect=false", "--leader-elect-coordinated"}, 2,
			[]string{"kubegcd: invalid --leader-elect-coordinated: it needs leader election, which --leader-elect=false turns off"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			// svgc alone, and no Lease of another test's: nothing else could
			// be written even if the refusal failed.
			args := append([]string{"run", "--kubeconfig", cluster.Kubeconfig, "--db", filepath.Join(dir, "kubegcd.db"),
				"--listen", freeAddr(t), "--controllers=svgc", "--leader-elect-namespace=" + ns}, tc.args...)
			cmd := exec.CommandContext(ctx, kubegcdBin, args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			started := time.Now()
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != tc.wantCode {
				t.Fatalf("kubegcd run %s: %v, want exit %d; stderr:\n%s", strings.Join(tc.args, " "), err, tc.wantCode, tail(stderr.String(), 20))
			}
			lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
			last := lines[len(lines)-1]
			for _, w := range tc.want {
				if !strings.Contains(last, w) {
					t.Errorf("last line %q does not say %q", last, w)
				}
			}
			t.Logf("refused after %s: %s", time.Since(started).Round(time.Millisecond), last)
			// Refused before it ran for the Lease: in coordinated election
			// kubegcd never creates it, and it never stood as a candidate.
			if _, err := kube.CoordinationV1().Leases(ns).Get(ctx, "kubegcd", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("the Lease %s/kubegcd: %v, want none", ns, err)
			}
		})
	}
}
