package reconcile

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// deleteRequest is what the fake API server saw of one DELETE.
type deleteRequest struct {
	Path        string
	ContentType string
	Options     metav1.DeleteOptions
}

// fakeDeletes is an API server that answers every DELETE with answer and
// decodes each body as kube-apiserver's delete handler does.
type fakeDeletes struct {
	t      *testing.T
	answer func(r *http.Request) (int, *metav1.Status)
	mu     sync.Mutex
	seen   []deleteRequest
}

func (f *fakeDeletes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodDelete {
		http.Error(w, "only DELETE", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		f.t.Errorf("reading the body: %v", err)
	}
	code, st := f.answer(r)
	if code == http.StatusOK {
		// As the handler: the body is negotiated among the meta codecs
		// and decoded to meta.k8s.io/v1 DeleteOptions.
		info, ok := runtime.SerializerInfoForMediaType(metainternalversionscheme.Codecs.SupportedMediaTypes(), r.Header.Get("Content-Type"))
		if !ok {
			f.t.Errorf("%s: no serializer for %q", r.URL.Path, r.Header.Get("Content-Type"))
			return
		}
		opts := &metav1.DeleteOptions{}
		defaultGVK := metav1.SchemeGroupVersion.WithKind("DeleteOptions")
		if _, _, err := metainternalversionscheme.Codecs.DecoderToVersion(info.Serializer, defaultGVK.GroupVersion()).Decode(body, &defaultGVK, opts); err != nil {
			f.t.Errorf("%s: the delete handler would refuse the body: %v", r.URL.Path, err)
		}
		opts.TypeMeta = metav1.TypeMeta{}
		f.mu.Lock()
		f.seen = append(f.seen, deleteRequest{Path: r.URL.Path, ContentType: r.Header.Get("Content-Type"), Options: *opts})
		f.mu.Unlock()
		st = &metav1.Status{Status: metav1.StatusSuccess}
	}
	st.Kind, st.APIVersion, st.Code = "Status", "v1", int32(code)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(st)
}

func (f *fakeDeletes) requests() []deleteRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]deleteRequest(nil), f.seen...)
}

func newFakeDeletes(t *testing.T, answer func(r *http.Request) (int, *metav1.Status)) (*fakeDeletes, *rest.Config) {
	f := &fakeDeletes{t: t, answer: answer}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, &rest.Config{Host: srv.URL, QPS: -1}
}

func accept(*http.Request) (int, *metav1.Status) { return http.StatusOK, nil }

