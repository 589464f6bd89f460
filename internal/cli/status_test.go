package cli

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestStatusControllers: status prints every controller /status lists,
// with the queue and last item of those that work from a queue, and
// <none> for those that do not.
func TestStatusControllers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"version": "v-test", "synced": true, "objects": 3, "resources": [], "controllers": [
			{"name": "ownergc", "lastPass": null, "skipping": true, "skipReason": "mirror-not-synced", "skippedPasses": 3, "queueDepth": 7},
			{"name": "podgc", "lastPass": null, "skipping": false, "skippedPasses": 0},
			{"name": "svgc", "lastPass": null, "skipping": false, "skippedPasses": 0, "queueDepth": 0},
			{"name": "ttl", "lastPass": null, "skipping": false, "skippedPasses": 0}]}`)
	}))
	defer srv.Close()
	code, stdout, stderr := runCLI(t, map[string]string{envServer: srv.URL}, "status")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range [][]string{
		{"NAME", "LAST", "PASS", "SKIPPING", "SKIPPED", "PASSES", "QUEUE", "LAST", "WORK"},
		{"ownergc", "<never>", "yes:", "mirror-not-synced", "3", "7", "<never>"},
		{"podgc", "<never>", "no", "0", "<none>", "<none>"},
		{"svgc", "<never>", "no", "0", "0", "<never>"},
		{"ttl", "<never>", "no", "0", "<none>", "<none>"},
	} {
		found := false
		for _, line := range strings.Split(stdout, "\n") {
			if strings.Join(strings.Fields(line), " ") == strings.Join(want, " ") {
				found = true
			}
		}
		if !found {
			t.Errorf("status lacks the line %q:\n%s", strings.Join(want, " "), stdout)
		}
	}
}
