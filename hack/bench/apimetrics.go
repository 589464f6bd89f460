package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"

	"k8s.io/client-go/rest"
)

// apiSeries are the series of kube-apiserver's /metrics that the
// ownership-GC benchmark diffs around each contender. Each is keyed by its
// table's name and the values of the labels listed that it has; series that
// differ only in other labels (version, scope, component, dry_run, le) are
// summed. Releases differ in some label names (kind or resource, type or
// resource), so each list names both. The accounting table prints a row
// when some contender's value per deletion, times scale, reaches min.
var apiSeries = []apiSeriesSpec{
	{metric: "apiserver_request_total", table: "request", labels: []string{"verb", "resource", "subresource", "code"}},
	{metric: "apiserver_watch_events_total", table: "watch events", labels: []string{"kind", "resource"}},
	{metric: "apiserver_watch_events_sizes_sum", table: "watch bytes", labels: []string{"kind", "resource"},
		min: minBytesPerObject, format: " %12.0f"},
	{metric: "etcd_request_duration_seconds_count", table: "etcd", labels: []string{"operation", "type", "resource"}},
	// The time kube-apiserver spent on the requests and the time it waited
	// for etcd, per deletion. With one DELETE per deletion, that is the
	// mean latency of a DELETE. A watch is left out: it is counted when it
	// ends, with its whole life.
	{metric: "apiserver_request_duration_seconds_sum", table: "request ms",
		labels: []string{"verb", "resource", "subresource"}, skipVerbs: []string{"WATCH", "CONNECT"},
		scale: 1000, min: minMsPerObject, format: " %12.1f"},
	{metric: "etcd_request_duration_seconds_sum", table: "etcd ms", labels: []string{"operation", "type", "resource"},
		scale: 1000, min: minMsPerObject, format: " %12.1f"},
}

// apiSeriesSpec is one entry of apiSeries. A zero scale, min or format is
// 1, minPerObject and " %12.3f".
type apiSeriesSpec struct {
	metric, table string
	labels        []string
	// skipVerbs are verb label values whose samples are left out.
	skipVerbs []string
	scale     float64
	min       float64
	format    string
}

// minPerObject, minBytesPerObject and minMsPerObject are the smallest
// count, size and time per deleted object the accounting table prints a
// row for: background traffic (Lease renewals, the API server's own
// controllers) stays under them.
const (
	minPerObject      = 0.005
	minBytesPerObject = 1
	minMsPerObject    = 0.5
)

// apiCounts are the apiSeries values of one scrape, or the difference of
// two, by key ("request DELETE configmaps 200", "etcd delete configmaps").
type apiCounts map[string]float64

// parseAPIMetrics reads the apiSeries out of a Prometheus text exposition.
func parseAPIMetrics(r io.Reader) (apiCounts, error) {
	counts := apiCounts{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, labels, value, err := parseSample(line)
		if err != nil {
			return nil, err
		}
		for _, s := range apiSeries {
			if name != s.metric || slices.Contains(s.skipVerbs, labels["verb"]) {
				continue
			}
			key := []string{s.table}
			for _, l := range s.labels {
				if v := labels[l]; v != "" {
					key = append(key, v)
				}
			}
			counts[strings.Join(key, " ")] += value
		}
	}
	return counts, sc.Err()
}

// parseSample splits one sample line, `name{a="x",b="y"} value [timestamp]`.
func parseSample(line string) (name string, labels map[string]string, value float64, err error) {
	end := strings.IndexAny(line, "{ ")
	if end <= 0 {
		return "", nil, 0, fmt.Errorf("metrics: no value in %q", line)
	}
	name, rest := line[:end], line[end:]
	labels = map[string]string{}
	if rest[0] == '{' {
		rest = rest[1:]
		for {
			rest = strings.TrimLeft(rest, " ,")
			if strings.HasPrefix(rest, "}") {
				rest = rest[1:]
				break
			}
			label, after, ok := strings.Cut(rest, `="`)
			if !ok || label == "" {
				return "", nil, 0, fmt.Errorf("metrics: bad labels in %q", line)
			}
			var v strings.Builder
			i := 0
			for ; i < len(after) && after[i] != '"'; i++ {
				c := after[i]
				if c == '\\' && i+1 < len(after) {
					i++
					switch after[i] {
					case 'n':
						c = '\n'
					default:
						c = after[i] // \" and \\
					}
				}
				v.WriteByte(c)
			}
			if i == len(after) {
				return "", nil, 0, fmt.Errorf("metrics: unterminated label value in %q", line)
			}
			labels[label] = v.String()
			rest = after[i+1:]
		}
	}
	f := strings.Fields(rest)
	if len(f) < 1 || len(f) > 2 {
		return "", nil, 0, fmt.Errorf("metrics: no value in %q", line)
	}
	if value, err = strconv.ParseFloat(f[0], 64); err != nil {
		return "", nil, 0, fmt.Errorf("metrics: %q: %w", line, err)
	}
	return name, labels, value, nil
}

