package cleanup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/reconcile"
	"github.com/kubegcd/kubegcd/internal/rules"
)

// A rule whose mode is delete acts on its matches after each pass that
// stored them, on the instance that may write, up to Acting.Workers
// matches at once, handed out oldest first. What it does with each match:
//
//  1. A match that has not held for the rule's occurrences waits, and so
//     does one the rule spared (restored from a copy it deleted).
//  2. Over the rule's cap, the whole pass deletes nothing: the audit, the
//     metric and GET /rules say why.
//  3. In dry-run, the delete is recorded as what would be, once.
//  4. The object is read live. It is left alone when it is gone or another
//     object took its name, when its resourceVersion is not the one the
//     pass matched, when the rule now excludes it, or when a reference
//     to it appeared after the pass began. The next pass decides again.
//  5. With notify_before, a notice Event goes to the object first, and the
//     delete waits that long after it.
//  6. A copy of the live object is kept, then it is deleted through the
//     applier, on its UID and resourceVersion, with the rule's propagation.

// Applier is what a rule that deletes needs of the applier;
// *reconcile.Applier is one.
type Applier interface {
	Apply(ctx context.Context, d reconcile.Decision, do func(ctx context.Context) error) (api.Outcome, error)
	Defer(ctx context.Context, d reconcile.Decision, notBefore time.Time) error
	EndPass(ctx context.Context, controller api.Controller, keep func(uid string) bool) error
	RecordPass(ctx context.Context, controller api.Controller, rule string, action api.Action, outcome api.Outcome,
		reason string, facts any) error
	DryRun() bool
}

// Live reads, notifies and deletes objects in the cluster.
type Live interface {
	Get(ctx context.Context, m db.ActMatch) (*unstructured.Unstructured, error)
	Delete(ctx context.Context, m db.ActMatch, uid, resourceVersion string, propagation metav1.DeletionPropagation) error
	// Notify sends obj a Warning Event with this reason and message.
	Notify(ctx context.Context, obj *unstructured.Unstructured, reason, message string) error
}

// Copy is what is kept of an object a rule deletes, for undo.
type Copy struct {
	Target           api.Target
	Resource         string
	RuleID, RuleHash string
	TakenAt          time.Time
	// Object is the live object as JSON, Secret data dropped unless kept.
	Object            []byte
	SecretDataDropped bool
}

// Copies keeps the copies of deleted objects and says which objects a
// rule spares because they were restored from its copy.
type Copies interface {
	Keep(ctx context.Context, c Copy) error
	Drop(ctx context.Context, uid string) error
	Spared(ctx context.Context, ruleID, ruleHash string) (map[string]bool, error)
}

// ActStore is what acting reads and writes of the rules' matches;
// db.Rules is one.
type ActStore interface {
	ActMatches(ctx context.Context, ruleID string) ([]db.ActMatch, error)
	MarkNotified(ctx context.Context, ruleID, uid string, at time.Time) error
	ReferencedSince(ctx context.Context, t api.Target, since time.Time) (bool, error)
	CountObjectsOfKinds(ctx context.Context, kinds [][2]string) (int, error)
	MatchedUIDs(ctx context.Context, ruleIDs []string) (map[string]bool, error)
}

// Acting is what a rule that deletes needs; nil options leave every rule
// reporting.
type Acting struct {
	Applier Applier
	Live    Live
	Store   ActStore
	// Copies keeps a copy of each object before it is deleted; nil keeps
	// none.
	Copies Copies
	// TakeCopy encodes a live object for Copies: its JSON, and whether
	// Secret data was dropped from it.
	TakeCopy func(obj *unstructured.Unstructured) ([]byte, bool, error)
	// Leading reports whether this instance may write: only then do rules
	// act. Nil: always.
	Leading func() bool
	// Workers is how many matches a rule acts on at once (--gc-workers);
	// at least one.
	Workers int
}

// NoticeReason is the reason of the Event that says a rule deletes its
// object after notify_before.
const NoticeReason = "CleanupScheduled"

// Skip reasons: why a due match was left alone this pass.
const (
	skipChanged    = "changed"
	skipReferenced = "referenced"
	skipExcluded   = "excluded"
	skipSpared     = "spared"
	skipGone       = "gone"
)

