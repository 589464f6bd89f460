package app

import (
	"runtime/debug"
	"strconv"
)

// GCPercent is the Go collector's GOGC the daemon runs with when the
// environment sets none. A wide read (the cascade preview of 10,000
// objects, /graph?uid=) allocates tens of MB on a live heap of a few, so at
// Go's default of 100 it collects several times per request; at 200 it
// collects half as often, for a heap that peaks at three times the live one
// rather than twice. GOGC in the environment (a number, or "off") wins,
// as does GOMEMLIMIT beside it.
const GCPercent = 200

// TuneGC sets the collector's target to GCPercent unless getenv("GOGC")
// names one, and returns the target in force ("off" when collection is
// off) and whether it came from the environment.
func TuneGC(getenv func(string) string) (gogc string, fromEnv bool) {
	if v := getenv("GOGC"); v != "" {
		// The runtime read it at start: report what it made of it.
		cur := debug.SetGCPercent(-1)
		debug.SetGCPercent(cur)
		if cur < 0 {
			return "off", true
		}
		return strconv.Itoa(cur), true
	}
	debug.SetGCPercent(GCPercent)
	return strconv.Itoa(GCPercent), false
}
