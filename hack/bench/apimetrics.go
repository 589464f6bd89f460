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
// resource), so each list names both.
var apiSeries = []struct {
	metric, table string
	labels        []string
}{
	{"apiserver_request_total", "request", []string{"verb", "resource", "subresource", "code"}},
	{"apiserver_watch_events_total", "watch events", []string{"kind", "resource"}},
	{"apiserver_watch_events_sizes_sum", "watch bytes", []string{"kind", "resource"}},
	{"etcd_request_duration_seconds_count", "etcd", []string{"operation", "type", "resource"}},
}

// minPerObject and minBytesPerObject are the smallest count and size
// per deleted object the accounting table prints a row for: background
// traffic (Lease renewals, the API server's own controllers) stays under
// them.
const (
	minPerObject      = 0.005
	minBytesPerObject = 1
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
			if name != s.metric {
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
	tableOf := func(key string) string {
		for _, s := range apiSeries {
			if key == s.table || strings.HasPrefix(key, s.table+" ") {
				return s.table
			}
		}
		return key
	}
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
		largest := 0.0
		for _, r := range results {
			largest = max(largest, math.Abs(r.api[k]/float64(r.n)))
		}
		limit, format := minPerObject, " %12.3f"
		if tableOf(k) == "watch bytes" {
			limit, format = minBytesPerObject, " %12.0f"
		}
		if largest < limit {
			small++
			continue
		}
		fmt.Fprintf(w, "%-44s", k)
		for _, r := range results {
			fmt.Fprintf(w, format, r.api[k]/float64(r.n))
		}
		fmt.Fprintln(w)
	}
	if small > 0 {
		fmt.Fprintf(w, "(%d more series under %.3f, or %d watch bytes, per deletion for every contender)\n", small, minPerObject, minBytesPerObject)
	}
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
