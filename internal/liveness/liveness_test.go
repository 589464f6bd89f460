package liveness

import (
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := New(func() time.Time { return now })
	ingest := r.Loop("ingest", 30*time.Second) // may go 2m without a beat
	podgc := r.Loop("podgc", 20*time.Second)   // 1m40s
	var idle *Loop
	idle.Beat() // a loop nobody watches: no panic

	steps := []struct {
		name    string
		advance time.Duration
		beat    []*Loop
		want    string
	}{
		{name: "no loop has beaten: none is checked", advance: time.Hour, want: ""},
		{name: "both beat", beat: []*Loop{ingest, podgc}, want: ""},
		{name: "within both allowances", advance: 100 * time.Second, want: ""},
		{name: "podgc past its allowance", advance: time.Second,
			want: "podgc made no progress for 1m41s (at most 1m40s expected)"},
		{name: "both past", advance: 20 * time.Second,
			want: "ingest made no progress for 2m1s (at most 2m0s expected); podgc made no progress for 2m1s (at most 1m40s expected)"},
		{name: "a beat brings one back", beat: []*Loop{ingest},
			want: "podgc made no progress for 2m1s (at most 1m40s expected)"},
		{name: "and the other", beat: []*Loop{podgc}, want: ""},
	}
	for _, s := range steps {
		now = now.Add(s.advance)
		for _, l := range s.beat {
			l.Beat()
		}
		got := ""
		if err := r.Check(); err != nil {
			got = err.Error()
		}
		if got != s.want {
			t.Errorf("%s: Check() = %q, want %q", s.name, got, s.want)
		}
	}
}