// errCopy marks a delete held back because its copy could not be kept.
var errCopy = errors.New("keeping a copy of the object")

// dueMatches splits a rule's matches: those that have held for occurrences
// passes and are not spared are due; it counts the spared apart.
func dueMatches(matches []db.ActMatch, occurrences int, spared map[string]bool) (due []db.ActMatch, nSpared int) {
	for _, m := range matches {
		switch {
		case spared[m.Target.UID]:
			nSpared++
		case m.Passes >= occurrences:
			due = append(due, m)
		}
	}
	return due, nSpared
}

// capReason says why a pass that would act on due objects, of looked
// objects of their kinds, is over the limits; "" when it is not.
func capReason(l rules.Limits, due, looked int) string {
	switch {
	case l.MaxCount > 0 && due > l.MaxCount:
		return fmt.Sprintf("%d objects due, more than max_count %d: the pass deletes nothing", due, l.MaxCount)
	case l.MaxPercent > 0 && looked > 0 && float64(due)*100 > l.MaxPercent*float64(looked):
		return fmt.Sprintf("%d objects due, %.1f%% of the %d objects of their kinds, more than max_percent %g: "+
			"the pass deletes nothing", due, float64(due)*100/float64(looked), looked, l.MaxPercent)
	}
	return ""
}

// noticeStep says what notify_before asks of a due match now: send the
// notice, wait until notBefore, or go ahead and delete.
type noticeStep int

const (
	noticeNone noticeStep = iota // delete now
	noticeSend                   // send the notice, then wait
	noticeWait                   // the notice went out; wait
)

func noticeFor(notifyBefore time.Duration, notifiedAt *time.Time, now time.Time) (noticeStep, time.Time) {
	switch {
	case notifyBefore <= 0:
		return noticeNone, time.Time{}
	case notifiedAt == nil:
		return noticeSend, now.Add(notifyBefore)
	case now.Before(notifiedAt.Add(notifyBefore)):
		return noticeWait, notifiedAt.Add(notifyBefore)
	}
	return noticeNone, time.Time{}
}

// mayAct reports whether rule deletes, and this instance may act for it.
func (r *Runner) mayAct(rule *rules.Rule) bool {
	a := r.opts.Acting
	return rule.Mode == rules.ModeDelete && a != nil && a.Applier != nil && a.Store != nil && a.Live != nil &&
		(a.Leading == nil || a.Leading())
}

// act acts on the matches a pass of rule stored; start is when the pass
// began. It returns what it did.
func (r *Runner) act(ctx context.Context, rule *rules.Rule, start time.Time) (*api.RuleActed, error) {
	a := r.opts.Acting
	acted := &api.RuleActed{Skipped: map[string]int{}}
	matches, err := a.Store.ActMatches(ctx, rule.ID)
	if err != nil {
		return nil, err
	}
	spared := map[string]bool{}
	if a.Copies != nil {
		if spared, err = a.Copies.Spared(ctx, rule.ID, rule.Hash); err != nil {
			return nil, err
		}
	}
	due, nSpared := dueMatches(matches, rule.Occurrences, spared)
	acted.Due = len(due)
	if nSpared > 0 {
		acted.Skipped[skipSpared] = nSpared
	}
	if acted.Capped, err = r.capped(ctx, rule, due); err != nil || acted.Capped != "" {
		return acted, errors.Join(err, r.endPass(ctx))
	}
	r.actOnAll(ctx, rule, due, start, acted)
	r.metrics.observeActed(rule.ID, acted)
	return acted, r.endPass(ctx)
}

