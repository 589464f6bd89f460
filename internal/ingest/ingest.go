// Package ingest mirrors the cluster into the database: it discovers every
// resource that supports list, watch and delete, lists and watches each one
// straight into SQLite, and tells subscribers what changed.
package ingest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/liveness"
	"github.com/kubegcd/kubegcd/internal/promutil"
	"github.com/kubegcd/kubegcd/internal/refs"
)

// ignoredResources are never mirrored, as upstream's garbage collector
// ignores them: events are numerous, short-lived and never owners.
var ignoredResources = map[schema.GroupResource]bool{
	{Group: "", Resource: "events"}:              true,
	{Group: "events.k8s.io", Resource: "events"}: true,
}

// Options configure an Ingester.
type Options struct {
	Config            *rest.Config
	DB                Mirror
	Logger            *slog.Logger
	Registerer        prometheus.Registerer
	DiscoveryInterval time.Duration // default 30s
	PageSize          int64         // list page size, default 500
	// WatchList lists each resource with a WatchList where the API server
	// serves one (see streamList), else page by page.
	WatchList bool
	// Heartbeat beats at every turn of the discovery loop, for the
	// watchdog; nil for none.
	Heartbeat *liveness.Loop
	// MirrorLabels and MirrorAnnotations are the labels and annotations
	// kept of each resource's objects, beside db.KeptLabelKeys and
	// db.KeptAnnotationKeys. ReferencePaths declare the references of
	// kinds kubegcd does not know; those kinds are read in full.
	MirrorLabels, MirrorAnnotations KeyAllowList
	ReferencePaths                  []refs.Path
}

// ResourceStatus is a watched resource and whether its mirror is live.
type ResourceStatus struct {
	db.Resource
	Synced bool
}

// Ingester runs discovery and one watcher per resource.
type Ingester struct {
	opts      Options
	log       *slog.Logger
	discovery discovery.DiscoveryInterface
	metadata  metadata.Interface
	dynamic   dynamic.Interface
	typed     kubernetes.Interface // protobuf
	table     rest.Interface       // the core group's Tables (table.go)
	metrics   *metrics

	mu          sync.Mutex
	watchers    map[schema.GroupVersionResource]*watcher
	discovered  bool
	subscribers []func([]db.Change)
	// failedDiscovery holds the group/versions the last discovery could
	// not read; see DiscoveryFailures.
	failedDiscovery map[string]string
	// kindScopes: whether each kind the last discovery found is
	// namespaced (see pathsOf).
	kindScopes map[schema.GroupKind]bool
}

// New prepares an Ingester; Run starts it.
func New(opts Options) (*Ingester, error) {
	if opts.DiscoveryInterval <= 0 {
		opts.DiscoveryInterval = 30 * time.Second
	}
	if opts.PageSize <= 0 {
		opts.PageSize = 500
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	cfg := rest.CopyConfig(opts.Config)
	// Lists and watches are few and long; they must not queue behind a
	// client-side limiter meant for writes.
	cfg.QPS, cfg.Burst = 200, 400
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("metadata client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	pcfg := rest.CopyConfig(cfg)
	pcfg.ContentType = runtime.ContentTypeProtobuf
	pcfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	typed, err := kubernetes.NewForConfig(pcfg)
	if err != nil {
		return nil, fmt.Errorf("typed client: %w", err)
	}
	table, err := rest.RESTClientFor(tableConfig(cfg))
	if err != nil {
		return nil, fmt.Errorf("table client: %w", err)
	}
	m := newMetrics(opts.Registerer)
	return &Ingester{
		typed:     typed,
		table:     table,
		opts:      opts,
		log:       opts.Logger,
		discovery: dc,
		metadata:  mc,
		dynamic:   dyn,
		metrics:   m,
		watchers:  map[schema.GroupVersionResource]*watcher{},
	}, nil
}

// Subscribe registers fn to be called after every committed change, on the
// goroutine that committed it: each resource's watcher and the discovery
// loop call it, several at once. fn must therefore be safe for concurrent
// use, and must not block (enqueue and return). One resource's changes
// come in the order they were committed; across resources there is no
// order.
func (i *Ingester) Subscribe(fn func([]db.Change)) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.subscribers = append(i.subscribers, fn)
}

func (i *Ingester) notify(changes []db.Change) {
	if len(changes) == 0 {
		return
	}
	i.mu.Lock()
	subs := i.subscribers
	i.mu.Unlock()
	for _, fn := range subs {
		fn(changes)
	}
}

// Synced reports whether discovery has run and every watched resource's
// mirror is live, but those the API server forbids kubegcd to read (403):
// a role that does not grant a resource, as cluster add --no-secrets
// grants no Secrets, would otherwise hold every controller for good.
// Such a resource is not mirrored, and ResourceSynced says so.
func (i *Ingester) Synced() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	if !i.discovered {
		return false
	}
	for _, w := range i.watchers {
		if !w.synced.Load() && !w.forbidden.Load() {
			return false
		}
	}
	return true
}

