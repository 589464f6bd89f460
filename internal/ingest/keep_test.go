package ingest

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubegcd/kubegcd/internal/db"
)

// TestParseKeyAllowList: kube-state-metrics' syntax, and the mistakes it
// refuses, each named.
func TestParseKeyAllowList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want KeyAllowList
		err  string // a part of the error; "" for none
	}{
		{in: "", want: KeyAllowList{}},
		{in: "configmaps=[app,team],*=[kubegcd.io/keep]",
			want: KeyAllowList{"configmaps": {"app", "team"}, "*": {"kubegcd.io/keep"}}},
		{in: " pods = [ app , tier ] , secrets=[*] ", want: KeyAllowList{"pods": {"app", "tier"}, "secrets": {"*"}}},
		{in: "ingresses.networking.k8s.io=[example.com/owner]",
			want: KeyAllowList{"ingresses.networking.k8s.io": {"example.com/owner"}}},
		{in: "pods=[]", want: KeyAllowList{"pods": {}}},
		{in: "pods=[app,app]", want: KeyAllowList{"pods": {"app"}}},
		{in: "pods", err: `"pods": want RESOURCE=[KEY,...]`},
		{in: "pods=app", err: `"pods=app": want RESOURCE=[KEY,...]`},
		{in: "=[app]", err: "no resource named"},
		{in: "Pods=[app]", err: `resource "Pods": want a resource's plural`},
		{in: "pods=[app", err: "a '[' without its ']'"},
		{in: "pods=[app]]", err: "a ']' without its '['"},
		{in: "pods=[[app]]", err: "a '[' inside brackets"},
		{in: "pods=[bad key]", err: `key "bad key"`},
		{in: "pods=[-app]", err: `key "-app"`},
	} {
		got, err := ParseKeyAllowList(tc.in)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want one saying %q", tc.in, err, tc.err)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.in, err)
		default:
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%q (-want +got):\n%s", tc.in, diff)
			}
		}
	}

	// Repeated, the flag adds up.
	l := KeyAllowList{}
	for _, s := range []string{"pods=[app]", "pods=[team],*=[x]"} {
		if err := l.Set(s); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := l.String(), "*=[x],pods=[app,team]"; got != want {
		t.Errorf("after two Sets: %s, want %s", got, want)
	}
}

// TestKeepKeys: what a resource keeps is its entries, "*"'s and the keys
// the built-in rules read; "[*]" keeps every key; a Secret's
// last-applied-configuration, which holds its data, is never kept.
func TestKeepKeys(t *testing.T) {
	l, err := ParseKeyAllowList("configmaps=[app],ingresses.networking.k8s.io=[tier],*=[team],secrets=[*]")
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "a", "tier": "t", "team": "x", "kubegcd.io/keep": "true", "other": "o",
		lastApplied: `{"data":{"password":"c2VjcmV0"}}`}
	kv := func(pairs ...string) []db.KeyValue {
		var out []db.KeyValue
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, db.KeyValue{Key: pairs[i], Value: pairs[i+1]})
		}
		return out
	}
	always := []string{"kubegcd.io/keep"}
	for _, tc := range []struct {
		group, resource string
		never           string
		want            []db.KeyValue
		fingerprint     string
	}{
		{"", "configmaps", "", kv("app", "a", "kubegcd.io/keep", "true", "team", "x"), "app,kubegcd.io/keep,team"},
		{"networking.k8s.io", "ingresses", "", kv("kubegcd.io/keep", "true", "team", "x", "tier", "t"),
			"kubegcd.io/keep,team,tier"},
		{"example.com", "ingresses", "", kv("kubegcd.io/keep", "true", "team", "x"), "kubegcd.io/keep,team"},
		{"", "secrets", lastApplied, kv("app", "a", "kubegcd.io/keep", "true", "other", "o", "team", "x", "tier", "t"),
			"*"},
	} {
		k := l.keysFor(tc.group, tc.resource, always)
		k.never = tc.never
		if diff := cmp.Diff(tc.want, k.keep(labels)); diff != "" {
			t.Errorf("%s.%s (-want +got):\n%s", tc.resource, tc.group, diff)
		}
		if got := k.fingerprint(); got != tc.fingerprint {
			t.Errorf("%s.%s: fingerprint %q, want %q", tc.resource, tc.group, got, tc.fingerprint)
		}
	}
	if got := (KeyAllowList{}).keysFor("", "pods", nil).keep(labels); got != nil {
		t.Errorf("nothing allowed: kept %v", got)
	}
}
