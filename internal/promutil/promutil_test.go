package promutil

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/util/workqueue"
)

// A factory names its metrics kubegcd_<subsystem>_<name> and registers
// them; without a registry it registers nothing and does not fail.
func TestFactory(t *testing.T) {
	reg := prometheus.NewRegistry()
	f := With(reg, "sub")
	f.Counter("c_total", "A counter.").Inc()
	f.GaugeVec("g", "A gauge.", "l").WithLabelValues("x").Set(2)
	f.Histogram("h_seconds", "A histogram.", []float64{1}).Observe(0.5)
	n, err := testutil.GatherAndCount(reg, "kubegcd_sub_c_total", "kubegcd_sub_g", "kubegcd_sub_h_seconds")
	if err != nil || n != 3 {
		t.Fatalf("%d series of kubegcd_sub_* gathered (%v), want 3", n, err)
	}
	With(nil, "sub").Counter("c_total", "A counter.").Inc()
}

// The queues' depth is one gauge, by queue when asked, and follows what
// waits in each queue.
func TestQueueDepth(t *testing.T) {
	for _, byQueue := range []bool{false, true} {
		reg := prometheus.NewRegistry()
		p := With(reg, "sub").QueueDepth("Items waiting.", byQueue)
		a := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: "a", MetricsProvider: p})
		defer a.ShutDown()
		a.Add("1")
		a.Add("2")
		item, _ := a.Get()
		want := `
# HELP kubegcd_sub_queue_depth Items waiting.
# TYPE kubegcd_sub_queue_depth gauge
kubegcd_sub_queue_depth 1
`
		if byQueue {
			want = `
# HELP kubegcd_sub_queue_depth Items waiting.
# TYPE kubegcd_sub_queue_depth gauge
kubegcd_sub_queue_depth{queue="a"} 1
`
		}
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kubegcd_sub_queue_depth"); err != nil {
			t.Errorf("byQueue %v: %v", byQueue, err)
		}
		a.Done(item)
	}
}
