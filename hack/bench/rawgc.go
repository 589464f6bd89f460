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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
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
	// watched keeps a metadata-only watch of every ConfigMap open while
	// the workers delete, as a collector's mirror does.
	watched bool
	// exact deletes, besides the watch, as kubegcd does: through its
	// client, with UID and resourceVersion preconditions and background
	// propagation.
	exact bool
	// beside deletes while a kubegcd runs and mirrors the cluster; the
	// owner stays, so that kubegcd deletes nothing itself. It shows what
	// kubegcd's presence costs the control plane: its watches, and its
	// handling of each event, on the client core.
	beside bool
}

// rawKinds are the named raw contenders of --raw, besides worker counts.
const rawKinds = `"paced", "watched", "exact", "beside"`

// parseRaw parses --raw: comma-separated worker counts or rawKinds.
func parseRaw(s string) ([]rawContender, error) {
	var cs []rawContender
	seen := map[rawContender]bool{}
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		var c rawContender
		switch f {
		case "paced":
			c = rawContender{workers: pacedWorkers, paced: true}
		case "watched":
			c = rawContender{workers: pacedWorkers, watched: true}
		case "exact":
			c = rawContender{workers: pacedWorkers, watched: true, exact: true}
		case "beside":
			c = rawContender{workers: pacedWorkers, beside: true}
		default:
			n, err := strconv.Atoi(f)
			if err != nil || n <= 0 {
				return nil, fmt.Errorf("%q is neither a positive worker count nor one of %s", f, rawKinds)
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

// verdictRaw returns the index in cs of the contender kubegcd is judged
// against: the first of plain workers, with no pace, watch or kubegcd
// beside, else the first.
func verdictRaw(cs []rawContender) int {
	for i, c := range cs {
		if !c.paced && !c.watched && !c.beside {
			return i
		}
	}
	return 0
}

// slug names the contender in namespaces and file names.
func (c rawContender) slug() string {
	switch {
	case c.paced:
		return "paced"
	case c.exact:
		return "exact"
	case c.watched:
		return "watched"
	case c.beside:
		return "beside"
	}
	return strconv.Itoa(c.workers)
}

// name is the contender's row in the results table. rate is the pace of a
// paced contender, in deletions/s.
func (c rawContender) name(rate float64) string {
	switch {
	case c.paced:
		return fmt.Sprintf("raw deletes paced to kubegcd (%.0f/s)", rate)
	case c.exact:
		return fmt.Sprintf("raw deletes (%d workers) as kubegcd's", c.workers)
	case c.watched:
		return fmt.Sprintf("raw deletes (%d workers), watched", c.workers)
	case c.beside:
		return fmt.Sprintf("raw deletes (%d), kubegcd beside", c.workers)
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
func rawDeletes(ctx context.Context, kube kubernetes.Interface, meta metadata.Interface, ns string, workers int,
	limiter flowcontrol.RateLimiter, begin func()) (first, last time.Duration, err error) {
	var names []string
	objs := map[string]metav1.ObjectMeta{}
	cont := ""
	for {
		l, err := kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 5000, Continue: cont})
		if err != nil {
			return 0, 0, err
		}
		for _, cm := range l.Items {
			if len(cm.OwnerReferences) > 0 {
				names = append(names, cm.Name)
				objs[cm.Name] = metav1.ObjectMeta{UID: cm.UID, ResourceVersion: cm.ResourceVersion}
			}
		}
		if cont = l.Continue; cont == "" {
			break
		}
	}
	begin() // after listing: only the deletions are timed
	del := func(ctx context.Context, name string) error {
		return kube.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{})
	}
	if meta != nil {
		cms := meta.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns)
		bg := metav1.DeletePropagationBackground
		del = func(ctx context.Context, name string) error {
			o := objs[name]
			return cms.Delete(ctx, name, metav1.DeleteOptions{
				Preconditions:     &metav1.Preconditions{UID: &o.UID, ResourceVersion: &o.ResourceVersion},
				PropagationPolicy: &bg,
			})
		}
	}
	return deleteAll(ctx, clock.RealClock{}, names, workers, limiter, del)
}

// deleteAll calls del for every name from workers goroutines, each call
// after a token of limiter if it is not nil. It returns the times, read
// from clk, from its start to the first and the last call returned.
func deleteAll(ctx context.Context, clk clock.PassiveClock, names []string, workers int,
	limiter flowcontrol.RateLimiter, del func(context.Context, string) error) (first, last time.Duration, err error) {
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
		switch {
		case c.paced:
			parts[i] = fmt.Sprintf("%d workers paced to kubegcd's deletions/s", c.workers)
		case c.exact:
			parts[i] = fmt.Sprintf("%d workers deleting as kubegcd does "+
				"(its client, preconditions, background), watched", c.workers)
		case c.watched:
			parts[i] = fmt.Sprintf("%d workers beside a metadata-only watch of every ConfigMap", c.workers)
		case c.beside:
			parts[i] = fmt.Sprintf("%d workers while a kubegcd mirrors the cluster (their owner stays)", c.workers)
		default:
			parts[i] = fmt.Sprintf("%d workers", c.workers)
		}
	}
	return strings.Join(parts, ", ") + "; no client-side limit unless paced"
}

// watchAll keeps a metadata-only watch of every ConfigMap, in protobuf as
// kubegcd's mirror asks for it, and reads each event until stop is
// called.
func watchAll(ctx context.Context, meta metadata.Interface) (stop func(), err error) {
	ctx, cancel := context.WithCancel(ctx)
	cms := meta.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"})
	l, err := cms.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		cancel()
		return nil, err
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion, AllowWatchBookmarks: true})
	if err != nil {
		cancel()
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range w.ResultChan() {
		}
	}()
	return func() { w.Stop(); cancel(); <-done }, nil
}
