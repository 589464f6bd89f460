package db

import (
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{in: "0", want: 0},
		{in: "90s", want: 90 * time.Second},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "7d", want: 7 * 24 * time.Hour},
		{in: "1w", want: 7 * 24 * time.Hour},
		{in: "1d12h", want: 36 * time.Hour},
		{in: "1.5h", want: 90 * time.Minute},
		{in: "250ms", want: 250 * time.Millisecond},
		{in: " 24h ", want: 24 * time.Hour},
		{in: "", bad: true},
		{in: "5", bad: true},
		{in: "5x", bad: true},
		{in: "-1h", bad: true},
		{in: "h", bad: true},
		{in: "1..5h", bad: true},
		{in: "forever", bad: true},
		{in: "9999999w", bad: true},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if (err != nil) != tt.bad || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v (error %v)", tt.in, got, err, tt.want, tt.bad)
		}
	}
}

func TestParseRuleTime(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{"2026-12-01T15:04:05Z", "2026-12-01T15:04:05.000000Z"},
		{"2026-12-01T15:04:05.25+02:00", "2026-12-01T13:04:05.250000Z"},
		{"2026-12-01T15:04:05", "2026-12-01T15:04:05.000000Z"},
		{"2026-12-01 15:04:05", "2026-12-01T15:04:05.000000Z"},
		{"2026-12-01T15:04", "2026-12-01T15:04:00.000000Z"},
		{"2026-12-01", "2026-12-01T00:00:00.000000Z"},
		{"2026-12-01T15:04:05.000000Z", "2026-12-01T15:04:05.000000Z"},
		{"tomorrow", ""},
		{"2026-13-01", ""},
		{"", ""},
	}
	for _, tt := range tests {
		got, err := ParseRuleTime(tt.in)
		if tt.want == "" {
			if err == nil {
				t.Errorf("ParseRuleTime(%q) = %v, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || got.Format(timeFormat) != tt.want {
			t.Errorf("ParseRuleTime(%q) = %v, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

// TestRuleFunctionsInSQL: the functions as SQL sees them, NULL for what
// does not parse.
func TestRuleFunctionsInSQL(t *testing.T) {
	_, s := openSandbox(t, SandboxOptions{})
	tests := []struct{ expr, want string }{
		{`duration_seconds('1d')`, "86400"},
		{`duration_seconds('1.5s')`, "1.5"},
		{`duration_seconds('soon')`, "NULL"},
		{`duration_seconds(NULL)`, "NULL"},
		{`parse_time('2026-12-01')`, "'2026-12-01T00:00:00.000000Z'"},
		{`parse_time('nope')`, "NULL"},
		{`time_add('2026-12-01T00:00:00.000000Z', 90)`, "'2026-12-01T00:01:30.000000Z'"},
		{`time_add('2026-12-01T00:00:00.000000Z', -0.5)`, "'2026-11-30T23:59:59.500000Z'"},
		{`time_add('2026-12-01', duration_seconds('1w'))`, "'2026-12-08T00:00:00.000000Z'"},
		{`time_add('2026-12-01', 1e12)`, "'9999-12-31T23:59:59.000000Z'"},
		{`time_add('2026-12-01', NULL)`, "NULL"},
		{`time_add('x', 1)`, "NULL"},
	}
	for _, tt := range tests {
		got, err := s.Query(t.Context(), `SELECT 'u' AS uid, quote(`+tt.expr+`) AS reason`, nil, time.Now())
		if err != nil || len(got) != 1 || got[0].Reason != tt.want {
			t.Errorf("%s = %v, %v; want %s", tt.expr, got, err, tt.want)
		}
	}
}
