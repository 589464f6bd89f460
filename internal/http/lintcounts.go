package http

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/kubegcd/kubegcd/internal/diagnose"
)

// DefaultLintCountsMaxAge is how old the lint counts may grow before a
// request or a scrape that reads them has them counted anew
// (--lint-counts-max-age).
const DefaultLintCountsMaxAge = 30 * time.Second

// lintCountInline: while a count of the whole mirror takes less than this,
// each reader has it made anew and waits for it, so that the counts agree
// with the findings read beside them; only a mirror whose count takes
// longer is counted in the background.
const lintCountInline = 50 * time.Millisecond

// LintCounter keeps the latest count of the lint findings of the whole
// mirror (diagnose.CountLint), which GET /lint and kubegcd_ownerref_findings
// show. Where a count is quick (its last pass took less than
// lintCountInline: most mirrors), each reader waits for a pass made for it,
// as if it counted itself, but one pass serves every reader that arrives
// while it runs. Where it is not (it reads every lint candidate: about 1 s
// at a million objects), it is made in the background, never on a
// request's path once one exists: a reader that finds the count older than
// maxAge starts one pass (one at a time however many ask) and is answered
// at once with the count it found, whose time it shows. Before the first
// count, a reader waits for that first pass.
type LintCounter struct {
	src    diagnose.LintSource
	maxAge time.Duration
	log    *slog.Logger
	now    func() time.Time
	// inline is lintCountInline; 0 counts in the background always.
	inline time.Duration

	mu sync.Mutex
	// ctx bounds every pass: Start's, else context.Background().
	ctx    context.Context
	counts *diagnose.LintCounts // nil before the first pass that succeeded
	// took is how long the last pass that succeeded took, by now.
	took time.Duration
	// pass is closed when the pass under way ends; nil when none runs.
	pass chan struct{}
	// err is the error of the last pass, kept while there is no count.
	err error
}

// NewLintCounter returns a counter of src's findings that recounts when
// its count is maxAge old. src should read the whole mirror through
// connections that do not map the file (see Options.MetricsDB). Until
// Start, the first reader makes the first pass.
func NewLintCounter(src diagnose.LintSource, maxAge time.Duration, logger *slog.Logger) *LintCounter {
	if logger == nil {
		logger = slog.Default()
	}
	return &LintCounter{src: src, maxAge: maxAge, log: logger, now: time.Now, inline: lintCountInline, ctx: context.Background()}
}

// Start makes the first pass in the background, so that the first request
// need not wait for it, and makes ctx bound every pass: their reads end
// with it.
func (c *LintCounter) Start(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ctx = ctx
	c.startPass()
}

// Wait returns the count, waiting for the first pass while there is none
// (until ctx ends; a first pass that failed is the error). Once there is
// one, it waits for a pass only while passes are quick; otherwise a count
// older than maxAge is answered and a recount started.
func (c *LintCounter) Wait(ctx context.Context) (*diagnose.LintCounts, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts != nil && c.took < c.inline {
		if err := c.waitPass(ctx); err != nil {
			return nil, err
		}
		// A failed pass leaves the count before it, which says how old
		// it is.
		return c.counts, nil
	}
	for c.counts == nil {
		if err := c.waitPass(ctx); err != nil {
			return nil, err
		}
		if c.counts == nil && c.err != nil {
			return nil, c.err
		}
	}
	if c.now().Sub(c.counts.At) >= c.maxAge {
		c.startPass()
	}
	return c.counts, nil
}

// waitPass starts a pass unless one runs and waits for it to end, or for
// ctx. c.mu is held, and released while it waits.
func (c *LintCounter) waitPass(ctx context.Context) error {
	c.startPass()
	pass := c.pass
	c.mu.Unlock()
	defer c.mu.Lock()
	select {
	case <-pass:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// startPass starts a pass unless one runs. c.mu is held.
func (c *LintCounter) startPass() {
	if c.pass != nil {
		return
	}
	pass := make(chan struct{})
	c.pass = pass
	ctx, at := c.ctx, c.now()
	go func() {
		defer close(pass)
		counts, err := diagnose.CountLint(ctx, c.src, at)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.pass = nil
		if err != nil {
			c.err = err
			if ctx.Err() == nil {
				// A count kept is still the best answer: it says how old
				// it is.
				c.log.Error("counting the lint findings", "err", err, "kept_from", keptFrom(c.counts))
			}
			return
		}
		c.counts, c.err, c.took = counts, nil, c.now().Sub(at)
		c.log.Debug("counted the lint findings", "took", c.took)
	}()
}

// keptFrom is the time of the count kept, for the log: none before the
// first.
func keptFrom(counts *diagnose.LintCounts) any {
	if counts == nil {
		return "none"
	}
	return counts.At
}
