package rules

import (
	"testing"
	"time"
)

// parseOne parses a file of one rule, which must be valid.
func parseOne(t *testing.T, text string) *Rule {
	t.Helper()
	rules, errs := Parse("f.yaml", []byte(text), ParseOptions{})
	if len(errs) > 0 || len(rules) != 1 {
		t.Fatalf("Parse: %v", errorTexts(errs))
	}
	return rules[0]
}

// scheduled is a rule with the schedule expr.
func scheduled(t *testing.T, expr string) *Rule {
	t.Helper()
	return parseOne(t, "rules:\n- id: x\n  select: SELECT uid FROM objects\n  schedule: '"+expr+"'\n")
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestNextPass(t *testing.T) {
	tests := []struct {
		name, schedule string
		after          string
		want           string
	}{
		{"UTC without a zone", "0 2 * * *", "2025-06-01T01:00:00Z", "2025-06-01T02:00:00Z"},
		{"strictly after", "0 2 * * *", "2025-06-01T02:00:00Z", "2025-06-02T02:00:00Z"},
		{"a pass that started late", "0 2 * * *", "2025-06-01T02:00:00.5Z", "2025-06-02T02:00:00Z"},
		{"@hourly", "@hourly", "2025-06-01T12:30:00Z", "2025-06-01T13:00:00Z"},
		{"@daily", "@daily", "2025-06-01T12:00:00Z", "2025-06-02T00:00:00Z"},
		{"@weekly: Sunday", "@weekly", "2025-06-04T00:00:00Z", "2025-06-08T00:00:00Z"},
		{"@daily in a zone", "CRON_TZ=Asia/Tokyo @daily", "2025-06-01T00:00:00Z", "2025-06-01T15:00:00Z"},
		{"TZ= as well", "TZ=Asia/Tokyo 0 9 * * *", "2025-06-01T00:00:00Z", "2025-06-02T00:00:00Z"},
		{"leap day", "0 0 29 2 *", "2025-01-01T00:00:00Z", "2028-02-29T00:00:00Z"},
		{"day of month or of week, as cron", "0 0 13 * 5", "2025-06-01T00:00:00Z", "2025-06-06T00:00:00Z"},

		// Europe/Paris: CET (+1) in winter, CEST (+2) in summer.
		{"Sunday 02:00 in Paris, summer", "CRON_TZ=Europe/Paris 0 2 * * 0", "2025-06-02T00:00:00Z", "2025-06-08T00:00:00Z"},
		{"Sunday 02:00 in Paris, winter", "CRON_TZ=Europe/Paris 0 2 * * 0", "2025-01-06T00:00:00Z", "2025-01-12T01:00:00Z"},
		// 2025-03-30 is a Sunday: at 02:00 CET the clocks go to 03:00 CEST.
		// The library alone skips that week (2025-04-06T00:00:00Z).
		{"Paris, the clocks go forward: at the jump", "CRON_TZ=Europe/Paris 0 2 * * 0", "2025-03-23T01:00:00Z", "2025-03-30T01:00:00Z"},
		{"Paris, the week after the jump", "CRON_TZ=Europe/Paris 0 2 * * 0", "2025-03-30T01:00:00Z", "2025-04-06T00:00:00Z"},
		{"Paris, a time in the skipped hour", "CRON_TZ=Europe/Paris 30 2 * * *", "2025-03-29T12:00:00Z", "2025-03-30T01:00:00Z"},
		{"Paris, the day after the jump", "CRON_TZ=Europe/Paris 30 2 * * *", "2025-03-30T01:00:00Z", "2025-03-31T00:30:00Z"},
		// 2025-10-26 is a Sunday: at 03:00 CEST the clocks go back to 02:00 CET.
		{"Paris, the clocks go back: the first 02:00", "CRON_TZ=Europe/Paris 0 2 * * 0", "2025-10-19T12:00:00Z", "2025-10-26T00:00:00Z"},
		// The library alone passes again an hour later (2025-10-26T01:00:00Z).
		{"Paris, the clocks go back: not the second 02:00", "CRON_TZ=Europe/Paris 0 2 * * 0", "2025-10-26T00:00:00Z", "2025-11-02T01:00:00Z"},
		{"Paris, not the second 02:30", "CRON_TZ=Europe/Paris 30 2 * * *", "2025-10-26T00:30:00Z", "2025-10-27T01:30:00Z"},
		{"Paris, loaded during the second 02:00 hour", "CRON_TZ=Europe/Paris 30 2 * * *", "2025-10-26T01:10:00Z", "2025-10-27T01:30:00Z"},
		{"Paris, hourly over the hour gone back over", "CRON_TZ=Europe/Paris @hourly", "2025-10-26T00:00:00Z", "2025-10-26T02:00:00Z"},

		// America/New_York: a zone west of UTC, where Go's time.Date gives
		// the other instant of an overlap.
		{"New York, the clocks go back: the first 01:30", "CRON_TZ=America/New_York 30 1 * * *", "2025-11-01T12:00:00Z", "2025-11-02T05:30:00Z"},
		{"New York, not the second 01:30", "CRON_TZ=America/New_York 30 1 * * *", "2025-11-02T05:30:00Z", "2025-11-03T06:30:00Z"},
		{"New York, the clocks go forward: at the jump", "CRON_TZ=America/New_York 30 2 * * *", "2025-03-08T12:00:00Z", "2025-03-09T07:00:00Z"},
		// Lord Howe Island moves its clocks by 30 minutes: 02:00 +11 becomes 01:30 +10:30.
		{"Lord Howe, a half hour gone back over", "CRON_TZ=Australia/Lord_Howe 45 1 * * *", "2025-04-05T12:00:00Z", "2025-04-05T14:45:00Z"},
		{"Lord Howe, not the second 01:45", "CRON_TZ=Australia/Lord_Howe 45 1 * * *", "2025-04-05T14:45:00Z", "2025-04-06T15:15:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := scheduled(t, tt.schedule)
			if got, want := r.NextPass(utc(tt.after)), utc(tt.want); !got.Equal(want) {
				t.Errorf("NextPass(%s) = %s, want %s", tt.after, got.UTC().Format(time.RFC3339), tt.want)
			}
		})
	}
}

