package cli

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestGetLeasesGolden: get leases prints the server's golden answer of a
// namespace under coordinated leader election (internal/http's
// leases-coordinated) as testdata/leases/<name>.txt holds it.
func TestGetLeasesGolden(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "http", "testdata", "api", "leases-coordinated.json"))
	if err != nil {
		t.Fatal(err)
	}
	body, _, _ := strings.Cut(string(b), "\n")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	// The golden answer's time.
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"table", []string{"get", "leases"}},
		{"namespace", []string{"get", "leases", "-n", "ns"}},
		{"wide", []string{"get", "leases", "-o", "wide"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			e := &env{prog: "kubegcd", stdout: &out, stderr: &errb, lookupEnv: envOf(map[string]string{envServer: srv.URL}),
				now: func() time.Time { return now }}
			if code := e.main(context.Background(), tc.args); code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			path := filepath.Join("testdata", "leases", tc.name+".txt")
			if *updateCLIGoldens {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), out.String()); diff != "" {
				t.Errorf("get leases %s (-want +got):\n%s", tc.name, diff)
			}
		})
	}
}

func TestFindingKinds(t *testing.T) {
	for _, tc := range []struct {
		kinds []string
		want  string
	}{
		{nil, "<none>"},
		{[]string{"no-live-candidate"}, "no-live-candidate"},
		{[]string{"no-live-candidate", "candidate-expired", "candidate-expired"}, "candidate-expired(2),no-live-candidate"},
	} {
		if got := findingKinds(tc.kinds); got != tc.want {
			t.Errorf("findingKinds(%q) = %q, want %q", tc.kinds, got, tc.want)
		}
	}
}
