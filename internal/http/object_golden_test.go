package http

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

// goldenObjectServer is testServer with what the graph and object
// endpoints show besides: X, owned by A, mirrored then deleted (history
// only); Q, whose names need escaping, owned by A and by B; a Lease whose
// holder changed; a decision pending about G and two audit rows.
func goldenObjectServer(t *testing.T) *goldenServer {
	t.Helper()
	srv, store := testServer(t)
	ctx := context.Background()
	rid, err := store.Mirror().EnsureResource(ctx, db.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	lid, err := store.Mirror().EnsureResource(ctx, db.Resource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases",
		Kind: "Lease", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	acquired, renewed := created.Add(time.Minute), created.Add(2*time.Minute)
	dur := int32(15)
	lease := func(holder string, acquire time.Time) *db.Object {
		return &db.Object{UID: "uid-lease", APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Namespace: "a", Name: "lock",
			ResourceVersion: "1", CreationTimestamp: &created,
			Lease: &db.Lease{HolderIdentity: &holder, LeaseDurationSeconds: &dur, AcquireTime: &acquire, RenewTime: &renewed}}
	}
	x := &db.Object{UID: "uid-X", APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: "X", ResourceVersion: "3",
		CreationTimestamp: &created, Finalizers: []string{"example.com/x"},
		OwnerReferences: []api.OwnerRef{{APIVersion: "v1", Kind: "ConfigMap", Name: "A", UID: "uid-A", Controller: boolp(false)}}}
	q := &db.Object{UID: "uid-Q<&>\"", APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: "q\u2028<é>", ResourceVersion: "9",
		CreationTimestamp: &created, OwnerReferences: []api.OwnerRef{
			{APIVersion: "v1", Kind: "ConfigMap", Name: "A", UID: "uid-A", BlockOwnerDeletion: boolp(true)},
			{APIVersion: "v1", Kind: "ConfigMap", Name: "B", UID: "uid-B", Controller: boolp(true), BlockOwnerDeletion: boolp(false)}}}
	for _, evs := range [][]db.Event{
		{{ResourceID: rid, Object: x}, {ResourceID: rid, Object: q}, {ResourceID: lid, Object: lease("a", acquired)}},
		{{ResourceID: rid, Deleted: true, Object: x}, {ResourceID: lid, Object: lease("b", created.Add(10*time.Minute))}},
	} {
		if _, err := store.Mirror().ApplyEvents(ctx, evs); err != nil {
			t.Fatal(err)
		}
	}
	target := api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: "G", UID: "uid-G"}
	later := created.Add(time.Hour)
	if _, err := store.Ledger().UpsertPending(ctx, &db.Pending{Controller: "ownergc", Rule: "BR-21-01", Action: "delete",
		Target: target, ResourceVersion: "7", Reason: "no owner exists", Since: created, NotBefore: &later}); err != nil {
		t.Fatal(err)
	}
	for i, e := range []*db.AuditEntry{
		{Controller: "ownergc", Rule: "BR-21-01", Action: "delete", Target: target, DryRun: true, Outcome: api.OutcomeDryRun, Reason: "no owner exists."},
		{Controller: "ownergc", Rule: "BR-21-01", Action: "delete", Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "a",
			Name: "X", UID: "uid-X"}, Outcome: api.OutcomeApplied, Reason: "owner gone"},
	} {
		e.Instance, e.Time = "kubegcd-0", created.Add(time.Duration(i)*time.Second)
		if err := store.Ledger().InsertAudit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	return &goldenServer{srv: srv.URL}
}

type goldenServer struct{ srv string }

// get answers path as seen by a program and by curl, one after the other,
// with its status and content type.
func (g *goldenServer) get(t *testing.T, path string) []byte {
	t.Helper()
	var out bytes.Buffer
	for _, ua := range []string{"Go-http-client/1.1", "curl/8.5.0"} {
		req, err := http.NewRequest("GET", g.srv+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("User-Agent", ua)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "%d %s\n", resp.StatusCode, resp.Header.Get("Content-Type"))
		_, err = out.ReadFrom(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	return out.Bytes()
}

var (
	goldenStamp = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
	goldenAge   = regexp.MustCompile(`"age": ?[-+.e0-9]+`)
	// goldenSince is a duration of hours, as a sentence counts the time
	// since the fixture's dates.
	goldenSince = regexp.MustCompile(`\b\d+h\d+m\d+(\.\d+)?s\b`)
)

// scrubNow replaces what depends on when the test runs: the times
// ingestion stamps (within a day of now), a stuck deletion's age and the
// hours sentences count since the fixture's dates.
func scrubNow(b []byte) []byte {
	now := time.Now()
	b = goldenStamp.ReplaceAllFunc(b, func(s []byte) []byte {
		if t, err := time.Parse(time.RFC3339Nano, string(s)); err == nil && t.Sub(now).Abs() < 24*time.Hour {
			return []byte("NOW")
		}
		return s
	})
	b = goldenSince.ReplaceAll(b, []byte("HOURS"))
	return goldenAge.ReplaceAllFunc(b, func(s []byte) []byte {
		return append(bytes.TrimRight(s, "-+.e0123456789"), '0')
	})
}

// TestObjectEndpointGoldens asks the graph and object endpoints for a
// representative set of answers, compact and indented, and compares each
// with testdata/api/<name>.txt: the wire stays byte for byte what it was
// when the goldens were written, whatever types the server builds it from.
func TestObjectEndpointGoldens(t *testing.T) {
	g := goldenObjectServer(t)
	q := url.PathEscape("uid-Q<&>\"")
	at := url.QueryEscape(time.Now().UTC().Format(time.RFC3339Nano))
	for _, tc := range []struct{ name, path string }{
		{"graph-whole", "/graph"},
		{"graph-whole-truncated", "/graph?limit=2"},
		{"graph-whole-dot", "/graph?format=dot"},
		{"graph-namespace", "/graph?namespace=a"},
		{"graph-namespace-truncated", "/graph?namespace=a&limit=2"},
		{"graph-namespace-dot", "/graph?namespace=a&format=dot"},
		{"graph-uid", "/graph?uid=uid-B&uid=uid-E"},
		{"graph-uid-dot", "/graph?uid=uid-B&format=dot"},
		{"graph-at", "/graph?uid=uid-B&at=" + at},
		{"graph-empty", "/graph?namespace=none"},
		{"graph-bad", "/graph?format=png"},
		{"lookup", "/objects?kind=ConfigMap"},
		{"lookup-one", "/objects?kind=ConfigMap&name=B&namespace=a"},
		{"lookup-group", "/objects?kind=leases&apiVersion=coordination.k8s.io/v1"},
		{"lookup-truncated", "/objects?kind=configmaps&limit=2"},
		{"lookup-none", "/objects?kind=Lease&name=none"},
		{"object-A", "/objects/uid-A"},
		{"object-B", "/objects/uid-B"},
		{"object-D", "/objects/uid-D"},
		{"object-G", "/objects/uid-G"},
		{"object-L", "/objects/uid-L"},
		{"object-Q", "/objects/" + q},
		{"object-lease", "/objects/uid-lease"},
		{"object-missing", "/objects/uid-X"},
		{"cascade-A", "/objects/uid-A/cascade"},
		{"cascade-A-foreground", "/objects/uid-A/cascade?propagation=foreground"},
		{"cascade-A-orphan", "/objects/uid-A/cascade?propagation=orphan"},
		{"cascade-A-truncated", "/objects/uid-A/cascade?limit=1"},
		{"cascade-D", "/objects/uid-D/cascade?propagation=foreground"},
		{"cascade-L", "/objects/uid-L/cascade"},
		{"history-B", "/objects/uid-B/history"},
		{"history-X", "/objects/uid-X/history"},
		{"history-lease", "/objects/uid-lease/history"},
		{"history-ghost", "/objects/uid-ghost/history"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := scrubNow(g.get(t, tc.path))
			path := filepath.Join("testdata", "api", tc.name+".txt")
			if *updateGoldens {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("GET %s changed:\n got: %s\nwant: %s", tc.path, got, want)
			}
			if strings.Contains(string(got), "NOW") && !strings.Contains(tc.name, "history") && !strings.Contains(tc.name, "object") {
				t.Errorf("GET %s shows a time of the test's run", tc.path)
			}
		})
	}
}
