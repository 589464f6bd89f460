// Package cleanup runs the cleanup rules (internal/rules): it loads them
// from the rules directory and again whenever its files change, runs each
// rule every interval once the mirror has synced, stores what each
// matches, and keeps each rule's last pass for GET /rules and the
// metrics. It runs on every instance, leader or not, dry-run or not. A rule
// whose mode is delete acts on its matches only where the instance may
// write (act.go). Nothing a rule file says stops it: a refused file or rule
// is logged, shown and counted, and the others run.
package cleanup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/liveness"
	"github.com/kubegcd/kubegcd/internal/rules"
)

// DefaultPollPeriod is how often the rules directory is looked at.
const DefaultPollPeriod = 5 * time.Second

// Store is where the rules' matches go; db.Rules is one.
type Store interface {
	ReplaceRuleMatches(ctx context.Context, ruleID string, matches []db.RuleMatch, at time.Time) error
	KeepRuleMatches(ctx context.Context, ids []string) error
	CountRuleMatches(ctx context.Context, ruleID string) (map[string]db.RuleMatchCount, error)
}

// Evaluator checks and runs rules; *rules.Evaluator is one.
type Evaluator interface {
	Evaluate(ctx context.Context, r *rules.Rule) ([]db.RuleMatch, time.Duration, error)
	Check(ctx context.Context, r *rules.Rule) *rules.Error
}

// Options configure the runner.
type Options struct {
	// Dir holds the rule files (--rules-dir).
	Dir string
	// Store keeps each rule's matches.
	Store Store
	// Evaluator checks each rule as it is loaded and runs its passes.
	Evaluator Evaluator
	// LabelKept says whether the mirror keeps a label key, which
	// exclude.labels must name; nil takes every key as kept.
	LabelKept func(key string) bool
	// Synced reports whether every watched resource has synced: no pass
	// runs before it first has. Nil: from the start.
	Synced func() bool
	// CaughtUp reports whether no resource's mirror misses what the API
	// server has: a pass due while it is false waits. Nil: always.
	CaughtUp func() bool
	// PollPeriod is how often the directory is looked at
	// (DefaultPollPeriod when 0).
	PollPeriod time.Duration
	Logger     *slog.Logger
	// Registerer takes the metrics; nil registers none.
	Registerer prometheus.Registerer
	// Heartbeat beats at every turn of the loop and between passes.
	Heartbeat *liveness.Loop
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Acting is what rules that delete need; nil: every rule reports.
	Acting *Acting
	// PassesEnded, when set, runs after each turn of the loop that made
	// a pass or more. A pass reads and holds its matches, then is idle
	// until the next: the daemon gives back the memory it used there.
	PassesEnded func()
}

// Runner loads the rules and runs their passes.
type Runner struct {
	opts    Options
	log     *slog.Logger
	metrics *metrics

	// files is what the directory held at the last look.
	files    dirFingerprint
	looked   bool
	nextLook time.Time
	// synced latches Synced: the first sync opens the passes.
	synced bool

	mu sync.Mutex
	// rules are those loaded, in the set's order.
	rules []*ruleState
	// errs say why each refused file or rule is refused.
	errs     []*rules.Error
	dirErr   error
	loadedAt time.Time
	fileList []string
	// capReasons is each rule's last cap reason, so that a pass held back
	// for the same reason is audited once.
	capReasons map[string]string
}

// ruleState is a loaded rule and its passes.
type ruleState struct {
	rule *rules.Rule
	// next is when its next pass is due; zero: at once.
	next time.Time
	last *pass
	// matchedAt is the start of its last pass that succeeded.
	matchedAt time.Time
	count     db.RuleMatchCount
}

// pass is one pass of a rule.
type pass struct {
	start             time.Time
	duration          time.Duration
	matches, findings int
	err               error
	// acted is what a pass of a rule that deletes did; nil otherwise.
	acted *api.RuleActed
}

// New returns a runner; Run starts it.
func New(opts Options) *Runner {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.PollPeriod <= 0 {
		opts.PollPeriod = DefaultPollPeriod
	}
	return &Runner{opts: opts, log: opts.Logger, metrics: newMetrics(opts.Registerer), capReasons: map[string]string{}}
}

// Run loads the rules, then until ctx ends looks at the rule files every
// poll period and, once the mirror has synced, runs each rule when its
// pass is due. It returns nil: nothing in a rule file is a reason to stop.
func (r *Runner) Run(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		next := r.step(ctx)
		t.Reset(max(next.Sub(r.opts.Now()), 10*time.Millisecond))
	}
}