// actOnAll acts on due, in its order, on Acting.Workers workers: each
// match waits on the API server twice (its read, its delete), so one at a
// time would leave kubegcd idle. Once the applier pauses, or ctx ends, no
// more is handed out; what is in flight finishes, and the rest waits for
// the next pass. Each worker counts in its own tally, added to acted at
// the end.
func (r *Runner) actOnAll(ctx context.Context, rule *rules.Rule, due []db.ActMatch, start time.Time,
	acted *api.RuleActed) {
	workers := min(max(r.opts.Acting.Workers, 1), max(len(due), 1))
	next := make(chan db.ActMatch)
	var paused atomic.Bool
	var wg sync.WaitGroup
	tallies := make([]*api.RuleActed, workers)
	for w := range tallies {
		tally := &api.RuleActed{Skipped: map[string]int{}}
		tallies[w] = tally
		wg.Go(func() {
			for m := range next {
				if err := r.actOn(ctx, rule, m, start, tally); errors.Is(err, reconcile.ErrPaused) {
					paused.Store(true)
				}
			}
		})
	}
	for _, m := range due {
		if ctx.Err() != nil || paused.Load() {
			break // the rest waits for the next pass
		}
		next <- m
		r.opts.Heartbeat.Beat()
	}
	close(next)
	wg.Wait()
	for _, t := range tallies {
		acted.Deleted += t.Deleted
		acted.DryRun += t.DryRun
		acted.Notified += t.Notified
		acted.Waiting += t.Waiting
		acted.Failed += t.Failed
		for reason, n := range t.Skipped {
			acted.Skipped[reason] += n
		}
	}
}

// capped checks the rule's cap on due, and audits a pass it holds back
// when the reason is new. It returns the reason, "" when under the cap.
func (r *Runner) capped(ctx context.Context, rule *rules.Rule, due []db.ActMatch) (string, error) {
	a := r.opts.Acting
	looked := 0
	if rule.Limits.MaxPercent > 0 && len(due) > 0 {
		var kinds [][2]string
		for _, m := range due {
			k := [2]string{m.Target.APIVersion, m.Target.Kind}
			if !slices.Contains(kinds, k) {
				kinds = append(kinds, k)
			}
		}
		var err error
		if looked, err = a.Store.CountObjectsOfKinds(ctx, kinds); err != nil {
			return "", err
		}
	}
	reason := capReason(rule.Limits, len(due), looked)
	r.metrics.capped.WithLabelValues(rule.ID).Set(boolFloat(reason != ""))
	r.mu.Lock()
	last := r.capReasons[rule.ID]
	r.capReasons[rule.ID] = reason
	r.mu.Unlock()
	if reason == "" || reason == last {
		return reason, nil
	}
	r.log.Warn("a rule's pass is over its cap and deletes nothing", "rule", rule.ID, "reason", reason)
	err := a.Applier.RecordPass(ctx, api.ControllerRules, rule.ID, api.ActionDelete, api.OutcomeSkipped, reason,
		map[string]any{"ruleHash": rule.Hash, "due": len(due), "looked": looked, "maxCount": rule.Limits.MaxCount,
			"maxPercent": rule.Limits.MaxPercent})
	return reason, err
}

// actOn acts on one due match m of rule, and counts what it did in acted.
func (r *Runner) actOn(ctx context.Context, rule *rules.Rule, m db.ActMatch, start time.Time,
	acted *api.RuleActed) error {
	a := r.opts.Acting
	now := r.opts.Now()
	d := reconcile.Decision{Controller: api.ControllerRules, Rule: rule.ID, RuleHash: rule.Hash, Action: api.ActionDelete,
		Target: m.Target, ResourceVersion: m.ResourceVersion, Reason: m.Reason, DecidedAt: now,
		Facts: map[string]any{"ruleHash": rule.Hash, "passes": m.Passes, "matchedSince": m.Since.UTC(),
			"propagation": rule.Propagation}}
	if d.Reason == "" {
		d.Reason = "matched by rule " + rule.ID
	}
	if a.Applier.DryRun() {
		if rule.NotifyBefore > 0 {
			d.Reason += fmt.Sprintf(" (after a notice Event %s before)", rule.NotifyBefore)
		}
		_, err := a.Applier.Apply(ctx, d, nil)
		return r.tally(acted, api.OutcomeDryRun, err)
	}
	live, skip, err := r.recheck(ctx, rule, m, start)
	if err != nil || skip != "" {
		if skip != "" {
			acted.Skipped[skip]++
			r.log.Debug("a rule's match is left alone this pass", "rule", rule.ID, "target", m.Target.String(),
				"why", skip)
		} else {
			acted.Failed++
		}
		return err
	}
	d.ResourceVersion = live.GetResourceVersion()
	switch step, notBefore := noticeFor(rule.NotifyBefore, m.NotifiedAt, now); step {
	case noticeSend:
		msg := fmt.Sprintf("kubegcd deletes this object at %s (rule %s), unless it changes first: %s",
			notBefore.UTC().Format(time.RFC3339), rule.ID, d.Reason)
		if err := a.Live.Notify(ctx, live, NoticeReason, msg); err != nil {
			acted.Failed++
			return fmt.Errorf("notice to %s: %w", m.Target, err)
		}
		acted.Notified++
		if err := a.Store.MarkNotified(ctx, rule.ID, m.Target.UID, now); err != nil {
			return err
		}
		return a.Applier.Defer(ctx, d, notBefore)
	case noticeWait:
		acted.Waiting++
		return a.Applier.Defer(ctx, d, notBefore)
	}
	outcome, err := a.Applier.Apply(ctx, d, func(ctx context.Context) error { return r.deleteLive(ctx, rule, m, live) })
	return r.tally(acted, outcome, err)
}

