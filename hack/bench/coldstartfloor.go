package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"mime"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/ptr"
)

// The coldstart benchmark's floor: what the API server takes to hand this
// process every object kubegcd mirrors, as a paginated list and as a
// WatchList, with nothing kept.

const (
	// metadataListAccept is the Accept header of client-go's metadata
	// client's lists. The probe of each resource's format sends it.
	metadataListAccept = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1," +
		"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
	// watchListSeconds bounds each WatchList; the initial events of a
	// million objects come well within it.
	watchListSeconds = 1800
)

// ignoredColdstartResources are the resources kubegcd does not mirror
// (ingest's ignoredResources).
var ignoredColdstartResources = map[schema.GroupResource]bool{
	{Group: "", Resource: "events"}:              true,
	{Group: "events.k8s.io", Resource: "events"}: true,
}

// apiListCounts is what kube-apiserver counts of the lists it serves.
type apiListCounts struct {
	// watchLists is the WatchLists served. cacheLists is the lists served
	// from the watch cache, and cacheFetched the cached objects they went
	// through. A page of a paginated list goes through every object after
	// its start, not only its own. expired is the lists refused with 410
	// Gone: a continue token older than etcd's last compaction, after
	// which a paginated list starts over.
	watchLists, cacheLists, cacheFetched, expired float64
}

// discover finds the resources kubegcd lists: the preferred version of
// every resource that supports delete, list and watch, but events, as
// ingest's deletableResources does.
func (b *coldstartBench) discover(ctx context.Context) error {
	lists, err := b.disc.ServerPreferredResources()
	if err != nil {
		return fmt.Errorf("discovery: %w", err)
	}
	b.resources = nil
	deletable := discovery.SupportsAllVerbs{Verbs: []string{"delete", "list", "watch"}}
	for _, l := range discovery.FilteredBy(deletable, lists) {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if gvr := gv.WithResource(r.Name); !ignoredColdstartResources[gvr.GroupResource()] {
				b.resources = append(b.resources, gvr)
			}
		}
	}
	slices.SortFunc(b.resources, func(a, c schema.GroupVersionResource) int {
		return cmp.Or(cmp.Compare(a.Group, c.Group), cmp.Compare(a.Resource, c.Resource))
	})
	if len(b.resources) == 0 {
		return errors.New("discovery found no resource to list")
	}
	return ctx.Err()
}

// resourcePath is the path of a resource across all namespaces.
func resourcePath(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return "/api/" + gvr.Version + "/" + gvr.Resource
	}
	return "/apis/" + gvr.Group + "/" + gvr.Version + "/" + gvr.Resource
}

// formats asks each resource for a one-item metadata list, with the
// metadata client's Accept header, and says which formats came back.
func (b *coldstartBench) formats(ctx context.Context) (string, error) {
	byFormat := map[string][]string{}
	for _, gvr := range b.resources {
		var ct string
		err := b.raw.Get().AbsPath(resourcePath(gvr)).Param("limit", "1").SetHeader("Accept", metadataListAccept).
			Do(ctx).ContentType(&ct).Error()
		if err != nil {
			return "", fmt.Errorf("%s: %w", gvr, err)
		}
		format := ct
		if mt, _, err := mime.ParseMediaType(ct); err == nil {
			switch mt {
			case "application/vnd.kubernetes.protobuf":
				format = "protobuf"
			case "application/json":
				format = "JSON"
			}
		}
		byFormat[format] = append(byFormat[format], gvr.GroupResource().String())
	}
	var parts []string
	for _, f := range slices.Sorted(maps.Keys(byFormat)) {
		rs := byFormat[f]
		if len(rs) <= 5 {
			parts = append(parts, fmt.Sprintf("%s (%s)", f, strings.Join(rs, ", ")))
		} else {
			parts = append(parts, fmt.Sprintf("%s (%d resources)", f, len(rs)))
		}
	}
	return strings.Join(parts, ", "), nil
}

// watchListServed returns "" when the API server serves WatchList, else
// why not: a server without the WatchList feature gate refuses
// sendInitialEvents.
func (b *coldstartBench) watchListServed(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := b.watchListOne(ctx, schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}); err != nil {
		return "not served: " + err.Error()
	}
	return ""
}