// step does what is due now: a look at the rule files, then each pass
// due, one after the other. It returns when something is next due.
func (r *Runner) step(ctx context.Context) time.Time {
	r.opts.Heartbeat.Beat()
	now := r.opts.Now()
	if !r.looked || !now.Before(r.nextLook) {
		r.look(ctx)
		r.looked, r.nextLook = true, now.Add(r.opts.PollPeriod)
	}
	next := r.nextLook
	if !r.synced {
		r.synced = r.opts.Synced == nil || r.opts.Synced()
		if !r.synced {
			return minTime(next, now.Add(100*time.Millisecond))
		}
		r.log.Info("the mirror has synced: the rules run", "rules", len(r.snapshot()))
	}
	if r.opts.CaughtUp != nil && !r.opts.CaughtUp() {
		// The passes wait for the mirror, which misses changes.
		return minTime(next, now.Add(time.Second))
	}
	ran := false
	for _, st := range r.snapshot() {
		if ctx.Err() != nil {
			return next
		}
		if due := r.dueAt(st); !due.After(r.opts.Now()) {
			r.run(ctx, st)
			r.opts.Heartbeat.Beat()
			ran = true
		}
		next = minTime(next, r.dueAt(st))
	}
	if ran && r.opts.PassesEnded != nil {
		r.opts.PassesEnded()
	}
	return next
}

// snapshot is the rules loaded now.
func (r *Runner) snapshot() []*ruleState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*ruleState(nil), r.rules...)
}

func (r *Runner) dueAt(st *ruleState) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return st.next
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// run makes one pass of st's rule: its matches are stored, or its error
// recorded, and its next pass is due an interval after this one began.
func (r *Runner) run(ctx context.Context, st *ruleState) {
	rule := st.rule
	start := r.opts.Now()
	matches, err := r.evaluate(ctx, rule)
	if ctx.Err() != nil {
		return // stopping: this pass says nothing of the rule
	}
	p := &pass{start: start, err: err}
	if err == nil {
		for _, m := range matches {
			if m.Finding {
				p.findings++
			} else {
				p.matches++
			}
		}
		if err = r.opts.Store.ReplaceRuleMatches(ctx, rule.ID, matches, start); err != nil {
			p.err = fmt.Errorf("%w: %w", errStore, err)
		}
	}
	p.duration = r.opts.Now().Sub(start)
	if p.err == nil && r.mayAct(rule) {
		var err error
		if p.acted, err = r.act(ctx, rule, start); err != nil && ctx.Err() == nil {
			r.metrics.errors.WithLabelValues(rule.ID, "act").Inc()
			r.log.Warn("a rule that deletes could not act on every match; the next pass tries again", "rule", rule.ID,
				"err", err)
		}
	}
	var counted map[string]db.RuleMatchCount
	if p.err == nil {
		// What the store kept: a match whose object went meanwhile is not.
		counted, _ = r.opts.Store.CountRuleMatches(ctx, rule.ID)
	}
	r.metrics.passDuration.WithLabelValues(rule.ID).Observe(p.duration.Seconds())
	r.mu.Lock()
	st.last, st.next = p, rule.NextPass(start)
	if p.err == nil {
		st.matchedAt = start
		st.count = db.RuleMatchCount{Matches: p.matches, Findings: p.findings}
		if counted != nil {
			st.count = counted[rule.ID]
		}
	}
	count := st.count
	r.mu.Unlock()
	if p.err != nil {
		reason := errorReason(p.err)
		r.metrics.errors.WithLabelValues(rule.ID, reason).Inc()
		r.log.Warn("rule pass failed; its matches stay as the last pass left them", "rule", rule.ID,
			"reason", reason, "err", p.err, "duration", p.duration.Round(time.Millisecond))
		return
	}
	r.metrics.matches.WithLabelValues(rule.ID).Set(float64(count.Matches))
	r.metrics.findings.WithLabelValues(rule.ID).Set(float64(count.Findings))
	r.log.Debug("rule pass", "rule", rule.ID, "matches", p.matches, "findings", p.findings,
		"duration", p.duration.Round(time.Millisecond))
}

// evaluate runs rule's query once. A panic in it (a defect of kubegcd or
// of the SQLite driver that a rule's text set off) fails that pass alone:
// nothing a rule says may stop the daemon.
func (r *Runner) evaluate(ctx context.Context, rule *rules.Rule) (matches []db.RuleMatch, err error) {
	defer r.recoverRule(rule, &err)
	matches, _, err = r.opts.Evaluator.Evaluate(ctx, rule)
	return matches, err
}

