package reconcile

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// NewMetadataClient returns the metadata client the controllers write
// through. It differs from client-go's in one way: a delete of a built-in
// kind sends its DeleteOptions as protobuf, as a typed client does.
// client-go's metadata client always sends them as JSON, which an API
// server serving custom resources needed once; decoding that JSON was the
// largest part of the extra CPU kube-apiserver spent on each of kubegcd's
// deletes against a typed client's. Custom and aggregated kinds keep JSON.
//
// Both clients share one HTTP client and one client-side rate limiter, so
// cfg's QPS and burst bound them together.
func NewMetadataClient(cfg *rest.Config) (metadata.Interface, error) {
	cfg = sharedLimiter(metadata.ConfigFor(cfg))
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return newMetadataClient(cfg, hc)
}

// sharedLimiter sets cfg's rate limiter, if it has none, to the one
// rest.RESTClientFor would build for a client alone.
func sharedLimiter(cfg *rest.Config) *rest.Config {
	if cfg.RateLimiter != nil {
		return cfg
	}
	qps, burst := cfg.QPS, cfg.Burst
	if qps == 0 {
		qps = rest.DefaultQPS
	}
	if burst == 0 {
		burst = rest.DefaultBurst
	}
	if qps > 0 {
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(qps, burst)
	}
	return cfg
}

func newMetadataClient(cfg *rest.Config, hc *http.Client) (metadata.Interface, error) {
	inner, err := metadata.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, err
	}
	rcfg := rest.CopyConfig(cfg)
	rcfg.GroupVersion = &schema.GroupVersion{}
	rcfg.APIPath = "/" // every request names its whole path
	rc, err := rest.RESTClientForConfigAndClient(rcfg, hc)
	if err != nil {
		return nil, err
	}
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		return nil, fmt.Errorf("client-go has no protobuf serializer")
	}
	// Versioned "v1", whatever the group, as client-go's metadata client
	// sends them in JSON and a typed core client in protobuf.
	enc := scheme.Codecs.EncoderForVersion(info.Serializer, schema.GroupVersion{Version: "v1"})
	return &protoDeletes{Interface: inner, rest: rc, encoder: enc}, nil
}

// protoDeletes is a metadata client whose deletes of built-in kinds speak
// protobuf.
type protoDeletes struct {
	metadata.Interface
	rest rest.Interface
	// encoder writes DeleteOptions as protobuf.
	encoder runtime.Encoder
	// jsonOnly holds the resources whose API server refused a protobuf
	// body (415): their deletes go as JSON from then on.
	jsonOnly sync.Map
}

// Resource returns the resource's client; its deletes go through d.
func (d *protoDeletes) Resource(gvr schema.GroupVersionResource) metadata.Getter {
	g := d.Interface.Resource(gvr)
	return protoGetter{protoResource: protoResource{ResourceInterface: g, d: d, gvr: gvr}, inner: g}
}

type protoGetter struct {
	protoResource
	inner metadata.Getter
}

func (g protoGetter) Namespace(ns string) metadata.ResourceInterface {
	return protoResource{ResourceInterface: g.inner.Namespace(ns), d: g.d, gvr: g.gvr, namespace: ns}
}

type protoResource struct {
	metadata.ResourceInterface
	d         *protoDeletes
	gvr       schema.GroupVersionResource
	namespace string
}

// Delete sends opts as protobuf when the kind is built in and its API
// server has not refused that; otherwise as client-go's metadata client
// does.
func (r protoResource) Delete(ctx context.Context, name string, opts metav1.DeleteOptions,
	subresources ...string) error {
	if !r.d.protobufFor(r.gvr) || name == "" {
		return r.ResourceInterface.Delete(ctx, name, opts, subresources...)
	}
	body, err := runtime.Encode(r.d.encoder, &opts)
	if err != nil {
		return err
	}
	err = r.d.rest.Delete().
		AbsPath(resourcePath(r.gvr, r.namespace, name, subresources)...).
		SetHeader("Content-Type", runtime.ContentTypeProtobuf).
		Body(body).
		Do(ctx).
		Error()
	if apierrors.IsUnsupportedMediaType(err) || apierrors.IsNotAcceptable(err) {
		r.d.jsonOnly.Store(r.gvr, true)
		return r.ResourceInterface.Delete(ctx, name, opts, subresources...)
	}
	return err
}

// protobufFor reports whether a delete of gvr may send protobuf: its group
// and version are built into client-go (so kube-apiserver serves them
// itself) and no API server refused protobuf for it.
func (d *protoDeletes) protobufFor(gvr schema.GroupVersionResource) bool {
	if !scheme.Scheme.IsVersionRegistered(gvr.GroupVersion()) {
		return false
	}
	_, refused := d.jsonOnly.Load(gvr)
	return !refused
}

// resourcePath is the path of an object in segments, as client-go's
// metadata client builds it.
func resourcePath(gvr schema.GroupVersionResource, namespace, name string, subresources []string) []string {
	parts := []string{"/api", gvr.Version}
	if gvr.Group != "" {
		parts = []string{"/apis", gvr.Group, gvr.Version}
	}
	if namespace != "" {
		parts = append(parts, "namespaces", namespace)
	}
	parts = append(parts, gvr.Resource, name)
	return append(parts, subresources...)
}
