package http

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

func TestAuditParameters(t *testing.T) {
	srv, _ := testServer(t)
	tests := []struct {
		query string
		want  string // in the error
	}{
		{"kind=Config%20Map", `invalid kind "Config Map"`},
		{"kind=-x", `invalid kind "-x"`},
		{"kind=" + strings.Repeat("k", 101), `invalid kind "kkk`},
		{"kind=ConfigMap&kind=Pod", `query parameter "kind" given more than once`},
		{"rule=BR/21", `invalid rule "BR/21"`},
		{"rule=BR-21-01%27", `invalid rule "BR-21-01'"`},
		{"rule=a&rule=b", `query parameter "rule" given more than once`},
		{"colour=blue", `unknown query parameter "colour"`},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			var e errorJSON
			getJSON(t, srv, "/audit?"+tt.query, 400, &e)
			if !strings.Contains(e.Error, tt.want) {
				t.Errorf("error %q, want it to contain %q", e.Error, tt.want)
			}
		})
	}
}

func TestAuditKindAndRule(t *testing.T) {
	srv, store := testServer(t)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	entry := func(kind, rule, uid string) *db.AuditEntry {
		return &db.AuditEntry{Time: at, Instance: "i", Controller: "ownergc", Rule: rule, Action: "delete", Outcome: api.OutcomeDryRun,
			DryRun: true, Target: api.Target{APIVersion: "v1", Kind: kind, Namespace: "a", Name: uid, UID: uid}}
	}
	if err := store.Ledger().InsertAudits(context.Background(), []*db.AuditEntry{
		entry("ConfigMap", "BR-21-01", "cm1"), entry("Deployment", "BR-21-03", "dep1"), entry("ConfigMap", "BR-21-03", "cm2"),
	}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		query string
		want  []string
	}{
		{"kind=configmaps", []string{"cm2", "cm1"}},
		{"kind=DEPLOYMENT", []string{"dep1"}},
		{"rule=BR-21-03", []string{"cm2", "dep1"}},
		{"rule=BR-21-03&kind=ConfigMap", []string{"cm2"}},
		{"rule=BR-21-03&kind=ConfigMap&namespace=b", []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			var got api.AuditList
			getJSON(t, srv, "/audit?"+tt.query, 200, &got)
			uids := []string{}
			for _, e := range got.Items {
				uids = append(uids, e.Target.UID)
			}
			if diff := cmp.Diff(tt.want, uids); diff != "" {
				t.Errorf("uids (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPendingParameters(t *testing.T) {
	srv, store := testServer(t)
	for _, uid := range []string{"a", "b"} {
		if _, err := store.Ledger().UpsertPending(context.Background(), &db.Pending{Controller: "ownergc", Rule: "BR-21-01", Action: "delete",
			Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: uid, UID: uid}}); err != nil {
			t.Fatal(err)
		}
	}
	var oldest api.PendingList
	getJSON(t, srv, "/pending?limit=1", 200, &oldest)
	if oldest.Next == "" {
		t.Fatal("no next cursor from a page of 1 of 2")
	}
	tests := []struct {
		query string
		want  string // in the error
	}{
		{"order=sideways", `invalid order "sideways"`},
		{"order=newest&order=oldest", `query parameter "order" given more than once`},
		{"cursor=%21%21", `invalid cursor "!!": not a cursor /pending gave`},
		{"cursor=e30", `invalid cursor "e30": not a cursor /pending gave`}, // {}
		{"cursor=" + oldest.Next + "&order=newest", `it continues the other order`},
		{"kind=Config%20Map", `invalid kind "Config Map"`},
		{"limit=10001", `invalid limit "10001"`},
		{"colour=blue", `unknown query parameter "colour"`},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			var e errorJSON
			getJSON(t, srv, "/pending?"+tt.query, 400, &e)
			if !strings.Contains(e.Error, tt.want) {
				t.Errorf("error %q, want it to contain %q", e.Error, tt.want)
			}
		})
	}
}

// /pending pages by its cursor in either order, each decision once.
func TestPendingPaging(t *testing.T) {
	srv, store := testServer(t)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var uids []string
	for i := range 5 {
		uid := fmt.Sprintf("uid-%d", i)
		uids = append(uids, uid)
		if _, err := store.Ledger().UpsertPending(context.Background(), &db.Pending{Controller: "ownergc", Rule: "BR-21-01", Action: "delete",
			Since: t0.Add(time.Duration(i) * time.Second), Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: uid, UID: uid}}); err != nil {
			t.Fatal(err)
		}
	}
	newest := slices.Clone(uids)
	slices.Reverse(newest)
	for _, tt := range []struct {
		order string
		want  []string
	}{{"", uids}, {"oldest", uids}, {"newest", newest}} {
		t.Run("order "+tt.order, func(t *testing.T) {
			got := []string{}
			cursor := ""
			for pages := 0; ; pages++ {
				var page api.PendingList
				getJSON(t, srv, "/pending?limit=2&kind=configmaps&order="+tt.order+"&cursor="+url.QueryEscape(cursor), 200, &page)
				for _, p := range page.Items {
					got = append(got, p.Target.UID)
				}
				if page.Next == "" || pages > 5 {
					break
				}
				cursor = page.Next
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("uids (-want +got):\n%s", diff)
			}
		})
	}
}