// Deletes of built-in kinds send protobuf that kube-apiserver's handler
// decodes to the same options; custom kinds keep JSON.
func TestMetadataClientDeleteEncoding(t *testing.T) {
	f, cfg := newFakeDeletes(t, accept)
	mc, err := NewMetadataClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	uid, rv := types.UID("u-1"), "42"
	bg, fg := metav1.DeletePropagationBackground, metav1.DeletePropagationForeground
	withPre := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}, PropagationPolicy: &bg}
	grace := int64(0)
	cases := []struct {
		name      string
		gvr       schema.GroupVersionResource
		namespace string
		opts      metav1.DeleteOptions
		want      deleteRequest
	}{
		{"core, namespaced", schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "ns", withPre,
			deleteRequest{Path: "/api/v1/namespaces/ns/configmaps/obj", ContentType: runtime.ContentTypeProtobuf, Options: withPre}},
		{"core, cluster-scoped", schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, "",
			metav1.DeleteOptions{PropagationPolicy: &fg, GracePeriodSeconds: &grace},
			deleteRequest{Path: "/api/v1/nodes/obj", ContentType: runtime.ContentTypeProtobuf,
				Options: metav1.DeleteOptions{PropagationPolicy: &fg, GracePeriodSeconds: &grace}}},
		{"group", schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "ns", withPre,
			deleteRequest{Path: "/apis/apps/v1/namespaces/ns/deployments/obj", ContentType: runtime.ContentTypeProtobuf, Options: withPre}},
		{"beta version of a group", schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1beta1", Resource: "leasecandidates"}, "ns", withPre,
			deleteRequest{Path: "/apis/coordination.k8s.io/v1beta1/namespaces/ns/leasecandidates/obj", ContentType: runtime.ContentTypeProtobuf, Options: withPre}},
		{"custom resource", schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, "ns", withPre,
			deleteRequest{Path: "/apis/example.com/v1/namespaces/ns/widgets/obj", ContentType: runtime.ContentTypeJSON, Options: withPre}},
		{"version a built-in group does not have", schema.GroupVersionResource{Group: "apps", Version: "v1alpha9", Resource: "things"}, "", withPre,
			deleteRequest{Path: "/apis/apps/v1alpha9/things/obj", ContentType: runtime.ContentTypeJSON, Options: withPre}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(f.requests())
			var err error
			if tc.namespace != "" {
				err = mc.Resource(tc.gvr).Namespace(tc.namespace).Delete(context.Background(), "obj", tc.opts)
			} else {
				err = mc.Resource(tc.gvr).Delete(context.Background(), "obj", tc.opts)
			}
			if err != nil {
				t.Fatal(err)
			}
			got := f.requests()[before:]
			if diff := cmp.Diff([]deleteRequest{tc.want}, got); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

// An API server that refuses protobuf for a resource gets the delete
// again as JSON, and every later delete of that resource as JSON at once.
func TestMetadataClientFallsBackToJSON(t *testing.T) {
	for _, code := range []int{http.StatusUnsupportedMediaType, http.StatusNotAcceptable} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			refused := 0
			var mu sync.Mutex
			f, cfg := newFakeDeletes(t, func(r *http.Request) (int, *metav1.Status) {
				if r.Header.Get("Content-Type") == runtime.ContentTypeProtobuf && r.URL.Path != "/api/v1/namespaces/ns/pods/p" {
					mu.Lock()
					refused++
					mu.Unlock()
					return code, &metav1.Status{Status: metav1.StatusFailure, Reason: reasonFor(code)}
				}
				return accept(r)
			})
			mc, err := NewMetadataClient(cfg)
			if err != nil {
				t.Fatal(err)
			}
			cms := mc.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("ns")
			for range 3 {
				if err := cms.Delete(context.Background(), "c", metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			pods := mc.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace("ns")
			if err := pods.Delete(context.Background(), "p", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			var types []string
			for _, r := range f.requests() {
				types = append(types, r.ContentType)
			}
			want := []string{runtime.ContentTypeJSON, runtime.ContentTypeJSON, runtime.ContentTypeJSON, runtime.ContentTypeProtobuf}
			if diff := cmp.Diff(want, types); diff != "" || refused != 1 {
				t.Errorf("refused %d protobuf deletes (want 1); accepted content types (-want +got):\n%s", refused, diff)
			}
		})
	}
}

func reasonFor(code int) metav1.StatusReason {
	if code == http.StatusNotAcceptable {
		return metav1.StatusReasonNotAcceptable
	}
	return metav1.StatusReasonUnsupportedMediaType
}

// Errors of a protobuf delete read as client-go's would: a conflict is a
// conflict, a missing object names itself, an unserved path names nothing.
func TestMetadataClientDeleteErrors(t *testing.T) {
	_, cfg := newFakeDeletes(t, func(r *http.Request) (int, *metav1.Status) {
		switch r.URL.Path {
		case "/api/v1/namespaces/ns/configmaps/conflict":
			return http.StatusConflict, &metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonConflict,
				Details: &metav1.StatusDetails{Name: "conflict", Kind: "configmaps"}}
		case "/api/v1/namespaces/ns/configmaps/missing":
			return http.StatusNotFound, &metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonNotFound,
				Details: &metav1.StatusDetails{Name: "missing", Kind: "configmaps"}}
		}
		return http.StatusNotFound, &metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonNotFound}
	})
	mc, err := NewMetadataClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cms := mc.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("ns")
	ctx := context.Background()
	if err := cms.Delete(ctx, "conflict", metav1.DeleteOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("conflict: got %v, want a conflict", err)
	}
	if err := cms.Delete(ctx, "missing", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) || PathNotServed(err, "missing") {
		t.Errorf("missing object: got %v, want a 404 that names it", err)
	}
	if err := cms.Delete(ctx, "elsewhere", metav1.DeleteOptions{}); !PathNotServed(err, "elsewhere") {
		t.Errorf("unserved path: got %v, want a 404 that names nothing", err)
	}
}

// The two clients share one rate limiter, built as client-go would build
// each one's.
func TestMetadataClientSharedLimiter(t *testing.T) {
	cases := []struct {
		qps   float32
		burst int
		want  float32 // 0: no limiter
	}{
		{qps: 0, burst: 0, want: rest.DefaultQPS},
		{qps: 500, burst: 1000, want: 500},
		{qps: -1, burst: 0, want: 0},
	}
	for _, tc := range cases {
		cfg := sharedLimiter(&rest.Config{QPS: tc.qps, Burst: tc.burst})
		switch {
		case tc.want == 0 && cfg.RateLimiter != nil:
			t.Errorf("QPS %v: got a limiter, want none", tc.qps)
		case tc.want != 0 && (cfg.RateLimiter == nil || cfg.RateLimiter.QPS() != tc.want):
			t.Errorf("QPS %v: got %v, want a limiter at %v", tc.qps, cfg.RateLimiter, tc.want)
		}
	}
}
