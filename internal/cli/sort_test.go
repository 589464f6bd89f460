package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// unsorted are objects in the order a server may list them: by age, or by
// whatever its query found first.
var unsorted = [][3]string{ // namespace, kind, name
	{"shop", "Pod", "web-2"}, {"", "Node", "node-b"}, {"batch", "Pod", "job-1"}, {"shop", "ConfigMap", "web"},
	{"shop", "Pod", "web-1"}, {"", "Node", "node-a"}, {"batch", "ConfigMap", "job"},
}

// sortedRows are unsorted's rows as a table lists them: by namespace (the
// cluster's objects first), then kind, then name.
var sortedRows = []string{"Node node-a", "Node node-b", "batch ConfigMap job", "batch Pod job-1", "shop ConfigMap web",
	"shop Pod web-1", "shop Pod web-2"}

// TestListsSorted: the tables of get pending, stuck and lint list their
// rows by namespace, then kind, then name, in whatever order the API
// answered; -o json keeps the API's order. get audit keeps the API's
// order, newest first: it is a history.
func TestListsSorted(t *testing.T) {
	now := time.Now().UTC()
	target := func(o [3]string) string {
		return fmt.Sprintf(`{"apiVersion": "v1", "kind": %q, "namespace": %q, "name": %q, "uid": "u-%s"}`, o[1], o[0], o[2], o[2])
	}
	var pending, stuck, lint, audit []string
	for i, o := range unsorted {
		since := now.Add(-time.Duration(len(unsorted)-i) * time.Minute).Format(time.RFC3339)
		pending = append(pending, fmt.Sprintf(`{"controller": "ownergc", "action": "delete", "rule": "BR-21-01", "reason": "r", "since": %q, "target": %s}`,
			since, target(o)))
		stuck = append(stuck, fmt.Sprintf(`{"state": "finalizing", "deletionRequested": %q, "blockers": [], "target": %s}`, since, target(o)))
		lint = append(lint, fmt.Sprintf(`{"rule": "KG-LINT-01", "name": "dangling-owner", "severity": "warning", "message": "m",
			"ownerReference": {"kind": "ConfigMap", "name": "gone"}, "target": %s}`, target(o)))
		audit = append(audit, fmt.Sprintf(`{"id": %d, "time": %q, "controller": "ownergc", "action": "delete", "outcome": "dry-run",
			"rule": "BR-21-01", "target": %s}`, i+1, since, target(o)))
	}
	answers := map[string]string{
		"/pending": `{"items": [` + strings.Join(pending, ",") + `]}`,
		"/stuck":   `{"items": [` + strings.Join(stuck, ",") + `], "minAge": "0s"}`,
		"/lint":    `{"items": [` + strings.Join(lint, ",") + `]}`,
		"/audit":   `{"items": [` + strings.Join(audit, ",") + `]}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, answers[r.URL.Path])
	}))
	defer srv.Close()
	vars := map[string]string{envServer: srv.URL}

	for _, list := range []string{"pending", "stuck", "lint", "audit"} {
		t.Run(list, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, vars, "get", list)
			if code != 0 {
				t.Fatalf("get %s: exit %d, %s", list, code, stderr)
			}
			var got []string
			for _, line := range strings.Split(strings.TrimSpace(stdout), "\n")[1:] {
				for _, o := range unsorted {
					if f := strings.Fields(line); slices.Contains(f, o[2]) && slices.Contains(f, o[1]) {
						got = append(got, strings.TrimSpace(o[0]+" "+o[1]+" "+o[2]))
					}
				}
			}
			want := sortedRows
			if list == "audit" {
				want = nil
				for _, o := range unsorted {
					want = append(want, strings.TrimSpace(o[0]+" "+o[1]+" "+o[2]))
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("get %s lists\n%s\nwant the rows %q", list, stdout, want)
			}

			// -o json is the API's answer, in its order.
			_, js, _ := runCLI(t, vars, "get", list, "-o", "json")
			var doc, api any
			if err := json.Unmarshal([]byte(js), &doc); err != nil {
				t.Fatal(err)
			}
			_ = json.Unmarshal([]byte(answers["/"+list]), &api)
			if fmt.Sprint(doc) != fmt.Sprint(api) {
				t.Errorf("get %s -o json printed\n%s\nnot the API's answer\n%s", list, js, answers["/"+list])
			}
		})
	}
}
