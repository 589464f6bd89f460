package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/auditpeers"
	"github.com/kubegcd/kubegcd/internal/auditsink"
	"github.com/kubegcd/kubegcd/internal/db"
	kubehttp "github.com/kubegcd/kubegcd/internal/http"
	"github.com/kubegcd/kubegcd/internal/ingest"
	"github.com/kubegcd/kubegcd/internal/liveness"
	"github.com/kubegcd/kubegcd/internal/reconcile/cleanup"
)

// MetricDoc is one metric family kubegcd run exports, as its reference
// shows it.
type MetricDoc struct {
	Name string
	// Type is counter, gauge, histogram or summary.
	Type string
	Help string
	// Labels are the labels each series sets; ConstLabels those whose
	// value is the same for every series of the process.
	Labels, ConstLabels []string
}

// Metrics returns every metric family kubegcd run exports, sorted by name,
// for the tools that document them (hack/gendocs). It builds the daemon's
// parts with the constructors run uses, with run's default flags and every
// controller, so that a metric added to a part is documented without more
// code. It needs no cluster: the parts get a throwaway database in dir and
// a server URL that none of them asks, since none of them runs.
func Metrics(ctx context.Context, dir string) ([]MetricDoc, error) {
	f := newRunFlags()
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	f.groups.AddTo(fs)
	cfg, err := f.complete(fs)
	if err != nil {
		return nil, err
	}
	cfg.controllers = api.Controllers
	logger := slog.New(slog.DiscardHandler)
	restCfg := &rest.Config{Host: "https://127.0.0.1:1"}

	// A descriptor says no type. Every metric that is not a vector says it
	// in its one series; the vectors, which have none before their first
	// use, are told apart by their Go type as they are registered.
	reg := prometheus.NewRegistry()
	vecs := &vecTypes{Registerer: reg, types: map[string]string{}}
	registerRuntimeMetrics(vecs)
	store, err := db.Open(ctx, filepath.Join(dir, "kubegcd.db"), db.Options{Registerer: vecs})
	if err != nil {
		return nil, err
	}
	defer store.Close()
	loops := liveness.New(nil)
	ing, err := ingest.New(ingest.Options{
		Config:            restCfg,
		Heartbeat:         loops.Loop("ingest discovery", cfg.discoveryInterval),
		DB:                store.Mirror(),
		Logger:            logger,
		Registerer:        vecs,
		DiscoveryInterval: cfg.discoveryInterval,
	})
	if err != nil {
		return nil, err
	}
	mayWrite := func() error { return nil }
	ctrls, err := startControllers(cfg, restCfg, store, ing, vecs, logger, "docs", mayWrite, loops)
	if err != nil {
		return nil, err
	}
	ctrls.stop()
	cleanup.New(cleanup.Options{Store: store.Rules(), Logger: logger, Registerer: vecs})
	auditpeers.New(auditpeers.Config{Identity: "docs", Registerer: vecs}, store.AuditPeers())
	auditsink.NewMetrics(vecs)
	handler, err := kubehttp.NewHandler(kubehttp.Options{
		DB:         store.Reads(),
		MetricsDB:  store.Objects(),
		Logger:     logger,
		Registry:   reg,
		StuckAfter: cfg.stuckAfter,

		DeletedCopiesMaxBytes: cfg.deletedCopiesMaxBytes,
	})
	if err != nil {
		return nil, err
	}
	// The API's own metrics: one request for its latency's series, and a
	// mirror with one stuck deletion and one owned object for the counts'.
	handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequestWithContext(ctx, http.MethodGet, "/healthz", nil))
	if err := seedMirror(ctx, store); err != nil {
		return nil, err
	}
	return describe(reg, vecs.types)
}

// vecTypes registers into a registry and notes the type of each vector.
type vecTypes struct {
	prometheus.Registerer
	types map[string]string // by descriptor
}

