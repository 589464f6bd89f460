package http

import (
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestGraphAtNowIsTheGraph: the graph that history draws for the present,
// after every change, is the graph of the mirror, in JSON and DOT, for
// each kind of vertex: owner, dependent, a dependent of an owner deleting
// in the foreground, a missing owner and its dependent, an object alone.
func TestGraphAtNowIsTheGraph(t *testing.T) {
	srv, _ := testServer(t)
	later := url.QueryEscape(time.Now().Format(time.RFC3339Nano))
	for _, uid := range []string{"uid-A", "uid-B", "uid-D", "uid-E", "uid-G", "uid-ghost", "uid-L"} {
		for _, format := range []string{"json", "dot"} {
			path := "/graph?format=" + format + "&uid=" + uid
			resp, want := get(t, srv, path)
			respAt, got := get(t, srv, path+"&at="+later)
			if resp.StatusCode != 200 || respAt.StatusCode != 200 {
				t.Fatalf("GET %s: %d, with at: %d %s", path, resp.StatusCode, respAt.StatusCode, got)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("GET %s with at (-want +got):\n%s", path, diff)
			}
		}
	}
}

// TestHistoryParameters: every malformed or unknown parameter of the
// history endpoints is a 400, an unknown UID a 404, both in JSON.
func TestHistoryParameters(t *testing.T) {
	srv, _ := testServer(t)
	for _, tc := range []struct {
		path string
		want int
	}{
		{"/objects/uid-B/history", 200},
		{"/objects/uid-B/history?at=2026-01-02T15:04:05Z", 400},
		{"/objects/nobody/history", 404},
		{"/graph?uid=uid-B&at=2026-13-01T00:00:00Z", 400},
		{"/graph?uid=uid-B&at=1767366245", 400},
		{"/graph?uid=uid-B&at=2026-01-02T15:04:05Z&at=2026-01-02T15:04:06Z", 400},
		{"/graph?at=2026-01-02T15:04:05Z", 400},
		{"/graph?namespace=a&uid=uid-B&at=2026-01-02T15:04:05Z", 400},
		{"/graph?uid=nobody&at=2026-01-02T15:04:05Z", 404},
		{"/graph?uid=uid-B&at=2026-01-02T15:04:05Z&limit=0", 400},
	} {
		var body map[string]any
		getJSON(t, srv, tc.path, tc.want, &body)
		if _, ok := body["error"]; ok != (tc.want != 200) {
			t.Errorf("GET %s: %v", tc.path, body)
		}
	}
}
