package ingest

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1alpha2 "k8s.io/api/coordination/v1alpha2"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	fakediscovery "k8s.io/client-go/discovery/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubegcd/kubegcd/internal/db/dbtest"
)

// fakeDiscovery answers discovery from a list of group/versions, in the
// order kube-apiserver lists a group's versions (by priority: v1, v1beta1,
// v1alpha2), the first one of a group being its preferred version.
type fakeDiscovery struct {
	*fakediscovery.FakeDiscovery
}

func newFakeDiscovery(lists ...*metav1.APIResourceList) fakeDiscovery {
	return fakeDiscovery{&fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{Resources: lists}}}
}

// ServerPreferredResources chooses as client-go's discovery client does;
// the fake's own returns nothing.
func (f fakeDiscovery) ServerPreferredResources() ([]*metav1.APIResourceList, error) {
	return discovery.ServerPreferredResources(f)
}

var (
	gcVerbs         = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	configmapsV1    = resourceList("v1", "configmaps", "ConfigMap", gcVerbs)
	leasesV1        = resourceList("coordination.k8s.io/v1", "leases", "Lease", gcVerbs)
	leaseCandidates = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leasecandidates"}
)

func resourceList(groupVersion, resource, kind string, verbs metav1.Verbs) *metav1.APIResourceList {
	return &metav1.APIResourceList{GroupVersion: groupVersion, APIResources: []metav1.APIResource{
		{Name: resource, Kind: kind, Namespaced: true, Verbs: verbs},
		{Name: resource + "/status", Kind: kind, Namespaced: true, Verbs: metav1.Verbs{"get", "patch", "update"}}}}
}

func candidatesOf(version string) *metav1.APIResourceList {
	return resourceList("coordination.k8s.io/"+version, "leasecandidates", "LeaseCandidate", gcVerbs)
}

// TestLeaseCandidateVersion: discovery picks v1beta1 when both versions are
// served, v1alpha2 when only it is, and nothing when neither is; the
// chosen version is read through its own typed client, and a version
// client-go has no types for through the dynamic client.
func TestLeaseCandidateVersion(t *testing.T) {
	ing, err := New(Options{Config: offlineConfig, DB: dbtest.Open(t).Mirror(), Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		lists []*metav1.APIResourceList
		want  string // the version chosen, "" for none
	}{
		{"both served", []*metav1.APIResourceList{configmapsV1, leasesV1, candidatesOf("v1beta1"), candidatesOf("v1alpha2")}, "v1beta1"},
		{"v1beta1 alone", []*metav1.APIResourceList{configmapsV1, leasesV1, candidatesOf("v1beta1")}, "v1beta1"},
		{"v1alpha2 alone", []*metav1.APIResourceList{configmapsV1, leasesV1, candidatesOf("v1alpha2")}, "v1alpha2"},
		{"not served", []*metav1.APIResourceList{configmapsV1, leasesV1}, ""},
		// A later release's GA version, which client-go has no types for.
		{"v1 too", []*metav1.APIResourceList{configmapsV1, {GroupVersion: "coordination.k8s.io/v1",
			APIResources: append(slices.Clone(leasesV1.APIResources), candidatesOf("v1").APIResources...)}, candidatesOf("v1beta1")}, "v1"},
		{"served without delete", []*metav1.APIResourceList{configmapsV1, leasesV1,
			resourceList("coordination.k8s.io/v1beta1", "leasecandidates", "LeaseCandidate", metav1.Verbs{"get", "list", "watch"})}, ""},
	} {
		found, failed, err := deletableResources(newFakeDiscovery(tc.lists...))
		if err != nil || len(failed) > 0 {
			t.Fatalf("%s: discovery: %v, failed groups %v", tc.name, err, failed)
		}
		var versions []string
		for gvr, info := range found {
			if gvr.GroupResource() != leaseCandidates {
				continue
			}
			versions = append(versions, gvr.Version)
			if info.kind != "LeaseCandidate" || !info.namespaced {
				t.Errorf("%s: %s is %+v, want a namespaced LeaseCandidate", tc.name, gvr, info)
			}
			tr, ok := typedResources[leaseCandidates]
			if !ok {
				t.Fatalf("%s: LeaseCandidates are not a typed resource", tc.name)
			}
			src := tr.source(ing, gvr)
			var typed bool
			switch gvr.Version {
			case "v1beta1":
				_, typed = src.(clientSource[*coordinationv1beta1.LeaseCandidateList])
			case "v1alpha2":
				_, typed = src.(clientSource[*coordinationv1alpha2.LeaseCandidateList])
			default:
				_, typed = src.(clientSource[*unstructured.UnstructuredList])
			}
			if !typed {
				t.Errorf("%s: %s is read through %T, want its typed client, or the dynamic one", tc.name, gvr, src)
			}
		}
		want := []string{}
		if tc.want != "" {
			want = []string{tc.want}
		}
		if strings.Join(versions, ",") != strings.Join(want, ",") {
			t.Errorf("%s: versions chosen %q, want %q", tc.name, versions, want)
		}
		if _, ok := found[schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}]; !ok {
			t.Errorf("%s: Leases not found", tc.name)
		}
	}
}

