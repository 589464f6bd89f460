package e2eutil

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
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

// StartNamespaceController runs kube-controller-manager's namespace
// controller alone on c until the end of the test, giving it a minute to
// start: it empties Terminating namespaces and removes their spec
// finalizer once they are empty.
func StartNamespaceController(t *testing.T, c *testcluster.Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	halt, err := c.StartControllerManager(ctx, "--controllers=namespace")
	if err != nil {
		t.Fatalf("starting kube-controller-manager: %v", err)
	}
	t.Cleanup(func() {
		if err := halt(); err != nil {
			t.Errorf("kube-controller-manager: %v", err)
		}
	})
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

// RequestCounts are an API server's counts of requests by response code
// ("200", "404", "409", ...).
type RequestCounts map[string]float64

// Sum adds the counts of codes, or of every code when none is given.
func (c RequestCounts) Sum(codes ...string) float64 {
	var sum float64
	if len(codes) == 0 {
		for _, n := range c {
			sum += n
		}
		return sum
	}
	for _, code := range codes {
		sum += c[code]
	}
	return sum
}

// APIDeletes reads from the API server's own /metrics how many DELETE
// requests for resource (a plural: "pods") it has answered, by response
// code.
func APIDeletes(t *testing.T, kube kubernetes.Interface, resource string) RequestCounts {
	t.Helper()
	return APIRequests(t, kube, "DELETE", resource)
}

// APIRequests is APIDeletes for any verb (GET, LIST, PATCH…).
func APIRequests(t *testing.T, kube kubernetes.Interface, verb, resource string) RequestCounts {
	t.Helper()
	body, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("the API server's /metrics: %v", err)
	}
	c, err := requestCounts(body, verb, resource)
	if err != nil {
		t.Fatalf("the API server's /metrics: %v", err)
	}
	return c
}

// requestCounts sums the samples of apiserver_request_total, a Prometheus
// text exposition, for verb and resource by their code label.
func requestCounts(body []byte, verb, resource string) (RequestCounts, error) {
	const name = "apiserver_request_total{"
	c := RequestCounts{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), name)
		if !ok {
			continue
		}
		end := strings.LastIndexByte(rest, '}')
		if end < 0 {
			return nil, fmt.Errorf("no end to the labels of %q", sc.Text())
		}
		labels, err := parseLabels(rest[:end])
		if err != nil {
			return nil, fmt.Errorf("%q: %w", sc.Text(), err)
		}
		if labels["verb"] != verb || labels["resource"] != resource {
			continue
		}
		f := strings.Fields(rest[end+1:])
		if len(f) == 0 {
			return nil, fmt.Errorf("no value in %q", sc.Text())
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", sc.Text(), err)
		}
		c[labels["code"]] += v
	}
	return c, sc.Err()
}

// parseLabels reads the label pairs of a sample, k1="v1",k2="v2", the
// values with the exposition format's escapes.
func parseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	for s != "" {
		k, rest, ok := strings.Cut(s, `="`)
		if !ok {
			return nil, fmt.Errorf("a label without a value at %q", s)
		}
		var v strings.Builder
		i := 0
		for ; i < len(rest) && rest[i] != '"'; i++ {
			if rest[i] == '\\' && i+1 < len(rest) {
				i++
				switch rest[i] {
				case 'n':
					v.WriteByte('\n')
				default:
					v.WriteByte(rest[i])
				}
				continue
			}
			v.WriteByte(rest[i])
		}
		if i == len(rest) {
			return nil, fmt.Errorf("label %s: no closing quote", k)
		}
		out[strings.TrimSpace(k)] = v.String()
		s = strings.TrimPrefix(strings.TrimSpace(rest[i+1:]), ",")
	}
	return out, nil
}