// check is the Evaluator's Check, a panic in it refusing the rule.
func (r *Runner) check(ctx context.Context, rule *rules.Rule) (refused *rules.Error) {
	var err error
	defer func() {
		if err != nil {
			refused = &rules.Error{File: rule.Source.File, Line: rule.Source.Line, RuleID: rule.ID, Field: "select",
				Detail: err.Error()}
		}
	}()
	defer r.recoverRule(rule, &err)
	return r.opts.Evaluator.Check(ctx, rule)
}

// recoverRule turns a panic while rule ran into *err, and logs it with
// its stack.
func (r *Runner) recoverRule(rule *rules.Rule, err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("%w: %v", errPanic, p)
		r.log.Error("a rule set off a defect of kubegcd; the other rules run", "rule", rule.ID, "panic", p,
			"stack", string(debug.Stack()))
	}
}

// errPanic marks a pass that ended in a panic.
var errPanic = errors.New("internal error (a panic, logged with its stack)")

// errStore marks a pass whose matches could not be stored.
var errStore = errors.New("storing the matches")

// errorReason is the reason label of a failed pass.
func errorReason(err error) string {
	switch {
	case errors.Is(err, db.ErrRuleTimeLimit):
		return "time-limit"
	case errors.Is(err, db.ErrRuleRowCap):
		return "row-cap"
	case errors.Is(err, db.ErrRuleDenied):
		return "denied"
	case errors.Is(err, db.ErrRuleSyntax), errors.Is(err, db.ErrRuleNotSelect), errors.Is(err, db.ErrRuleNotOneStatement),
		errors.Is(err, db.ErrRuleParam), errors.Is(err, db.ErrRuleNoUID):
		return "invalid"
	case errors.Is(err, errStore):
		return "store"
	case errors.Is(err, errPanic):
		return "panic"
	}
	return "other"
}

// List is the rules loaded, each with its last pass, and why the refused
// files and rules are refused, as GET /rules shows them.
func (r *Runner) List() api.RuleList {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := api.RuleList{Items: make([]api.RuleInfo, 0, len(r.rules)), Errors: []api.RuleError{}, Dir: r.opts.Dir,
		Files: append([]string{}, r.fileList...)}
	if !r.loadedAt.IsZero() {
		at := r.loadedAt.UTC()
		out.LoadedAt = &at
	}
	for _, st := range r.rules {
		out.Items = append(out.Items, st.info())
	}
	if r.dirErr != nil {
		out.Errors = append(out.Errors, RuleError(&rules.Error{File: r.opts.Dir, Detail: r.dirErr.Error()}))
	}
	for _, e := range r.errs {
		out.Errors = append(out.Errors, RuleError(e))
	}
	return out
}

// info is st as GET /rules shows it; the runner's lock is held.
func (st *ruleState) info() api.RuleInfo {
	rule := st.rule
	info := api.RuleInfo{ID: rule.ID, Description: rule.Description, BuiltIn: rule.Source.BuiltIn,
		File: rule.Source.File, Line: rule.Source.Line, Hash: rule.Hash, Action: string(rule.Mode),
		Occurrences: rule.Occurrences, Propagation: rule.Propagation,
		Limits:   api.RuleLimits{MaxCount: rule.Limits.MaxCount, MaxPercent: rule.Limits.MaxPercent},
		Schedule: rule.Schedule, Select: rule.Select, Params: map[string]any{},
		Exclude: api.RuleExclude{Namespaces: nonNil(rule.Exclude.Namespaces), Labels: nonNil(rule.Exclude.Labels),
			Names: nonNil(rule.Exclude.Names)},
		Matches: st.count.Matches, Findings: st.count.Findings}
	for k, v := range rule.Params {
		info.Params[k] = v
	}
	if rule.NotifyBefore > 0 {
		info.NotifyBefore = rule.NotifyBefore.String()
	}
	if rule.Schedule == "" {
		info.Interval = rule.Interval.String()
	}
	if !st.next.IsZero() {
		next := st.next.UTC()
		info.NextPassAt = &next
	}
	if p := st.last; p != nil {
		info.LastPass = &api.RulePass{StartedAt: p.start.UTC(), DurationSeconds: p.duration.Seconds(),
			Matches: p.matches, Findings: p.findings, Acted: p.acted}
		if p.err != nil {
			info.LastPass.Matches, info.LastPass.Findings = 0, 0
			info.LastPass.Error = p.err.Error()
		}
	}
	if !st.matchedAt.IsZero() {
		at := st.matchedAt.UTC()
		info.MatchedAt = &at
	}
	return info
}

func nonNil(s []string) []string {
	return append([]string{}, s...)
}

// RuleError is e as the API shows it.
func RuleError(e *rules.Error) api.RuleError {
	return api.RuleError{File: e.File, Line: e.Line, Rule: e.RuleID, Field: e.Field, Detail: e.Detail, Message: e.Error()}
}