// recheck reads m's object live and says why it is to be left alone this
// pass ("" when it is not).
func (r *Runner) recheck(ctx context.Context, rule *rules.Rule, m db.ActMatch, start time.Time) (
	*unstructured.Unstructured, string, error) {
	a := r.opts.Acting
	live, err := a.Live.Get(ctx, m)
	switch {
	case apierrors.IsNotFound(err):
		return nil, skipGone, nil
	case err != nil:
		return nil, "", fmt.Errorf("reading %s live: %w", m.Target, err)
	case string(live.GetUID()) != m.Target.UID:
		return nil, skipGone, nil
	case live.GetResourceVersion() != m.ResourceVersion:
		return nil, skipChanged, nil
	case rule.Exclude.Excludes(m.Group, m.Target.Kind, live.GetNamespace(), live.GetName(), live.GetLabels()):
		return nil, skipExcluded, nil
	}
	referenced, err := a.Store.ReferencedSince(ctx, m.Target, start)
	if err != nil {
		return nil, "", err
	}
	if referenced {
		return nil, skipReferenced, nil
	}
	return live, "", nil
}

// deleteLive keeps a copy of live, then deletes it on its UID and
// resourceVersion. No copy, no delete; a delete that did not happen drops
// its copy.
func (r *Runner) deleteLive(ctx context.Context, rule *rules.Rule, m db.ActMatch, live *unstructured.Unstructured) error {
	a := r.opts.Acting
	kept := false
	if a.Copies != nil && a.TakeCopy != nil {
		body, dropped, err := a.TakeCopy(live)
		if err == nil {
			err = a.Copies.Keep(ctx, Copy{Target: m.Target, Resource: m.Resource, RuleID: rule.ID, RuleHash: rule.Hash,
				TakenAt: r.opts.Now(), Object: body, SecretDataDropped: dropped})
		}
		if err != nil {
			return fmt.Errorf("%w: %w", errCopy, err)
		}
		kept = true
	}
	err := a.Live.Delete(ctx, m, string(live.GetUID()), live.GetResourceVersion(),
		metav1.DeletionPropagation(rule.Propagation))
	if err != nil && !apierrors.IsNotFound(err) && kept {
		err = errors.Join(err, a.Copies.Drop(context.WithoutCancel(ctx), m.Target.UID))
	}
	return err
}

// tally counts an outcome of the applier in acted.
func (r *Runner) tally(acted *api.RuleActed, outcome api.Outcome, err error) error {
	switch {
	case err == nil && outcome == api.OutcomeApplied:
		acted.Deleted++
	case err == nil && outcome == api.OutcomeDryRun:
		acted.DryRun++
	case err == nil && outcome == api.OutcomeNotFound:
		acted.Skipped[skipGone]++
	default:
		acted.Failed++
	}
	return err
}

// endPass resolves what the rules held pending about objects no rule that
// deletes matches any more.
func (r *Runner) endPass(ctx context.Context) error {
	var ids []string
	for _, st := range r.snapshot() {
		if st.rule.Mode == rules.ModeDelete {
			ids = append(ids, st.rule.ID)
		}
	}
	held, err := r.opts.Acting.Store.MatchedUIDs(ctx, ids)
	if err != nil {
		return err
	}
	return r.opts.Acting.Applier.EndPass(ctx, api.ControllerRules, func(uid string) bool { return held[uid] })
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