func (v *vecTypes) Register(c prometheus.Collector) error {
	if err := v.Registerer.Register(c); err != nil {
		return err
	}
	var typ string
	switch c.(type) {
	case *prometheus.CounterVec:
		typ = "counter"
	case *prometheus.GaugeVec:
		typ = "gauge"
	case *prometheus.HistogramVec:
		typ = "histogram"
	case *prometheus.SummaryVec:
		typ = "summary"
	default:
		return nil
	}
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		v.types[d.String()] = typ
	}
	return nil
}

func (v *vecTypes) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := v.Register(c); err != nil {
			panic(err)
		}
	}
}

// seedMirror writes a ConfigMap whose deletion was asked long ago and one
// it owns.
func seedMirror(ctx context.Context, store *db.DB) error {
	id, err := store.Mirror().EnsureResource(ctx,
		db.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		return err
	}
	asked := time.Unix(0, 0).UTC()
	owner := &db.Object{UID: "owner", APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "owner",
		CreationTimestamp: &asked, DeletionTimestamp: &asked, Finalizers: []string{"example.com/hold"}}
	owned := &db.Object{UID: "owned", APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "owned",
		CreationTimestamp: &asked,
		OwnerReferences:   []api.OwnerRef{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "owner"}}}
	_, err = store.Mirror().ApplyEvents(ctx,
		[]db.Event{{ResourceID: id, Object: owner}, {ResourceID: id, Object: owned}})
	return err
}

// describe is every family reg describes, typed by its series or by types.
func describe(reg *prometheus.Registry, types map[string]string) ([]MetricDoc, error) {
	families, err := reg.Gather()
	if err != nil {
		return nil, err
	}
	gathered := map[string]string{}
	for _, f := range families {
		gathered[f.GetName()] = strings.ToLower(f.GetType().String())
	}
	// A registry is a collector too: Describe yields every descriptor.
	ch := make(chan *prometheus.Desc)
	go func() { reg.Describe(ch); close(ch) }()
	var docs []MetricDoc
	for d := range ch {
		m, err := parseDesc(d.String())
		if err != nil {
			return nil, err
		}
		if m.Type = types[d.String()]; m.Type == "" {
			m.Type = gathered[m.Name]
		}
		if m.Type == "" {
			return nil, fmt.Errorf("metric %s: no series and not a vector, so no type known", m.Name)
		}
		docs = append(docs, m)
	}
	slices.SortFunc(docs, func(a, b MetricDoc) int { return strings.Compare(a.Name, b.Name) })
	return docs, nil
}

// descPattern reads what prometheus.Desc.String prints, which is the only
// way to a descriptor's parts.
var (
	descPattern = regexp.MustCompile(`^Desc\{fqName: ("(?:[^"\\]|\\.)*"), help: ("(?:[^"\\]|\\.)*"), ` +
		`unit: "(?:[^"\\]|\\.)*", constLabels: \{(.*)\}, variableLabels: \{(.*)\}\}$`)
	constLabelPattern = regexp.MustCompile(`(?:^|,)([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"`)
)

func parseDesc(s string) (MetricDoc, error) {
	p := descPattern.FindStringSubmatch(s)
	if p == nil {
		return MetricDoc{}, fmt.Errorf("unexpected descriptor %s", s)
	}
	name, err := strconv.Unquote(p[1])
	if err != nil {
		return MetricDoc{}, fmt.Errorf("descriptor %s: %w", s, err)
	}
	help, err := strconv.Unquote(p[2])
	if err != nil {
		return MetricDoc{}, fmt.Errorf("descriptor %s: %w", s, err)
	}
	m := MetricDoc{Name: name, Help: help}
	for _, l := range constLabelPattern.FindAllStringSubmatch(p[3], -1) {
		m.ConstLabels = append(m.ConstLabels, l[1])
	}
	if p[4] != "" {
		for _, l := range strings.Split(p[4], ",") {
			// A constrained label prints as c(name).
			m.Labels = append(m.Labels, strings.TrimSuffix(strings.TrimPrefix(l, "c("), ")"))
		}
	}
	return m, nil
}