// TestLeaseCandidatesQuiet: a discovery without LeaseCandidates, or with
// two versions of them, logs nothing above debug about the resource absent
// or the version not chosen.
func TestLeaseCandidatesQuiet(t *testing.T) {
	for _, tc := range []struct {
		name    string
		lists   []*metav1.APIResourceList
		watched []string // the LeaseCandidate versions watched
		silent  string   // what no record above debug may mention
	}{
		{"not served", []*metav1.APIResourceList{configmapsV1, leasesV1}, nil, "leasecandidates"},
		{"both served", []*metav1.APIResourceList{configmapsV1, leasesV1, candidatesOf("v1beta1"), candidatesOf("v1alpha2")},
			[]string{"v1beta1"}, "v1alpha2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			ing, err := New(Options{Config: offlineConfig, DB: dbtest.Open(t).Mirror(), Registerer: prometheus.NewRegistry(),
				Logger: slog.New(&recordingHandler{rec: rec, level: slog.LevelDebug})})
			if err != nil {
				t.Fatal(err)
			}
			ing.discovery = newFakeDiscovery(tc.lists...)
			if err := ing.resync(t.Context()); err != nil {
				t.Fatal(err)
			}
			defer ing.stopAll()
			var watched []string
			for _, r := range ing.Resources() {
				if r.Group == leaseCandidates.Group && r.Resource.Resource == leaseCandidates.Resource {
					watched = append(watched, r.Version)
				}
			}
			if strings.Join(watched, ",") != strings.Join(tc.watched, ",") {
				t.Errorf("LeaseCandidate versions watched %q, want %q", watched, tc.watched)
			}
			// The Leases' watcher fails to list from this offline config:
			// its warning shows records above debug are caught.
			waitFor(t, 10*time.Second, func() error {
				for _, l := range rec.lines() {
					if strings.HasPrefix(l, "WARN list failed") && strings.Contains(l, "coordination.k8s.io/leases") {
						return nil
					}
				}
				return fmt.Errorf("no warning of the Leases' failed list in %q", rec.lines())
			})
			for _, l := range rec.lines() {
				if !strings.HasPrefix(l, "DEBUG ") && strings.Contains(l, tc.silent) {
					t.Errorf("logged above debug: %s", l)
				}
			}
		})
	}
}

// recorder keeps log records as lines: "LEVEL message key=value...".
type recorder struct {
	mu       sync.Mutex
	recorded []string
}

func (r *recorder) add(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recorded = append(r.recorded, line)
}

func (r *recorder) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.recorded...)
}

// recordingHandler writes every record at or above its level to rec.
type recordingHandler struct {
	rec   *recorder
	level slog.Level
	attrs []slog.Attr
}

func (h *recordingHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	line := r.Level.String() + " " + r.Message
	for _, a := range h.attrs {
		line += " " + a.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		line += " " + a.String()
		return true
	})
	h.rec.add(line)
	return nil
}

func (h *recordingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &recordingHandler{rec: h.rec, level: h.level, attrs: append(append([]slog.Attr{}, h.attrs...), attrs...)}
}

func (h *recordingHandler) WithGroup(string) slog.Handler { return h }
