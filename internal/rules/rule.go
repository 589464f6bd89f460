// Package rules holds kubegcd's cleanup rules: a rule is one read-only SQL
// SELECT over the mirror's views (the contract internal/db documents),
// with parameters, exclusions and an interval or a schedule. This package
// parses rule files, carries the built-in rules, and evaluates a rule
// through the database's sandbox. It decides nothing about acting on a match.
package rules

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/robfig/cron/v3"
)

// Rule is one cleanup rule, parsed and checked.
type Rule struct {
	// ID names the rule: a lowercase RFC 1123 label, unique.
	ID          string
	Description string
	// Select is the rule's SQL, as written.
	Select string
	// Params are bound by name (:grace) as they were written in YAML:
	// text, an integer, a float, a bool or null. :now is the pass's time.
	Params map[string]any
	// Exclude leaves objects out of the rule's result.
	Exclude Exclude
	// Interval is the time between two passes; zero when Schedule is set.
	Interval time.Duration
	// Schedule is a cron expression (see scheduleParser): a pass starts
	// only at its times. Empty: every Interval.
	Schedule string
	// schedule is Schedule parsed; nil when it is empty.
	schedule *schedule

	// What the rule does with a match, and the conditions of acting:
	// internal/reconcile/cleanup carries them out.
	Mode Mode
	// Occurrences is how many passes in a row must match an object before
	// it is acted on.
	Occurrences int
	Limits      Limits
	// NotifyBefore is how long before acting an Event says so (0: none).
	NotifyBefore time.Duration
	// Propagation is the deletion's: Background, Foreground or Orphan.
	Propagation string

	// Source says where the rule comes from.
	Source Source
	// Hash is the SHA-256 of the rule's canonical form, in hex: it
	// changes whenever anything that decides what the rule does changes.
	Hash string

	// lines are where the rule's fields are in its file, for errors
	// found after parsing (the SELECT's).
	lines map[string]int
	// path is the rule's place in its file (rules[2]).
	path string
}

// Mode is what a rule does with what it matches: its YAML field is
// action. It is not api.Action, the action of one decision.
type Mode string

const (
	ModeReport Mode = "report"
	ModeDelete Mode = "delete"
)

// Exclude leaves objects out of a rule's result, whatever its SELECT says.
type Exclude struct {
	// Namespaces are globs of namespaces (team-*). An excluded namespace's
	// own Namespace object is excluded too.
	Namespaces []string `json:"namespaces,omitempty"`
	// Labels are label selectors (app=web,tier!=db); an object any of
	// them selects is excluded. They see only the labels the mirror keeps.
	Labels []string `json:"labels,omitempty"`
	// Names are globs of object names.
	Names []string `json:"names,omitempty"`
}

func (e Exclude) empty() bool {
	return len(e.Namespaces) == 0 && len(e.Labels) == 0 && len(e.Names) == 0
}

// Limits cap what one pass of a rule may act on; 0 is no cap.
type Limits struct {
	MaxCount   int     `json:"max_count,omitempty"`
	MaxPercent float64 `json:"max_percent,omitempty"`
}

// Source is where a rule comes from.
type Source struct {
	// BuiltIn is true for a built-in rule, overridden or not.
	BuiltIn bool
	// File and Line are the entry that defines the rule, or that
	// overrides a built-in; empty for a built-in as shipped.
	File string
	Line int
}

// Defaults of a rule's fields.
const (
	DefaultInterval    = 5 * time.Minute
	DefaultOccurrences = 2
	DefaultPropagation = "Background"
)

// canonical is what a rule's hash covers, in a fixed order. Schedule is
// omitted when empty, so that a rule without one keeps the hash it had
// before rules had schedules.
type canonical struct {
	ID           string         `json:"id"`
	Description  string         `json:"description"`
	Select       string         `json:"select"`
	Params       map[string]any `json:"params"`
	Exclude      Exclude        `json:"exclude"`
	Interval     string         `json:"interval"`
	Schedule     string         `json:"schedule,omitempty"`
	Mode         Mode           `json:"action"`
	Occurrences  int            `json:"occurrences"`
	Limits       Limits         `json:"limits"`
	NotifyBefore string         `json:"notify_before"`
	Propagation  string         `json:"propagation"`
}