// TestNextPassSequence: a schedule's passes over a year in a zone with
// DST, each from the one before as the runner asks, come once a week,
// on Sunday, at 02:00 or, the day the clocks jump over it, at 03:00.
func TestNextPassSequence(t *testing.T) {
	r := scheduled(t, "CRON_TZ=Europe/Paris 0 2 * * 0")
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	at := utc("2025-01-01T00:00:00Z")
	for i := 0; i < 52; i++ {
		next := r.NextPass(at)
		local := next.In(paris)
		if local.Weekday() != time.Sunday || local.Minute() != 0 ||
			local.Hour() != 2 && !(local.Hour() == 3 && local.Format("01-02") == "03-30") {
			t.Fatalf("pass %d at %s", i, local)
		}
		if i > 0 && local.YearDay()-at.In(paris).YearDay() != 7 {
			t.Fatalf("pass %d at %s, %s after the one at %s", i, local, next.Sub(at), at.In(paris))
		}
		at = next
	}
}

func TestNextPassInterval(t *testing.T) {
	r := parseOne(t, "rules:\n- id: x\n  select: SELECT uid FROM objects\n  interval: 10m\n")
	if got, want := r.NextPass(utc("2025-06-01T00:00:00Z")), utc("2025-06-01T00:10:00Z"); !got.Equal(want) {
		t.Errorf("NextPass = %s, want %s", got, want)
	}
	builtin := Builtins()[0]
	if got, want := builtin.NextPass(utc("2025-06-01T00:00:00Z")), utc("2025-06-01T00:05:00Z"); !got.Equal(want) {
		t.Errorf("built-in NextPass = %s, want %s", got, want)
	}
}

