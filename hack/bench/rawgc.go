package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
)

// pacedWorkers is the number of workers of a paced raw contender. They
// share one token bucket.
const pacedWorkers = 32

// rawContender is one way of deleting the dependents with plain client
// calls, for the ownership-GC benchmark to compare kubegcd with.
type rawContender struct {
	// workers delete in parallel, with no client-side limit unless paced.
	workers int
	// paced throttles the workers together to the deletions/s kubegcd
	// measured at the same size.
	paced bool
}

// parseRaw parses --raw: comma-separated worker counts, or "paced".
func parseRaw(s string) ([]rawContender, error) {
	var cs []rawContender
	seen := map[rawContender]bool{}
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		var c rawContender
		if f == "paced" {
			c = rawContender{workers: pacedWorkers, paced: true}
		} else {
			n, err := strconv.Atoi(f)
			if err != nil || n <= 0 {
				return nil, fmt.Errorf("%q is neither a positive worker count nor \"paced\"", f)
			}
			c = rawContender{workers: n}
		}
		if seen[c] {
			return nil, fmt.Errorf("%q is listed twice", f)
		}
		seen[c] = true
		cs = append(cs, c)
	}
	return cs, nil
}

// slug names the contender in namespaces and file names.
func (c rawContender) slug() string {
	if c.paced {
		return "paced"
	}
	return strconv.Itoa(c.workers)
}

// name is the contender's row in the results table. rate is the pace of a
// paced contender, in deletions/s.
func (c rawContender) name(rate float64) string {
	if c.paced {
		return fmt.Sprintf("raw deletes paced to kubegcd (%.0f/s)", rate)
	}
	return fmt.Sprintf("raw deletes (%d workers)", c.workers)
}

// column is the contender's column in the accounting table.
func (c rawContender) column() string {
	return "raw " + c.slug()
}

// limiter returns the token bucket shared by a paced contender's workers,
// or nil for a contender with no client-side limit. Its burst is one: the
// workers never run ahead of rate.
func (c rawContender) limiter(rate float64, clk flowcontrol.Clock) (flowcontrol.RateLimiter, error) {
	if !c.paced {
		return nil, nil
	}
	if rate <= 0 {
		return nil, fmt.Errorf("cannot pace raw deletes to %.1f deletions/s", rate)
	}
	return flowcontrol.NewTokenBucketRateLimiterWithClock(float32(rate), 1, clk), nil
}

// rawDeletes deletes every dependent in ns with parallel clients: the
// floor any collector works against. It returns the times from its first
// delete call to its first and its last completed delete.
func rawDeletes(ctx context.Context, kube kubernetes.Interface, ns string, workers int, limiter flowcontrol.RateLimiter,
	begin func()) (first, last time.Duration, err error) {
	var names []string
	cont := ""
	for {
		l, err := kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 5000, Continue: cont})
		if err != nil {
			return 0, 0, err
		}
		for _, cm := range l.Items {
			if len(cm.OwnerReferences) > 0 {
				names = append(names, cm.Name)
			}
		}
		if cont = l.Continue; cont == "" {
			break
		}
	}
	begin() // after listing: only the deletions are timed
	return deleteAll(ctx, clock.RealClock{}, names, workers, limiter, func(ctx context.Context, name string) error {
		return kube.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{})
	})
}

// deleteAll calls del for every name from workers goroutines, each call
// after a token of limiter if it is not nil. It returns the times, read
// from clk, from its start to the first and the last call returned.
func deleteAll(ctx context.Context, clk clock.PassiveClock, names []string, workers int, limiter flowcontrol.RateLimiter,
	del func(context.Context, string) error) (first, last time.Duration, err error) {
	t0 := clk.Now()
	var firstOnce sync.Once
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(names) {
					return
				}
				if limiter != nil {
					limiter.Accept()
				}
				if err := del(ctx, names[i]); err != nil {
					errs <- err
					return
				}
				firstOnce.Do(func() { first = clk.Since(t0) })
			}
		})
	}
	wg.Wait()
	last = clk.Since(t0)
	close(errs)
	return first, last, <-errs
}

// rawSummary describes the raw contenders in the benchmark's header.
func rawSummary(cs []rawContender) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		if c.paced {
			parts[i] = fmt.Sprintf("%d workers paced to kubegcd's deletions/s", c.workers)
		} else {
			parts[i] = fmt.Sprintf("%d workers", c.workers)
		}
	}
	return strings.Join(parts, ", ") + "; no client-side limit unless paced"
}