// apiListCounts reads what kube-apiserver has counted so far of the lists
// it served, every resource summed; nil when its metrics cannot be read.
func (b *coldstartBench) apiListCounts(ctx context.Context) *apiListCounts {
	body, err := b.raw.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil
	}
	c := &apiListCounts{}
	for line := range strings.SplitSeq(string(body), "\n") {
		var dst *float64
		switch name, _, _ := strings.Cut(line, "{"); name {
		case "apiserver_watch_list_duration_seconds_count":
			dst = &c.watchLists
		case "apiserver_cache_list_total":
			dst = &c.cacheLists
		case "apiserver_cache_list_fetched_objects_total":
			dst = &c.cacheFetched
		case "apiserver_request_total":
			if !strings.Contains(line, `verb="LIST"`) || !strings.Contains(line, `code="410"`) {
				continue
			}
			dst = &c.expired
		default:
			continue
		}
		if v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err == nil {
			*dst += v
		}
	}
	return c
}

// runList is floor A: a paginated metadata list of every resource.
func (b *coldstartBench) runList(ctx context.Context, _, _ int) (coldResult, error) {
	var restarts atomic.Int64
	r, err := b.floor(ctx, func(ctx context.Context, gvr schema.GroupVersionResource) (int64, error) {
		return listOne(ctx, b.meta, gvr, &restarts)
	})
	if n := restarts.Load(); n > 0 {
		r.note = fmt.Sprintf("the list started over %d times, its continue token expired (410)", n)
	}
	return r, err
}

// runWatchList is floor B: WatchList of every resource.
func (b *coldstartBench) runWatchList(ctx context.Context, _, _ int) (coldResult, error) {
	return b.floor(ctx, b.watchListOne)
}

// floor reads every resource with one, one goroutine per resource, and
// times the whole.
func (b *coldstartBench) floor(ctx context.Context,
	one func(context.Context, schema.GroupVersionResource) (int64, error)) (r coldResult, err error) {
	self := os.Getpid()
	cpu0, err := pidCPU(self)
	if err != nil {
		return r, err
	}
	srv0 := b.serverCPU()
	begin := time.Now()
	var objects atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	for _, gvr := range b.resources {
		g.Go(func() error {
			n, err := one(gctx, gvr)
			objects.Add(n)
			if err != nil {
				return fmt.Errorf("%s: %w", gvr, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return r, err
	}
	r.elapsed = time.Since(begin)
	r.serverCPU = b.serverCPU() - srv0
	cpu1, err := pidCPU(self)
	r.cpu, r.objects = cpu1-cpu0, objects.Load()
	return r, err
}

// listOne lists one resource's metadata page by page, as kubegcd does,
// and keeps nothing but the count. As kubegcd does, it starts over, up to
// twice, when its continue token expires: a list longer than etcd's
// compaction interval (5 minutes) may outlive its resourceVersion.
func listOne(ctx context.Context, meta metadata.Interface, gvr schema.GroupVersionResource,
	restarts *atomic.Int64) (int64, error) {
	for attempt := 0; ; attempt++ {
		opts := metav1.ListOptions{Limit: coldstartPageSize}
		var n int64
		for {
			list, err := meta.Resource(gvr).List(ctx, opts)
			if (apierrors.IsResourceExpired(err) || apierrors.IsGone(err)) && opts.Continue != "" && attempt < 2 {
				restarts.Add(1)
				break
			}
			if err != nil {
				return n, err
			}
			n += int64(len(list.Items))
			if list.Continue == "" {
				return n, nil
			}
			opts.Continue = list.Continue
		}
	}
}

// watchListOne streams one resource's objects as a WatchList, as
// client-go's reflector asks for it, up to the bookmark that ends the
// initial events.
func (b *coldstartBench) watchListOne(ctx context.Context, gvr schema.GroupVersionResource) (int64, error) {
	w, err := b.meta.Resource(gvr).Watch(ctx, metav1.ListOptions{
		SendInitialEvents:    ptr.To(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		AllowWatchBookmarks:  true,
		TimeoutSeconds:       ptr.To(int64(watchListSeconds)),
	})
	if err != nil {
		return 0, err
	}
	defer w.Stop()
	var n int64
	for ev := range w.ResultChan() {
		switch ev.Type {
		case watch.Added:
			n++
		case watch.Bookmark:
			if m, err := apimeta.Accessor(ev.Object); err == nil &&
				m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
				return n, nil
			}
		case watch.Error:
			return n, apierrors.FromObject(ev.Object)
		}
	}
	return n, errors.New("the watch ended before its initial-events-end bookmark")
}
