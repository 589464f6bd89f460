package rules

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegcd/kubegcd/internal/db"
)

// Sandbox runs rules' SQL where it can only read the views: a
// *db.Sandbox.
type Sandbox interface {
	Validate(ctx context.Context, query string, params map[string]any) (db.RuleColumns, error)
	Query(ctx context.Context, query string, params map[string]any, now time.Time) ([]db.RuleMatch, error)
}

// Evaluator runs rules through a sandbox.
type Evaluator struct {
	Sandbox Sandbox
	// Now is the clock :now comes from; nil is time.Now.
	Now func() time.Time
}

// Evaluate runs one pass of r. It returns the rows r matched (findings
// among them, marked), how long the pass took, and, when it failed, why:
// errors.Is tells db.ErrRuleTimeLimit, db.ErrRuleRowCap, db.ErrRuleDenied
// and the others apart. A failed pass matches nothing.
func (e *Evaluator) Evaluate(ctx context.Context, r *Rule) ([]db.RuleMatch, time.Duration, error) {
	now := time.Now
	if e.Now != nil {
		now = e.Now
	}
	start := time.Now()
	q, err := r.Query()
	if err == nil && q != r.Select {
		// The exclusions join on the rule's uid column: a rule without
		// one must say so, not fail as the join.
		_, err = e.Sandbox.Validate(ctx, r.Select, r.Params)
	}
	var matches []db.RuleMatch
	if err == nil {
		matches, err = e.Sandbox.Query(ctx, q, r.Params, now())
	}
	if err != nil {
		matches = nil
	}
	return matches, time.Since(start), err
}

// Check prepares r's SELECT on the sandbox without running it, as Load
// does: the error, if any, names the rule's select field and its line.
func (e *Evaluator) Check(ctx context.Context, r *Rule) *Error {
	_, err := e.Sandbox.Validate(ctx, r.Select, r.Params)
	if err == nil {
		var q string
		if q, err = r.Query(); err == nil && q != r.Select {
			_, err = e.Sandbox.Validate(ctx, q, r.Params)
		}
	}
	if err == nil {
		return nil
	}
	path, line := "select", r.lines["select"]
	if r.path != "" {
		path = r.path + ".select"
	}
	if r.Source.BuiltIn {
		// An override's select is the built-in's: point at the entry.
		path, line = r.path, r.Source.Line
	}
	return &Error{File: r.Source.File, Line: line, RuleID: r.ID, Field: path,
		Detail: field.Invalid(nil, field.OmitValueType{}, err.Error()).ErrorBody()}
}
