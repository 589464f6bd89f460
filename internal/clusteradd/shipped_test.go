package clusteradd

import (
	"bytes"
	"os"
	"testing"
)

// TestShippedCopies: what the binary embeds is what deploy/ ships, and what
// the end-to-end RBAC test (TestShippedRBAC) runs kubegcd under.
func TestShippedCopies(t *testing.T) {
	for file, embedded := range map[string][]byte{"clusterrole.yaml": shippedRBAC, "kubegcd.conf": shippedConf} {
		shipped, err := os.ReadFile("../../deploy/" + file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(shipped, embedded) {
			t.Errorf("internal/clusteradd/%s is not deploy/%s: run go generate ./internal/clusteradd", file, file)
		}
	}
}