// CaughtUp reports whether no resource's mirror misses what the API server
// has. After an outage it is false until every watch has resumed or
// relisted. Unlike Synced, it ignores a resource that the server refuses
// to serve, such as an aggregated API that is down or a version no longer
// served. So one failing API group does not hold back everything else.
func (i *Ingester) CaughtUp() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	for _, w := range i.watchers {
		if w.behind.Load() {
			return false
		}
	}
	return true
}

// ResourceSynced reports whether the mirror of one resource (group "" is
// the core group) is live: false while it is not watched, is being listed,
// or its watch or its writes to the mirror fail. Controllers, /readyz and
// /status all read this state; the resources.synced column only mirrors it.
func (i *Ingester) ResourceSynced(group, resource string) bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	for gvr, w := range i.watchers {
		if gvr.Group == group && gvr.Resource == resource {
			return w.synced.Load()
		}
	}
	return false
}

// WaitForSync blocks until Synced or ctx ends.
func (i *Ingester) WaitForSync(ctx context.Context) error {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for !i.Synced() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// Resources lists the watched resources, sorted by group and resource.
func (i *Ingester) Resources() []ResourceStatus {
	i.mu.Lock()
	out := make([]ResourceStatus, 0, len(i.watchers))
	for _, w := range i.watchers {
		out = append(out, ResourceStatus{Resource: w.res, Synced: w.synced.Load()})
	}
	i.mu.Unlock()
	sort.Slice(out, func(a, b int) bool {
		if out[a].Group != out[b].Group {
			return out[a].Group < out[b].Group
		}
		return out[a].Resource.Resource < out[b].Resource.Resource
	})
	return out
}

// Run discovers resources now and every DiscoveryInterval, starting and
// stopping watchers to match, until ctx ends.
func (i *Ingester) Run(ctx context.Context) error {
	if err := i.opts.DB.MarkAllUnsynced(ctx); err != nil {
		return err
	}
	if err := i.forgetForeignResumePoints(ctx); err != nil {
		return err
	}
	defer i.stopAll()
	b := backoff{min: time.Second, max: i.opts.DiscoveryInterval}
	for {
		i.opts.Heartbeat.Beat()
		wait := i.opts.DiscoveryInterval
		if err := i.resync(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			i.log.Warn("discovery failed", "err", err)
			b.wait(ctx)
			continue
		}
		b.reset()
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

type resourceInfo struct {
	kind       string
	namespaced bool
	shortNames []string
}

// deletableResources returns the preferred version of every resource that
// supports delete, list and watch, as upstream's GetDeletableResources does.
// Groups whose discovery failed are returned separately so their watchers are
// kept rather than torn down on a transient error.
func deletableResources(dc discovery.DiscoveryInterface) (
	map[schema.GroupVersionResource]resourceInfo, map[schema.GroupVersion]error, error) {
	lists, err := dc.ServerPreferredResources()
	failed := map[schema.GroupVersion]error{}
	if err != nil {
		var gdf *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &gdf) {
			return nil, nil, err
		}
		for gv, gerr := range gdf.Groups {
			// Never nil: a failed group is one with an error.
			failed[gv] = cmp.Or(gerr, errors.New("discovery failed"))
		}
	}
	out := map[schema.GroupVersionResource]resourceInfo{}
	deletable := discovery.SupportsAllVerbs{Verbs: []string{"delete", "list", "watch"}}
	for _, l := range discovery.FilteredBy(deletable, lists) {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			gvr := gv.WithResource(r.Name)
			if ignoredResources[gvr.GroupResource()] {
				continue
			}
			out[gvr] = resourceInfo{kind: r.Kind, namespaced: r.Namespaced, shortNames: r.ShortNames}
		}
	}
	return out, failed, nil
}

// resync brings the set of watchers in line with discovery.
func (i *Ingester) resync(ctx context.Context) error {
	found, failed, err := deletableResources(i.discovery)
	if err != nil {
		return err
	}
	for gv, err := range failed {
		i.log.Warn("discovery failed for a group; keeping its watchers", "group", gv.String(), "err", err)
	}
	i.setDiscoveryFailures(failed)
	i.setKindScopes(found)

	i.mu.Lock()
	var stop []*watcher
	for gvr, w := range i.watchers {
		if _, ok := found[gvr]; !ok && failed[gvr.GroupVersion()] == nil {
			stop = append(stop, w)
			delete(i.watchers, gvr)
		}
	}
	var start []schema.GroupVersionResource
	for gvr := range found {
		if _, ok := i.watchers[gvr]; !ok {
			start = append(start, gvr)
		}
	}
	i.mu.Unlock()

	for _, w := range stop {
		i.log.Info("resource no longer served; forgetting it", "resource", w.label)
		w.cancel()
		<-w.done
		changes, err := i.opts.DB.DeleteResource(ctx, w.res.ID)
		if err != nil {
			return err
		}
		i.notify(changes)
	}
	for _, gvr := range start {
		info := found[gvr]
		if err := i.startWatcher(ctx, gvr, info, ""); err != nil {
			return err
		}
	}

	// Resources recorded by an earlier run and no longer served.
	known, err := i.opts.DB.Resources(ctx)
	if err != nil {
		return err
	}
	for _, r := range known {
		gvr := schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Resource}
		if _, ok := found[gvr]; ok || failed[gvr.GroupVersion()] != nil {
			continue
		}
		changes, err := i.opts.DB.DeleteResource(ctx, r.ID)
		if err != nil {
			return err
		}
		i.notify(changes)
	}

	i.mu.Lock()
	i.discovered = true
	i.mu.Unlock()
	return nil
}

