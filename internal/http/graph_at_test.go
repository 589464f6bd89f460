package http

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestGraphAtRefusesTheFuture: history only knows the past, so /graph?at=
// a future time is a bad request, not the present graph passed off as a
// future one.
func TestGraphAtRefusesTheFuture(t *testing.T) {
	srv, _ := testServer(t)
	for _, tc := range []struct {
		at   string
		want int
	}{
		{time.Now().Add(time.Hour).UTC().Format(time.RFC3339), http.StatusBadRequest},
		{"2999-01-01T00:00:00Z", http.StatusBadRequest},
		{time.Now().Add(-time.Minute).UTC().Format(time.RFC3339), http.StatusOK},
	} {
		var e map[string]any
		getJSON(t, srv, "/graph?uid=uid-A&at="+tc.at, tc.want, &e)
		if msg, _ := e["error"].(string); tc.want == http.StatusBadRequest && !strings.Contains(msg, "future") {
			t.Errorf("/graph?at=%s: error %q, want it to say the time is in the future", tc.at, msg)
		}
	}
}