// TestNextPassLocal: CRON_TZ=Local is the host's time zone, whatever it is.
func TestNextPassLocal(t *testing.T) {
	r := scheduled(t, "CRON_TZ=Local 0 2 * * *")
	after := time.Date(2025, 6, 15, 12, 0, 0, 0, time.Local)
	if got, want := r.NextPass(after), time.Date(2025, 6, 16, 2, 0, 0, 0, time.Local); !got.Equal(want) {
		t.Errorf("NextPass = %s, want %s", got, want)
	}
}

func TestScheduleHashAndClone(t *testing.T) {
	const base = "rules:\n- id: x\n  select: SELECT uid FROM objects\n"
	plain := parseOne(t, base+"  interval: 1h\n")
	// A rule without a schedule keeps the hash it had before schedules
	// were a field: what an audit row or a restore recorded still holds.
	if want := "a2a3ec0705079b5b2628f4c072f2ebf59ed16b0f4b13d68f58051036b538a658"; plain.Hash != want {
		t.Errorf("hash %s, want %s as before schedules", plain.Hash, want)
	}
	daily := parseOne(t, base+"  schedule: '@daily'\n")
	other := parseOne(t, base+"  schedule: '0 0 * * *'\n")
	if daily.Hash == plain.Hash || daily.Hash == other.Hash {
		t.Errorf("hashes: interval %s, @daily %s, 0 0 * * * %s", plain.Hash, daily.Hash, other.Hash)
	}
	if daily.Interval != 0 || daily.Schedule != "@daily" {
		t.Errorf("interval %s, schedule %q", daily.Interval, daily.Schedule)
	}
	c := daily.clone()
	after := utc("2025-06-01T12:00:00Z")
	if c.Schedule != "@daily" || !c.NextPass(after).Equal(daily.NextPass(after)) || c.Hash != daily.Hash {
		t.Errorf("clone: %q, next %s", c.Schedule, c.NextPass(after))
	}
}

// TestScheduleOverride: an entry with a built-in's id may give it a
// schedule, which replaces the built-in's interval.
func TestScheduleOverride(t *testing.T) {
	r := parseOne(t, "rules:\n- id: finished-jobs\n  schedule: CRON_TZ=Europe/Paris 0 2 * * 0\n")
	if !r.Source.BuiltIn || r.Interval != 0 || r.Schedule != "CRON_TZ=Europe/Paris 0 2 * * 0" {
		t.Errorf("override: built-in %t, interval %s, schedule %q", r.Source.BuiltIn, r.Interval, r.Schedule)
	}
	if r.Hash == builtinRule(t, "finished-jobs").Hash {
		t.Error("the override has the built-in's hash")
	}
	if got, want := r.NextPass(utc("2025-06-02T00:00:00Z")), utc("2025-06-08T00:00:00Z"); !got.Equal(want) {
		t.Errorf("NextPass = %s, want %s", got, want)
	}
}

// FuzzSchedule: no expression makes the parser panic (the library does on
// "TZ=UTC"), and a parsed schedule's next time is after the time given.
func FuzzSchedule(f *testing.F) {
	for _, s := range []string{"0 2 * * *", "@daily", "TZ=UTC", "CRON_TZ=Europe/Paris", "CRON_TZ=Europe/Paris 30 2 * * 0",
		"CRON_TZ=America/New_York */15 1-3 * * *", "0 0 29 2 *", "@every 1s", "CRON_TZ= 0 2 * * *", "0 2 * * MON-FRI"} {
		f.Add(s, int64(1_750_000_000))
	}
	now := utc("2025-06-01T00:00:00Z")
	f.Fuzz(func(t *testing.T, expr string, unix int64) {
		s, err := parseSchedule(expr, now)
		if err != nil {
			return
		}
		// 1970 to 2200.
		after := time.Unix(unix%7_258_118_400, 0)
		if after.Before(time.Unix(0, 0)) {
			after = time.Unix(-after.Unix(), 0)
		}
		if next := s.next(after); !next.IsZero() && !next.After(after) {
			t.Errorf("%q: next(%s) = %s", expr, after, next)
		}
	})
}
