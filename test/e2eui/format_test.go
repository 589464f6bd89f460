package e2eui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"
)

// The UI writes every age in one format, kubectl's, which kubegcd get
// uses too: a stuck deletion of 91 s says "91s ago" in its line and in its
// explanation, although the API writes the explanation with Go's
// durations ("1m31s").
func TestAgesInOneFormat(t *testing.T) {
	d := daemons.Start(t, "")
	p := openPage(t, d)
	p.goTo("/stuck")
	ages := []int{0, 59, 91, 150, 600, 3*3600 + 5*60, 7*3600 + 30*60, 30 * 3600, 3*86400 + 4*3600, 90 * 86400, 800 * 86400, 3000 * 86400}
	var got []string
	p.eval(fmt.Sprintf(`import(new URL('js/util.js', document.baseURI)).then(({ age }) => %s.map(age))`, jsInts(ages)), &got, awaitPromise)
	for i, s := range ages {
		if want := duration.HumanDuration(time.Duration(s) * time.Second); i >= len(got) || got[i] != want {
			t.Errorf("the UI's age of %d s is %q, want kubectl's %q", s, at(got, i), want)
		}
	}

	var item struct{ Head, Explanation string }
	p.eval(`import(new URL('js/diag.js', document.baseURI)).then(({ stuckItem }) => {
		const el = stuckItem({ target: { kind: 'ConfigMap', namespace: 'a', name: 'b', uid: 'u' }, state: 'finalizing', age: 91,
			deletionRequested: '2026-01-02T15:04:05Z', blockers: [],
			explanation: 'ConfigMap a/b was asked to be deleted 1m31s ago and still exists. --stuck-after is 5m0s (Terminating for 2h0m5s).' });
		return { head: el.querySelector('.head').textContent, explanation: el.querySelector('.explanation').textContent };
	})`, &item, awaitPromise)
	if !strings.Contains(item.Head, "deletion requested 91s ago") {
		t.Errorf("stuck line %q, want deletion requested 91s ago", item.Head)
	}
	if want := "ConfigMap a/b was asked to be deleted 91s ago and still exists. --stuck-after is 5m (Terminating for 120m)."; item.Explanation != want {
		t.Errorf("stuck explanation %q, want %q", item.Explanation, want)
	}
}

func jsInts(v []int) string {
	var s []string
	for _, i := range v {
		s = append(s, fmt.Sprint(i))
	}
	return "[" + strings.Join(s, ",") + "]"
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return ""
}
