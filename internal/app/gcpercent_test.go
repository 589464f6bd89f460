package app

import (
	"runtime/debug"
	"testing"
)

func TestTuneGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev) })
	for _, tc := range []struct {
		name        string
		env         string
		runtime     int // what the runtime made of env at start
		want        string
		wantFromEnv bool
		wantPercent int
	}{
		{"unset: the daemon's default", "", 100, "200", false, GCPercent},
		{"a number", "150", 150, "150", true, 150},
		{"the runtime's own default, spelled out", "100", 100, "100", true, 100},
		{"off", "off", -1, "off", true, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetGCPercent(tc.runtime)
			got, fromEnv := TuneGC(func(k string) string {
				if k == "GOGC" {
					return tc.env
				}
				return ""
			})
			now := debug.SetGCPercent(100)
			if got != tc.want || fromEnv != tc.wantFromEnv || now != tc.wantPercent {
				t.Errorf("TuneGC with GOGC=%q = %q, from env %v, percent %d; want %q, %v, %d",
					tc.env, got, fromEnv, now, tc.want, tc.wantFromEnv, tc.wantPercent)
			}
		})
	}
}
