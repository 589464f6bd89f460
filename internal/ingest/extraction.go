package ingest

import (
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/refs"
)

// extractionVersion names what this kubegcd extracts of the resources it
// reads in full. Bump it when that changes, so that a database written
// before is listed again rather than resumed.
const extractionVersion = "1"

// typedResourceOf is how the resource gr is read when kubegcd keeps more
// of its objects than metadata: typed columns, references, a Secret's type.
func typedResourceOf(gr schema.GroupResource) (typedResource, bool) {
	for _, m := range []map[schema.GroupResource]typedResource{typedResources, referrerResources, tableResources} {
		if t, ok := m[gr]; ok {
			return t, true
		}
	}
	return typedResource{}, false
}

// secrets is the one resource whose bodies must never reach kubegcd.
var secrets = schema.GroupResource{Resource: "secrets"}

// extraction is what a watcher keeps of each object beyond its metadata:
// typed fields and references (typed), references by declared paths,
// and the kept labels and annotations. The object is dropped afterwards.
type extraction struct {
	src                 source
	typed               func(runtime.Object, *db.Object)
	paths               []refs.Path
	apiVersion, kind    string
	labels, annotations keySet
	// fingerprints, stored with the resource (db.Resource).
	extracted, keptKeys string

	log *slog.Logger
	// pathErrors counts the objects a declared path could not read; the
	// first is logged.
	pathErrors atomic.Int64
	onError    func()
}

// extractionOf decides how the resource gvr, of kind, is read and what is
// kept of its objects.
func (i *Ingester) extractionOf(gvr schema.GroupVersionResource, kind, label string) *extraction {
	gr := gvr.GroupResource()
	x := &extraction{
		apiVersion: gvr.GroupVersion().String(), kind: kind,
		labels:      i.opts.MirrorLabels.keysFor(gvr.Group, gvr.Resource, db.KeptLabelKeys),
		annotations: i.opts.MirrorAnnotations.keysFor(gvr.Group, gvr.Resource, db.KeptAnnotationKeys),
		log:         i.log.With("resource", label),
		onError:     func() { i.metrics.errors.WithLabelValues(label, "extract").Inc() },
	}
	if gr == secrets {
		x.annotations.never = lastApplied
	}
	x.keptKeys = "labels=" + x.labels.fingerprint() + ";annotations=" + x.annotations.fingerprint()
	var fingerprint []string
	typed, isTyped := typedResourceOf(gr)
	if isTyped {
		x.typed = typed.extract
		fingerprint = append(fingerprint, extractionVersion)
	}
	if gr != secrets {
		x.paths = i.pathsOf(gvr.Group, kind)
		for _, p := range x.paths {
			fingerprint = append(fingerprint, p.String()+scopeWord(p.TargetClusterScoped))
		}
	}
	x.extracted = strings.Join(fingerprint, ";")
	switch {
	case isTyped:
		x.src = typed.source(i, gvr)
	case len(x.paths) > 0:
		x.src = dynamicSourceOf(i, gvr)
	default:
		x.src = metadataSource(i.metadata.Resource(gvr))
	}
	return x
}

func scopeWord(clusterScoped bool) string {
	if clusterScoped {
		return " cluster-scoped"
	}
	return ""
}

// pathsOf returns the declared paths of the kind group/kind, each compiled
// anew (a JSONPath is not safe for concurrent use) and told whether its
// target kind is cluster-scoped, as the last discovery found it.
func (i *Ingester) pathsOf(group, kind string) []refs.Path {
	var out []refs.Path
	for _, p := range i.opts.ReferencePaths {
		if p.Group != group || p.Kind != kind {
			continue
		}
		if err := p.Compile(); err != nil {
			i.log.Warn("reference path does not compile", "path", p.String(), "err", err)
			continue
		}
		i.mu.Lock()
		namespaced, known := i.kindScopes[schema.GroupKind{Group: p.TargetGroup, Kind: p.TargetKind}]
		i.mu.Unlock()
		p.TargetClusterScoped = known && !namespaced
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b refs.Path) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// setKindScopes records whether each kind discovery found is namespaced,
// for the declared paths' targets.
func (i *Ingester) setKindScopes(found map[schema.GroupVersionResource]resourceInfo) {
	scopes := make(map[schema.GroupKind]bool, len(found))
	for gvr, info := range found {
		scopes[schema.GroupKind{Group: gvr.Group, Kind: info.kind}] = info.namespaced
	}
	i.mu.Lock()
	i.kindScopes = scopes
	i.mu.Unlock()
}

// extract fills o with what x keeps of obj. convert has checked that obj
// has metadata.
func (x *extraction) extract(obj runtime.Object, o *db.Object) {
	if m, ok := obj.(metav1.Object); ok {
		o.Labels = x.labels.keep(m.GetLabels())
		o.Annotations = x.annotations.keep(m.GetAnnotations())
	}
	if x.typed != nil {
		x.typed(obj, o)
	}
	if len(x.paths) > 0 {
		x.pathRefs(obj, o)
	}
}

// pathRefs adds the references the declared paths find in obj.
func (x *extraction) pathRefs(obj runtime.Object, o *db.Object) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			x.pathError(err)
			return
		}
		u = &unstructured.Unstructured{Object: m}
	}
	if u.GetKind() == "" {
		u.SetAPIVersion(x.apiVersion)
		u.SetKind(x.kind)
	}
	found, err := refs.OfUnstructured(u, x.paths)
	if err != nil {
		x.pathError(err)
	}
	o.Refs = append(o.Refs, dbRefs(found)...)
}

func (x *extraction) pathError(err error) {
	x.onError()
	if x.pathErrors.Add(1) == 1 {
		x.log.Warn("a declared reference path cannot read an object; "+
			"kubegcd_ingest_errors_total{operation=\"extract\"} counts the others", "err", err)
	}
}
