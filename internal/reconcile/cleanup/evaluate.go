package cleanup

import (
	"context"
	"errors"
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
	parsed, errs := parse(file, data, r.opts.LabelKept)
	out := []Evaluation{}
	for _, rule := range parsed {
		if err := r.check(ctx, rule); err != nil {
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			errs = append(errs, err)
			continue
		}
		start := r.opts.Now()
		matches, err := r.evaluate(ctx, rule)
		took := r.opts.Now().Sub(start)
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

// parse reads a rules file as Load reads each, refusing an id given twice.
func parse(file string, data []byte, labelKept func(string) bool) ([]*rules.Rule, []*rules.Error) {
	parsed, errs := rules.Parse(file, data, rules.ParseOptions{LabelKept: labelKept})
	out := make([]*rules.Rule, 0, len(parsed))
	first := map[string]*rules.Rule{}
	for _, rule := range parsed {
		if prev, ok := first[rule.ID]; ok {
			errs = append(errs, &rules.Error{File: file, Line: rule.Source.Line, RuleID: rule.ID,
				Detail: fmt.Sprintf("Duplicate value: %q: first defined at %s", rule.ID, prev.Position())})
			continue
		}
		first[rule.ID] = rule
		out = append(out, rule)
	}
	return out, errs
}

// Check reads a rules file as a load would, without a database: its
// fields, and that each SELECT is one statement that reads. Whether the
// sandbox takes what it reads and calls, only a daemon can tell
// (Evaluate). labelKept, when not nil, says which label keys the mirror
// keeps.
func Check(file string, data []byte, labelKept func(string) bool) []api.RuleError {
	parsed, errs := parse(file, data, labelKept)
	lexer := &rules.Evaluator{Sandbox: lexOnly{}}
	for _, rule := range parsed {
		if err := lexer.Check(context.Background(), rule); err != nil {
			errs = append(errs, err)
		}
	}
	out := make([]api.RuleError, len(errs))
	for i, e := range errs {
		out[i] = RuleError(e)
	}
	return out
}

// lexOnly is a sandbox that only reads a statement as the sandbox's lexer
// does: one statement, a query.
type lexOnly struct{}

func (lexOnly) Validate(_ context.Context, query string, _ map[string]any) (db.RuleColumns, error) {
	_, err := db.RuleStatement(query)
	return db.RuleColumns{}, err
}

func (lexOnly) Query(context.Context, string, map[string]any, time.Time) ([]db.RuleMatch, error) {
	return nil, errors.New("a rule check runs no query")
}