// hash returns the SHA-256 of r's canonical form: JSON, with map keys
// sorted, of every field but its source.
func (r *Rule) hash() string {
	b, err := json.Marshal(canonical{
		ID: r.ID, Description: r.Description, Select: r.Select, Params: r.Params, Exclude: r.Exclude,
		Interval: r.Interval.String(), Schedule: r.Schedule, Mode: r.Mode, Occurrences: r.Occurrences, Limits: r.Limits,
		NotifyBefore: r.NotifyBefore.String(), Propagation: r.Propagation,
	})
	if err != nil {
		// Params hold only YAML scalars, which always marshal.
		panic("rules: hashing " + r.ID + ": " + err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// clone returns a copy of r that shares nothing mutable with it. The
// parsed schedule is never changed, so the copy shares it.
func (r *Rule) clone() *Rule {
	c := *r
	c.Params = make(map[string]any, len(r.Params))
	for k, v := range r.Params {
		c.Params[k] = v
	}
	c.Exclude = Exclude{
		Namespaces: append([]string(nil), r.Exclude.Namespaces...),
		Labels:     append([]string(nil), r.Exclude.Labels...),
		Names:      append([]string(nil), r.Exclude.Names...),
	}
	c.lines = make(map[string]int, len(r.lines))
	for k, v := range r.lines {
		c.lines[k] = v
	}
	return &c
}

// NextPass is when the pass after one at after is due: with a schedule,
// the schedule's first time strictly after after; otherwise after plus
// the interval.
func (r *Rule) NextPass(after time.Time) time.Time {
	if r.schedule == nil {
		return after.Add(r.Interval)
	}
	if at := r.schedule.next(after); !at.IsZero() {
		return at
	}
	// No time in five years (Parse refuses such a schedule, but a leap
	// day can be further off near 2100): look again then, never at once.
	return after.AddDate(5, 0, 0)
}

// schedule is a parsed cron expression.
type schedule struct {
	// spec holds the expression's fields; its location is UTC, so that
	// it walks the wall clock (see next).
	spec cron.SpecSchedule
	// loc is the time zone the expression's times are in.
	loc *time.Location
}

// next is the schedule's first time strictly after t, or zero if none
// comes in five years.
//
// The library's own Next walks instants, so a DST change skips a time
// the clock jumps over (a weekly pass at 02:00 on the Sunday the clocks
// go forward) and repeats one it goes back over (two passes an hour
// apart, which count as two occurrences). next walks the wall clock
// instead, written as UTC, which has no DST, and then places the time
// found in the zone. So each wall-clock time happens once, as cron means
// it: a time in the hour the clock goes back over happens at its first
// instant, and a time the clock jumps over happens at the jump.
func (s *schedule) next(t time.Time) time.Time {
	wall := wallClock(t.In(s.loc))
	for {
		wall = s.spec.Next(wall)
		if wall.IsZero() {
			return wall
		}
		if at := s.instant(wall); at.After(t) {
			return at
		}
		// A time of an hour the clock went back over, which passed
		// the first time round.
	}
}

// instant is the first instant at which the clock of s.loc shows wall.
func (s *schedule) instant(wall time.Time) time.Time {
	at := time.Date(wall.Year(), wall.Month(), wall.Day(), wall.Hour(), wall.Minute(), wall.Second(), 0, s.loc)
	start, end := at.ZoneBounds()
	switch shown := wallClock(at); {
	case shown.Before(wall):
		return end // wall is in a gap: at the jump, when the next zone starts
	case shown.After(wall):
		return start
	}
	if start.IsZero() {
		return at // no zone change before at
	}
	// Go does not say which of an overlap's two instants time.Date gives.
	_, before := start.Add(-time.Nanosecond).Zone()
	if _, now := at.Zone(); before > now {
		if earlier := at.Add(-time.Duration(before-now) * time.Second); wallClock(earlier).Equal(wall) {
			return earlier
		}
	}
	return at
}

// wallClock is t's date and clock time written as UTC.
func wallClock(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}
