package e2eutil

import (
	"strings"
	"testing"
)

func TestConsoleExamples(t *testing.T) {
	doc := "# T\n\n```sh\n$ make demo\n```\n\n```console\n$ kubegcd get pending\nKIND   NAME\nPod    a\n\n$ kubegcd status\nMirror: synced\n…\n```\n"
	got, err := ConsoleExamples(strings.NewReader(doc), "kubegcd")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Line != 8 || strings.Join(got[0].Args, " ") != "get pending" ||
		strings.Join(got[0].Want, "|") != "KIND   NAME|Pod    a" || strings.Join(got[1].Want, "|") != "Mirror: synced|…" {
		t.Errorf("got %+v", got)
	}
	for _, bad := range []string{"```console\nKIND\n```\n", "```console\n$ kubectl get pods\n```\n", "```console\n$ kubegcd why 'a b'\n```\n"} {
		if _, err := ConsoleExamples(strings.NewReader(bad), "kubegcd"); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestMatchAnswer(t *testing.T) {
	got := []string{
		"kubegcd 1b444af at http://127.0.0.1:8080, up 54s",
		"NAMESPACE   KIND   NAME     AGE",
		"demo        Pod    web-1    1m31s",
		"demo        Pod    web-2    91s",
		"  uid:      8bbaeebd-013c-45ff-aa07-2224396e320b, created at 2026-11-29T04:52:44Z (3d ago)",
	}
	for _, tc := range []struct {
		want []string
		ok   bool
	}{
		{[]string{"kubegcd v0.1.0 at http://127.0.0.1:8080, up 2h", "NAMESPACE KIND NAME AGE", "demo Pod web-1 5s", "demo Pod web-2 12s",
			"  uid: 0f0f0f0f-0000-4000-8000-000000000000, created at 2026-01-01T00:00:00Z (2h10m ago)"}, true},
		{[]string{"…"}, true},
		{[]string{"kubegcd v1 at http://127.0.0.1:8080, up 1s", "…", "demo Pod web-2 1s", "…"}, true},
		{[]string{"…", "demo Pod web-1 1s", "…"}, true},
		{[]string{"kubegcd v1 at …", "NAMESPACE …", "…"}, true},
		{[]string{"…", "demo Pod web-3 1s", "…"}, false},
		{[]string{"kubegcd v1 at http://127.0.0.1:8080, up 1s", "NAMESPACE KIND NAME AGE"}, false},
		{[]string{"NAMESPACE KIND NAME AGE", "…"}, false},
		{nil, false},
	} {
		if err := MatchAnswer(tc.want, got); (err == nil) != tc.ok {
			t.Errorf("MatchAnswer(%q) = %v, want a match: %v", tc.want, err, tc.ok)
		}
	}
	// The node names of the demo are no durations.
	for _, name := range []string{"nightly-28760", "web-7c9d8b5f4-q8m4z", "node-a", "BR-21-01", "v1", "x2k9p"} {
		if got := Normalize(name); got != name {
			t.Errorf("Normalize(%q) = %q", name, got)
		}
	}
}