// since returns c minus before, leaving out the keys that did not change.
func (c apiCounts) since(before apiCounts) apiCounts {
	d := apiCounts{}
	for k, v := range c {
		if diff := v - before[k]; diff != 0 {
			d[k] = diff
		}
	}
	return d
}

// controlPlane reads kube-apiserver's /metrics and CPU profiles with the
// cluster's admin credentials.
type controlPlane struct {
	host   string
	client *http.Client
}

func newControlPlane(cfg *rest.Config) (*controlPlane, error) {
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return &controlPlane{host: cfg.Host, client: c}, nil
}

func (cp *controlPlane) get(ctx context.Context, path, accept string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cp.host+path, nil)
	if err != nil {
		return nil, err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := cp.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %.200s", path, resp.Status, body)
	}
	return body, nil
}

// metrics scrapes the apiSeries.
func (cp *controlPlane) metrics(ctx context.Context) (apiCounts, error) {
	body, err := cp.get(ctx, "/metrics", "text/plain;version=0.0.4")
	if err != nil {
		return nil, err
	}
	return parseAPIMetrics(bytes.NewReader(body))
}

// profile writes a CPU profile of kube-apiserver over the next seconds to
// path.
func (cp *controlPlane) profile(ctx context.Context, seconds int, path string) error {
	body, err := cp.get(ctx, "/debug/pprof/profile?seconds="+strconv.Itoa(seconds), "")
	if err != nil {
		return err
	}
	return os.WriteFile(path, body, 0o644)
}

// accountingTable writes, for each contender, its apiSeries changes per
// deleted object, one row per key. Rows under minPerObject for every
// contender are counted in a closing line instead.
func accountingTable(w io.Writer, results []gcResult) {
	keys := map[string]bool{}
	for _, r := range results {
		for k := range r.api {
			keys[k] = true
		}
	}
	order := map[string]int{}
	for i, s := range apiSeries {
		order[s.table] = i
	}
	tableOf := func(key string) string { return specOf(key).table }
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	slices.SortFunc(sorted, func(a, b string) int {
		return cmp.Or(cmp.Compare(order[tableOf(a)], order[tableOf(b)]), strings.Compare(a, b))
	})

	fmt.Fprintf(w, "%-44s", "kube-apiserver's accounting per deletion")
	for _, r := range results {
		fmt.Fprintf(w, " %12s", columnName(r))
	}
	fmt.Fprintln(w)
	small := 0
	for _, k := range sorted {
		spec := specOf(k)
		scale, limit, format := cmp.Or(spec.scale, 1), cmp.Or(spec.min, minPerObject), cmp.Or(spec.format, " %12.3f")
		largest := 0.0
		for _, r := range results {
			largest = max(largest, math.Abs(scale*r.api[k]/float64(r.n)))
		}
		if largest < limit {
			small++
			continue
		}
		fmt.Fprintf(w, "%-44s", k)
		for _, r := range results {
			fmt.Fprintf(w, format, scale*r.api[k]/float64(r.n))
		}
		fmt.Fprintln(w)
	}
	if small > 0 {
		fmt.Fprintf(w, "(%d more series under %.3f, %d watch bytes or %.1f ms per deletion for every contender)\n",
			small, minPerObject, minBytesPerObject, minMsPerObject)
	}
}

// specOf returns the apiSeries entry a key of apiCounts comes from: the
// one with the longest table name the key starts with ("etcd ms" before
// "etcd").
func specOf(key string) apiSeriesSpec {
	var best apiSeriesSpec
	for _, s := range apiSeries {
		if (key == s.table || strings.HasPrefix(key, s.table+" ")) && len(s.table) > len(best.table) {
			best = s
		}
	}
	if best.table == "" {
		best.table = key
	}
	return best
}

// columnName fits a contender's name into the accounting table's columns.
func columnName(r gcResult) string {
	switch {
	case r.column != "":
		return r.column
	case strings.HasPrefix(r.name, "raw"):
		return "raw"
	case r.name == "kube-controller-manager":
		return "kcm"
	}
	return r.name
}
