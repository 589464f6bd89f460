package db

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"modernc.org/sqlite"
)

// The SQL functions rules may call beside SQLite's own: pure and
// deterministic, so SQLite evaluates one with constant arguments (such as
// time_add(:now, -duration_seconds(:grace))) once per statement, not once
// per row.
//
//   - duration_seconds(text): the seconds of a duration, in Go's syntax
//     plus the units d (24h) and w (7d) that kube-janitor's TTLs use
//     ("7d", "1w", "1h30m"); NULL when it does not parse.
//   - parse_time(text): an RFC 3339 time, or a date (2026-12-01, at
//     midnight UTC), in the tables' format; NULL when it does not parse.
//   - time_add(time, seconds): the time seconds later, in the tables'
//     format; NULL when either is NULL or the time does not parse.
var ruleFunctions = []struct {
	name  string
	nArgs int32
	fn    func(*sqlite.FunctionContext, []driver.Value) (driver.Value, error)
}{
	{"duration_seconds", 1, sqlDurationSeconds},
	{"parse_time", 1, sqlParseTime},
	{"time_add", 2, sqlTimeAdd},
}

func sqlDurationSeconds(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
	s, ok := textArg(args[0])
	if !ok {
		return nil, nil
	}
	secs, err := durationSeconds(s)
	if err != nil {
		return nil, nil
	}
	if secs == math.Trunc(secs) && math.Abs(secs) < 1<<53 {
		return int64(secs), nil
	}
	return secs, nil
}

func sqlParseTime(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
	s, ok := textArg(args[0])
	if !ok {
		return nil, nil
	}
	t, err := ParseRuleTime(s)
	if err != nil {
		return nil, nil
	}
	return t.UTC().Format(timeFormat), nil
}

func sqlTimeAdd(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
	s, ok := textArg(args[0])
	if !ok {
		return nil, nil
	}
	t, err := ParseRuleTime(s)
	if err != nil {
		return nil, nil
	}
	var secs float64
	switch v := args[1].(type) {
	case int64:
		secs = float64(v)
	case float64:
		secs = v
	default:
		return nil, nil
	}
	// Past year 9999 the text format no longer sorts as time; a TTL that
	// long never expires, which the year 9999 says as well.
	const limit = 1e12
	if math.IsNaN(secs) || secs > limit || secs < -limit {
		return nil, nil
	}
	whole := math.Floor(secs)
	t = time.Unix(t.Unix()+int64(whole), int64(t.Nanosecond())+int64((secs-whole)*1e9)).UTC()
	if y := t.Year(); y > 9999 {
		t = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
	} else if y < 1 {
		return nil, nil
	}
	return t.UTC().Format(timeFormat), nil
}

// textArg is an SQL argument as text: text as is, a number in decimal.
func textArg(v driver.Value) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case []byte:
		return string(v), true
	case int64:
		return strconv.FormatInt(v, 10), true
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), true
	}
	return "", false
}

var errDuration = errors.New("must be a duration such as 90s, 15m, 24h, 7d or 1w")

// ParseDuration parses a rule's duration: Go's syntax (1h30m, 90s) plus
// the units d (24h) and w (7d), as kube-janitor's TTLs have them. A
// negative duration is refused.
func ParseDuration(s string) (time.Duration, error) {
	secs, err := durationSeconds(s)
	if err != nil {
		return 0, err
	}
	if secs*float64(time.Second) > math.MaxInt64 {
		return 0, fmt.Errorf("%w: %q is too long", errDuration, s)
	}
	return time.Duration(secs * float64(time.Second)), nil
}

var durationUnits = map[string]float64{
	"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3,
	"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400,
}

// durationSeconds parses a duration (see ParseDuration) into seconds.
func durationSeconds(s string) (float64, error) {
	orig := s
	s = strings.TrimSpace(s)
	if s == "0" {
		return 0, nil
	}
	if s == "" {
		return 0, errDuration
	}
	total := 0.0
	for s != "" {
		i := 0
		for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
			i++
		}
		if i == 0 {
			return 0, fmt.Errorf("%w, not %q", errDuration, orig)
		}
		n, err := strconv.ParseFloat(s[:i], 64)
		if err != nil {
			return 0, fmt.Errorf("%w, not %q", errDuration, orig)
		}
		s = s[i:]
		j := 0
		for j < len(s) && !(s[j] >= '0' && s[j] <= '9' || s[j] == '.') {
			j++
		}
		unit, ok := durationUnits[s[:j]]
		if !ok {
			return 0, fmt.Errorf("%w, not %q", errDuration, orig)
		}
		s = s[j:]
		total += n * unit
	}
	if math.IsInf(total, 0) {
		return 0, fmt.Errorf("%w, not %q", errDuration, orig)
	}
	return total, nil
}

// ruleTimeLayouts are the times parse_time reads: RFC 3339 with or without
// a zone (UTC when it has none), to the minute as kube-janitor's
// janitor/expires allows, and a date.
var ruleTimeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04",
	"2006-01-02",
}

// ParseRuleTime parses a time as the rules' parse_time does.
func ParseRuleTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range ruleTimeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("must be an RFC 3339 time or a date (2026-12-01T15:04:05Z, 2026-12-01), not %q", s)
}