func (i *Ingester) startWatcher(ctx context.Context, gvr schema.GroupVersionResource, info resourceInfo,
	startRV string) error {
	label := gvr.Resource
	if gvr.Group != "" {
		label = gvr.Group + "/" + gvr.Resource
	}
	x := i.extractionOf(gvr, info.kind, label)
	res := db.Resource{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource, Kind: info.kind,
		Namespaced: info.namespaced, ShortNames: info.shortNames, Extraction: x.extracted, KeptKeys: x.keptKeys}
	id, err := i.opts.DB.EnsureResource(ctx, res)
	if err != nil {
		return err
	}
	res.ID = id
	stored, err := i.opts.DB.ResumeVersion(ctx, id)
	if err != nil {
		return err
	}
	w := &watcher{
		res:        res,
		apiVersion: gvr.GroupVersion().String(),
		label:      label,
		pageSize:   i.opts.PageSize,
		watchList:  i.opts.WatchList,
		db:         i.opts.DB,
		log:        i.log.With("resource", label),
		notify:     i.notify,
		metrics:    i.metrics,
		stored:     stored,
		done:       make(chan struct{}),
		src:        x.src,
		typed:      x.extract,
	}
	i.metrics.synced.WithLabelValues(label).Set(0)
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w.cancel = cancel
	i.mu.Lock()
	i.watchers[gvr] = w
	i.mu.Unlock()
	go w.run(wctx, startRV)
	return nil
}

func (i *Ingester) stopAll() {
	i.mu.Lock()
	ws := make([]*watcher, 0, len(i.watchers))
	for _, w := range i.watchers {
		ws = append(ws, w)
	}
	i.mu.Unlock()
	for _, w := range ws {
		w.cancel()
	}
	for _, w := range ws {
		<-w.done
	}
}

type metrics struct {
	events  *prometheus.CounterVec
	errors  *prometheus.CounterVec
	relists *prometheus.CounterVec
	lists   *prometheus.CounterVec
	resumes *prometheus.CounterVec
	synced  *prometheus.GaugeVec
	// discoveryFailed has a series for each group/version whose last
	// discovery failed.
	discoveryFailed *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	f := promutil.With(reg, "ingest")
	return &metrics{
		events: f.CounterVec("events_total",
			"Objects written to the mirror, by resource and event type (listed, added, modified, deleted).",
			"resource", "type"),
		errors: f.CounterVec("errors_total",
			"List, watch and decode errors, by resource and operation.",
			"resource", "operation"),
		relists: f.CounterVec("relists_total",
			"Full relists after the initial one, or at a start that could not resume from the stored "+
				"resourceVersion, by resource and reason (expired, resume-stalled, write-failed).",
			"resource", "reason"),
		lists: f.CounterVec("lists_total",
			"Complete lists into the mirror, by resource and method: watchlist (a WatchList's initial "+
				"events) or paginated.",
			"resource", "method"),
		resumes: f.CounterVec("resumes_total",
			"Starts that brought a resource's mirror up to date by watching from the resourceVersion "+
				"an earlier run stored, without listing it.",
			"resource"),
		synced: f.GaugeVec("resource_synced",
			"1 when the resource's mirror is live, 0 while it is being listed or its watch is down.",
			"resource"),
		discoveryFailed: f.GaugeVec("discovery_failed",
			"1 for each API group/version whose last discovery failed (an aggregated API down): "+
				"owners of its kinds cannot be resolved.",
			"group_version"),
	}
}
