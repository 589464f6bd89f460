package mdanchor

import "testing"

func TestOf(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"kubegcd why", "kubegcd-why"},
		{"HTTP flags", "http-flags"},
		{"`GET /status`", "get-status"},
		{"Why the ownership GC misses its ratio targets", "why-the-ownership-gc-misses-its-ratio-targets"},
		{"Alerting and dashboards", "alerting-and-dashboards"},
		{"snake_case and dash-case: kept", "snake_case-and-dash-case-kept"},
		{"Über größe", "über-größe"},
	} {
		if got := Of(tc.heading); got != tc.want {
			t.Errorf("Of(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}
