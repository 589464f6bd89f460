package cleanup

import (
	"context"
	"fmt"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/rules"
)

// Evaluation is one rule of a rules file evaluated once.
type Evaluation struct {
	ID, Hash string
	// At is when the evaluation started.
	At       time.Time
	Duration time.Duration
	Matches  []db.RuleMatch
	// Err says why the evaluation failed; nil when it did not.
	Err error
}

// Evaluate reads data as a rules file named file, checks each rule as a
// load would, and runs each that passes once, against the mirror as it is
// now. Nothing is stored, and the rules loaded do not change: this is what
// the rules would match. Errors say why each refused rule, or the file, is
// refused. It returns ctx's error when ctx ends first.
func (r *Runner) Evaluate(ctx context.Context, file string, data []byte) ([]Evaluation, []api.RuleError, error) {
	parsed, errs := rules.Parse(file, data, rules.ParseOptions{LabelKept: r.opts.LabelKept})
	out := []Evaluation{}
	first := map[string]*rules.Rule{}
	for _, rule := range parsed {
		if prev, ok := first[rule.ID]; ok {
			errs = append(errs, &rules.Error{File: file, Line: rule.Source.Line, RuleID: rule.ID,
				Detail: fmt.Sprintf("Duplicate value: %q: first defined at %s", rule.ID, prev.Position())})
			continue
		}
		first[rule.ID] = rule
		if err := r.opts.Evaluator.Check(ctx, rule); err != nil {
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			errs = append(errs, err)
			continue
		}
		start := r.opts.Now()
		matches, took, err := r.opts.Evaluator.Evaluate(ctx, rule)
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		out = append(out, Evaluation{ID: rule.ID, Hash: rule.Hash, At: start, Duration: took, Matches: matches, Err: err})
	}
	apiErrs := make([]api.RuleError, len(errs))
	for i, e := range errs {
		apiErrs[i] = RuleError(e)
	}
	return out, apiErrs, nil
}
