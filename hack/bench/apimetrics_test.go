package main

import (
	"bytes"
	"maps"
	"strings"
	"testing"
)

func TestParseAPIMetrics(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		want apiCounts
	}{{
		name: "requests summed over the labels left out",
		text: `# HELP apiserver_request_total [STABLE] Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="DELETE",version="v1"} 20000
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="namespace",subresource="",verb="DELETE",version="v1"} 3
apiserver_request_total{code="404",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="GET",version="v1"} 7
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PATCH",version="v1"} 1.5e+01
`,
		want: apiCounts{
			"request DELETE configmaps 200": 20003,
			"request GET configmaps 404":    7,
			"request PATCH pods status 200": 15,
		},
	}, {
		name: "watch events by resource or by kind, and their bytes",
		text: `apiserver_watch_events_total{group="",resource="configmaps",version="v1"} 40000
apiserver_watch_events_total{group="",kind="ConfigMap",version="v1"} 5
apiserver_watch_events_sizes_bucket{group="",resource="configmaps",version="v1",le="1024"} 39000
apiserver_watch_events_sizes_sum{group="",resource="configmaps",version="v1"} 1.2e+07
apiserver_watch_events_sizes_count{group="",resource="configmaps",version="v1"} 40000
`,
		want: apiCounts{
			"watch events configmaps": 40000,
			"watch events ConfigMap":  5,
			"watch bytes configmaps":  1.2e7,
		},
	}, {
		name: "etcd requests by operation and type or resource, and their time; buckets left out",
		text: `etcd_request_duration_seconds_bucket{group="",operation="delete",resource="configmaps",le="0.005"} 19000
etcd_request_duration_seconds_sum{group="",operation="delete",resource="configmaps"} 42.5
etcd_request_duration_seconds_count{group="",operation="delete",resource="configmaps"} 20000
etcd_request_duration_seconds_count{operation="get",type="/registry/configmaps"} 12 1700000000000
`,
		want: apiCounts{
			"etcd delete configmaps":        20000,
			"etcd get /registry/configmaps": 12,
			"etcd ms delete configmaps":     42.5,
		},
	}, {
		name: "the time of requests, watches and connections left out",
		text: `apiserver_request_duration_seconds_sum{component="apiserver",resource="configmaps",scope="resource",verb="DELETE",version="v1"} 640
apiserver_request_duration_seconds_sum{component="apiserver",resource="configmaps",scope="namespace",verb="DELETE",version="v1"} 0.5
apiserver_request_duration_seconds_sum{component="apiserver",resource="configmaps",scope="cluster",verb="WATCH",version="v1"} 86400
apiserver_request_duration_seconds_sum{component="apiserver",resource="pods",subresource="exec",verb="CONNECT",version="v1"} 30
apiserver_request_duration_seconds_sum{component="apiserver",resource="pods",subresource="status",verb="PATCH",version="v1"} 0.25
`,
		want: apiCounts{
			"request ms DELETE configmaps": 640.5,
			"request ms PATCH pods status": 0.25,
		},
	}, {
		name: "escaped label values",
		text: `apiserver_request_total{code="200",resource="a\"b\\c",verb="GET"} 2
`,
		want: apiCounts{`request GET a"b\c 200`: 2},
	}, {
		name: "other metrics ignored",
		text: "process_cpu_seconds_total 12.5\napiserver_request_duration_seconds_count{verb=\"GET\"} 9\n",
		want: apiCounts{},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseAPIMetrics(strings.NewReader(tc.text))
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseAPIMetricsRejectsBrokenLines(t *testing.T) {
	for _, line := range []string{
		`apiserver_request_total{verb="GET} 1`,
		`apiserver_request_total{verb=GET} 1`,
		`apiserver_request_total{verb="GET"}`,
		`apiserver_request_total{verb="GET"} one`,
		`apiserver_request_total`,
	} {
		if got, err := parseAPIMetrics(strings.NewReader(line + "\n")); err == nil {
			t.Errorf("%s: parsed as %v, want an error", line, got)
		}
	}
}

func TestAPICountsSince(t *testing.T) {
	before := apiCounts{"request DELETE configmaps 200": 10, "request GET leases 200": 4, "etcd get configmaps": 1}
	after := apiCounts{"request DELETE configmaps 200": 20010, "request GET leases 200": 4, "etcd get configmaps": 3,
		"watch events configmaps": 40000}
	want := apiCounts{"request DELETE configmaps 200": 20000, "etcd get configmaps": 2, "watch events configmaps": 40000}
	if got := after.since(before); !maps.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestAccountingTable(t *testing.T) {
	results := []gcResult{
		{name: "kubegcd", n: 1000, api: apiCounts{
			"request DELETE configmaps 200": 1000, "request GET configmaps 200": 1000,
			"watch events configmaps": 2001, "watch bytes configmaps": 650_000,
			"etcd delete configmaps": 1000, "request GET leases 200": 2, "watch bytes leases": 400,
			"request ms DELETE configmaps": 32, "request ms PUT leases": 0.1, "etcd ms delete configmaps": 16,
		}},
		{name: "raw deletes (32 workers)", n: 1000, api: apiCounts{
			"request DELETE configmaps 200": 1000, "watch events configmaps": 1000, "watch bytes configmaps": 300_000,
			"etcd delete configmaps": 1000, "request PUT leases 200": 1,
			"request ms DELETE configmaps": 19.25, "etcd ms delete configmaps": 0.4,
		}},
		{name: "kube-controller-manager", n: 2000, api: apiCounts{
			"request DELETE configmaps 200": 2000, "request GET configmaps 200": 4000,
			"watch events configmaps": 4002, "watch bytes configmaps": 1_300_000,
			"etcd delete configmaps": 2000, "etcd get configmaps": 10,
		}},
	}
	var out bytes.Buffer
	accountingTable(&out, results)
	want := `kube-apiserver's accounting per deletion          kubegcd          raw          kcm
request DELETE configmaps 200                       1.000        1.000        1.000
request GET configmaps 200                          1.000        0.000        2.000
watch events configmaps                             2.001        1.000        2.001
watch bytes configmaps                                650          300          650
etcd delete configmaps                              1.000        1.000        1.000
etcd get configmaps                                 0.000        0.000        0.005
request ms DELETE configmaps                         32.0         19.2          0.0
etcd ms delete configmaps                            16.0          0.4          0.0
(4 more series under 0.005, 1 watch bytes or 0.5 ms per deletion for every contender)
`
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}
