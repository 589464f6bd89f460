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

// TestStatusElection: under coordinated leader election, status adds one
// line: the strategy, the candidates with their versions, and a preferred
// holder when the API server named one.
func TestStatusElection(t *testing.T) {
	tests := []struct {
		name, election string
		want           string // "": no Election line
	}{
		{"not coordinated", `{"enabled": true, "leader": true, "identity": "a_1"}`, ""},
		{"coordinated", `{"enabled": true, "leader": false, "identity": "b_2", "holder": "a_1", "coordinated": true,
			"strategy": "OldestEmulationVersion", "candidates": [
			{"name": "a_1", "binaryVersion": "0.1.0", "emulationVersion": "0.1.0", "strategy": "OldestEmulationVersion", "renewTime": null},
			{"name": "b_2", "binaryVersion": "0.2.0", "emulationVersion": "0.2.0", "strategy": "OldestEmulationVersion", "renewTime": null, "self": true}]}`,
			"Election:    coordinated by the API server, strategy OldestEmulationVersion; candidates: a_1 (0.1.0), b_2 (0.2.0, this instance)"},
		{"a preferred holder, no candidate mirrored yet", `{"enabled": true, "leader": true, "identity": "b_2", "coordinated": true,
			"strategy": "OldestEmulationVersion", "preferredHolder": "a_1"}`,
			"Election:    coordinated by the API server, strategy OldestEmulationVersion; candidates: <none>; preferred holder: a_1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"version": "v-test", "synced": true, "objects": 3, "resources": [], "controllers": [], "leaderElection": %s}`, tc.election)
			}))
			defer srv.Close()
			code, stdout, stderr := runCLI(t, map[string]string{envServer: srv.URL}, "status")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var got string
			for _, line := range strings.Split(stdout, "\n") {
				if strings.HasPrefix(line, "Election:") {
					got = line
				}
			}
			if got != tc.want {
				t.Errorf("Election line %q, want %q:\n%s", got, tc.want, stdout)
			}
		})
	}
}
