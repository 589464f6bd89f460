package e2eutil

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// exposition is a piece of an API server's /metrics.
const exposition = `# HELP apiserver_request_total [STABLE] Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="DELETE",version="v1"} 7
apiserver_request_total{code="404",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="DELETE",version="v1"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="DELETE",version="v1"} 1
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 40
apiserver_request_total{code="409",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="DELETE",version="v1"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="DELETE",version="v1"} 5
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="podsecuritypolicies",scope="resource",subresource="",verb="DELETE",version="v1"} 11
apiserver_request_total{code="403",component="apiserver",dry_run="",group="",resource="secrets",scope="resource",subresource="",verb="DELETE",version="v1"} 4
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",scope="",subresource="pods",verb="DELETE",version="v1"} 13
apiserver_request_duration_seconds_count{component="apiserver",group="",resource="pods",scope="resource",subresource="",verb="DELETE",version="v1"} 9
`

func TestRequestCounts(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		resource string
		want     RequestCounts
		wantErr  bool
	}{
		// The status subresource's deletes count with the pods'; a label
		// that only ends in "resource" does not match.
		{"pods", exposition, "pods", RequestCounts{"200": 8, "404": 2}, false},
		{"configmaps", exposition, "configmaps", RequestCounts{"200": 5, "409": 3}, false},
		{"refused only", exposition, "secrets", RequestCounts{"403": 4}, false},
		{"none", exposition, "nodes", RequestCounts{}, false},
		{"escaped values", `apiserver_request_total{code="200",note="a \"quoted\", value\\",resource="pods",verb="DELETE"} 2` + "\n", "pods",
			RequestCounts{"200": 2}, false},
		{"no value", `apiserver_request_total{code="200",resource="pods",verb="DELETE"}` + "\n", "pods", nil, true},
		{"unclosed label", `apiserver_request_total{code="200,resource="pods",verb="DELETE} 1` + "\n", "pods", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := requestCounts([]byte(tt.body), "DELETE", tt.resource)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want one: %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); !tt.wantErr && diff != "" {
				t.Errorf("counts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRequestCountsSum(t *testing.T) {
	c := RequestCounts{"200": 7, "404": 2, "409": 1, "403": 4}
	tests := []struct {
		codes []string
		want  float64
	}{
		{nil, 14},
		{[]string{"200", "404", "409"}, 10},
		{[]string{"409"}, 1},
		{[]string{"500"}, 0},
	}
	for _, tt := range tests {
		if got := c.Sum(tt.codes...); got != tt.want {
			t.Errorf("Sum(%v) = %v, want %v", tt.codes, got, tt.want)
		}
	}
}
