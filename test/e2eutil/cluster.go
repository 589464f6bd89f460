package e2eutil

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"github.com/kubegcd/kubegcd/internal/testcluster"
)

// ControlPlane is the etcd + kube-apiserver a test package's TestMain
// starts, with the clients its tests share.
type ControlPlane struct {
	*testcluster.Cluster
	Kube kubernetes.Interface
	Dyn  dynamic.Interface
	Meta metadata.Interface
}

// StartControlPlane starts a control plane with opts, giving it three
// minutes to serve.
func StartControlPlane(opts testcluster.Options) (*ControlPlane, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := testcluster.Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &ControlPlane{
		Cluster: c,
		Kube:    kubernetes.NewForConfigOrDie(c.Config),
		Dyn:     dynamic.NewForConfigOrDie(c.Config),
		Meta:    metadata.NewForConfigOrDie(c.Config),
	}, nil
}

// Metric returns the sum of the samples of metric name whose labels
// include every one given as "k=v", from a Prometheus text exposition
// (0 when there is none).
func Metric(body []byte, name string, labels ...string) float64 {
	var sum float64
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), name)
		if !ok || rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		matches := true
		for _, l := range labels {
			k, v, _ := strings.Cut(l, "=")
			matches = matches && strings.Contains(rest, k+`="`+v+`"`)
		}
		f := strings.Fields(rest[strings.LastIndex(rest, "}")+1:])
		if !matches || len(f) == 0 {
			continue
		}
		if v, err := strconv.ParseFloat(f[0], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// Metric reads one of the daemon's metrics, as the package Metric does.
func (d *Daemon) Metric(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	code, body, err := d.Get("/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("/metrics: %d %v", code, err)
	}
	return Metric(body, name, labels...)
}
