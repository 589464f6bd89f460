// Package promutil makes kubegcd's metrics: each one is named
// kubegcd_<subsystem>_<name> and registered with the daemon's registry.
package promutil

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"k8s.io/client-go/util/workqueue"
)

// Factory makes the metrics of one subsystem.
type Factory struct {
	f         promauto.Factory
	subsystem string
}

// With returns the factory of one subsystem's metrics, which it registers
// with reg; a nil reg (tests, tools) registers nothing. A name registered
// twice panics, as promauto does: that is a defect of the daemon, not a
// condition to handle.
func With(reg prometheus.Registerer, subsystem string) Factory {
	return Factory{f: promauto.With(reg), subsystem: subsystem}
}

// Counter makes kubegcd_<subsystem>_<name>.
func (f Factory) Counter(name, help string) prometheus.Counter {
	return f.f.NewCounter(prometheus.CounterOpts{Namespace: "kubegcd", Subsystem: f.subsystem, Name: name, Help: help})
}

// CounterVec makes kubegcd_<subsystem>_<name> with labels.
func (f Factory) CounterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return f.f.NewCounterVec(prometheus.CounterOpts{Namespace: "kubegcd", Subsystem: f.subsystem, Name: name, Help: help}, labels)
}

// Gauge makes kubegcd_<subsystem>_<name>.
func (f Factory) Gauge(name, help string) prometheus.Gauge {
	return f.f.NewGauge(prometheus.GaugeOpts{Namespace: "kubegcd", Subsystem: f.subsystem, Name: name, Help: help})
}

// GaugeVec makes kubegcd_<subsystem>_<name> with labels.
func (f Factory) GaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return f.f.NewGaugeVec(prometheus.GaugeOpts{Namespace: "kubegcd", Subsystem: f.subsystem, Name: name, Help: help}, labels)
}

// Histogram makes kubegcd_<subsystem>_<name> with buckets.
func (f Factory) Histogram(name, help string, buckets []float64) prometheus.Histogram {
	return f.f.NewHistogram(prometheus.HistogramOpts{Namespace: "kubegcd", Subsystem: f.subsystem, Name: name, Help: help, Buckets: buckets})
}

// HistogramVec makes kubegcd_<subsystem>_<name> with buckets and labels.
func (f Factory) HistogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return f.f.NewHistogramVec(prometheus.HistogramOpts{Namespace: "kubegcd", Subsystem: f.subsystem, Name: name, Help: help, Buckets: buckets}, labels)
}

// QueueDepth gives client-go's work queues (their MetricsProvider) one
// gauge, kubegcd_<subsystem>_queue_depth: how many items wait in them,
// labelled queue=<the queue's name> when byQueue. The queues' other
// metrics (adds, latency, retries) are not exported.
func (f Factory) QueueDepth(help string, byQueue bool) workqueue.MetricsProvider {
	p := queueDepth{}
	if byQueue {
		p.vec = f.GaugeVec("queue_depth", help, "queue")
	} else {
		p.one = f.Gauge("queue_depth", help)
	}
	return p
}

type queueDepth struct {
	noopQueueMetrics
	one prometheus.Gauge
	vec *prometheus.GaugeVec
}

func (q queueDepth) NewDepthMetric(name string) workqueue.GaugeMetric {
	if q.vec != nil {
		return q.vec.WithLabelValues(name)
	}
	return q.one
}

// noopQueueMetrics is every queue metric left out.
type noopQueueMetrics struct{}

type noopMetric struct{}

func (noopMetric) Inc()            {}
func (noopMetric) Dec()            {}
func (noopMetric) Set(float64)     {}
func (noopMetric) Observe(float64) {}

func (noopQueueMetrics) NewDepthMetric(string) workqueue.GaugeMetric       { return noopMetric{} }
func (noopQueueMetrics) NewAddsMetric(string) workqueue.CounterMetric      { return noopMetric{} }
func (noopQueueMetrics) NewLatencyMetric(string) workqueue.HistogramMetric { return noopMetric{} }
func (noopQueueMetrics) NewWorkDurationMetric(string) workqueue.HistogramMetric {
	return noopMetric{}
}
func (noopQueueMetrics) NewUnfinishedWorkSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noopMetric{}
}
func (noopQueueMetrics) NewLongestRunningProcessorSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noopMetric{}
}
func (noopQueueMetrics) NewRetriesMetric(string) workqueue.CounterMetric { return noopMetric{} }
