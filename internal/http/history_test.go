package http

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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
		return &db.AuditEntry{Time: at, Instance: "i", Controller: "ownergc", Rule: rule, Action: "delete", Outcome: db.OutcomeDryRun,
			DryRun: true, Target: db.Target{APIVersion: "v1", Kind: kind, Namespace: "a", Name: uid, UID: uid}}
	}
	if err := store.InsertAudits(context.Background(), []*db.AuditEntry{
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
			var got auditJSON
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
