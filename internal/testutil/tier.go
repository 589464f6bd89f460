package testutil

import "testing"

// NeedsControlPlane marks a test that runs etcd and kube-apiserver. Under
// -short (make test-unit) it skips the test, saying which tier runs it;
// make test runs every test, so nothing is skipped there.
func NeedsControlPlane(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a control plane (etcd, kube-apiserver from bin/): run by make test and make test-e2e, not by -short")
	}
}
