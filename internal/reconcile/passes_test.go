package reconcile

import (
	"bytes"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/util/diff"
)

func TestPassesRecordSkips(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	const notNodes, notPods = "the mirror of nodes is not live", "the mirror of pods is not live"
	type step struct {
		skip   bool
		detail string
		at     time.Time
	}
	tests := []struct {
		name  string
		steps []step
		want  PassStatus
		// logged are the messages of the log, in order.
		logged      []string
		wantSkipped float64
	}{
		{
			name: "no pass yet",
			want: PassStatus{Controller: "c"},
		},
		{
			name:  "passes made",
			steps: []step{{at: at(0)}, {at: at(1)}},
			want:  PassStatus{Controller: "c", LastPass: at(1)},
		},
		{
			name:        "every skip counts, one warning",
			steps:       []step{{at: at(0)}, {skip: true, detail: notNodes, at: at(1)}, {skip: true, detail: notNodes, at: at(2)}, {skip: true, detail: notNodes, at: at(3)}},
			want:        PassStatus{Controller: "c", LastPass: at(0), Skipping: true, SkipReason: SkipMirrorNotSynced, SkipDetail: notNodes, SkippingSince: at(1), SkippedPasses: 3},
			logged:      []string{"skipping passes"},
			wantSkipped: 3,
		},
		{
			name:        "another detail is logged again, skipping since the first",
			steps:       []step{{skip: true, detail: notPods, at: at(1)}, {skip: true, detail: notNodes, at: at(2)}},
			want:        PassStatus{Controller: "c", Skipping: true, SkipReason: SkipMirrorNotSynced, SkipDetail: notNodes, SkippingSince: at(1), SkippedPasses: 2},
			logged:      []string{"skipping passes", "skipping passes"},
			wantSkipped: 2,
		},
		{
			name:        "a pass made ends the skipping, the count stays",
			steps:       []step{{skip: true, detail: notNodes, at: at(1)}, {skip: true, detail: notNodes, at: at(2)}, {at: at(3)}, {at: at(4)}},
			want:        PassStatus{Controller: "c", LastPass: at(4), SkippedPasses: 2},
			logged:      []string{"skipping passes", "passes resume"},
			wantSkipped: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			p := NewPasses(reg)
			var logs bytes.Buffer
			r := p.For("c", slog.New(slog.NewJSONHandler(&logs, nil)))
			other := p.For("b", slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil)))
			other.Ran(at(0))
			for _, s := range tt.steps {
				if s.skip {
					r.Skipped(s.at, SkipMirrorNotSynced, s.detail)
				} else {
					r.Ran(s.at)
				}
			}

			want := []PassStatus{{Controller: "b", LastPass: at(0)}, tt.want}
			if got := p.Status(); !reflect.DeepEqual(want, got) {
				t.Errorf("Status (-want +got):\n%s", diff.Diff(want, got))
			}
			if got := messages(t, logs.String()); !reflect.DeepEqual(tt.logged, got) {
				t.Errorf("log (-want +got):\n%s", diff.Diff(tt.logged, got))
			}
			if got := testutil.ToFloat64(p.skipped.WithLabelValues("c", SkipMirrorNotSynced)); got != tt.wantSkipped {
				t.Errorf("skipped passes of c = %v, want %v", got, tt.wantSkipped)
			}
			// Both series exist from the start, at 0 until a skip.
			if n := testutil.CollectAndCount(p.skipped); n != 2 {
				t.Errorf("%d series, want 2", n)
			}
			problems, err := testutil.GatherAndLint(reg)
			if err != nil {
				t.Fatal(err)
			}
			for _, pr := range problems {
				t.Errorf("metric %s: %s", pr.Metric, pr.Text)
			}
		})
	}
}

// messages returns the msg of each JSON log line.
func messages(t *testing.T, logs string) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		if line == "" {
			continue
		}
		_, rest, ok := strings.Cut(line, `"msg":"`)
		if !ok {
			t.Fatalf("log line without msg: %s", line)
		}
		msg, _, _ := strings.Cut(rest, `"`)
		out = append(out, msg)
	}
	return out
}
