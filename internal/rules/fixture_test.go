package rules

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/db/dbtest"
)

// fixture writes a mirror straight into the tables, as ingestion would
// leave it, for the rules to read.
type fixture struct {
	t   testing.TB
	d   *db.DB
	raw *sql.DB
	tx  *sql.Tx
	// resources by kind
	resources map[string]int64
	histories []func()
}

// kinds are the resources a fixture knows: group, version, plural.
var kinds = map[string][3]string{
	"Namespace":               {"", "v1", "namespaces"},
	"Pod":                     {"", "v1", "pods"},
	"ConfigMap":               {"", "v1", "configmaps"},
	"Secret":                  {"", "v1", "secrets"},
	"ServiceAccount":          {"", "v1", "serviceaccounts"},
	"PersistentVolumeClaim":   {"", "v1", "persistentvolumeclaims"},
	"PersistentVolume":        {"", "v1", "persistentvolumes"},
	"ReplicationController":   {"", "v1", "replicationcontrollers"},
	"Deployment":              {"apps", "v1", "deployments"},
	"ReplicaSet":              {"apps", "v1", "replicasets"},
	"StatefulSet":             {"apps", "v1", "statefulsets"},
	"DaemonSet":               {"apps", "v1", "daemonsets"},
	"Job":                     {"batch", "v1", "jobs"},
	"CronJob":                 {"batch", "v1", "cronjobs"},
	"Ingress":                 {"networking.k8s.io", "v1", "ingresses"},
	"RoleBinding":             {"rbac.authorization.k8s.io", "v1", "rolebindings"},
	"ClusterRoleBinding":      {"rbac.authorization.k8s.io", "v1", "clusterrolebindings"},
	"ClusterRole":             {"rbac.authorization.k8s.io", "v1", "clusterroles"},
	"Role":                    {"rbac.authorization.k8s.io", "v1", "roles"},
	"Service":                 {"", "v1", "services"},
	"HorizontalPodAutoscaler": {"autoscaling", "v2", "horizontalpodautoscalers"},
	"Widget":                  {"example.com", "v1", "widgets"},
}

var clusterScoped = map[string]bool{"Namespace": true, "PersistentVolume": true, "ClusterRoleBinding": true, "ClusterRole": true}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	d := dbtest.Open(t)
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "foreign_keys(1)")
	raw, err := sql.Open("sqlite", (&url.URL{Scheme: "file", Path: d.Path, RawQuery: q.Encode()}).String())
	if err != nil {
		t.Fatal(err)
	}
	raw.SetMaxOpenConns(1)
	t.Cleanup(func() { raw.Close() })
	f := &fixture{t: t, d: d, raw: raw, resources: map[string]int64{}}
	f.begin()
	i := int64(0)
	for kind, k := range kinds {
		i++
		ns := 1
		if clusterScoped[kind] {
			ns = 0
		}
		f.exec(`INSERT INTO resources (id, api_group, version, resource, kind, namespaced, synced, first_synced_at)
			VALUES (?, ?, ?, ?, ?, ?, 1, ?)`, i, k[0], k[1], k[2], kind, ns, ts(watched))
		f.resources[kind] = i
	}
	return f
}

func (f *fixture) begin() {
	tx, err := f.raw.Begin()
	if err != nil {
		f.t.Fatal(err)
	}
	f.tx = tx
}

// commit ends the fixture's writes; the rules read what it wrote. The
// triggers wrote the wall clock's time as each reference's; each is put
// at the first sync instead, unless history said otherwise.
func (f *fixture) commit() {
	f.t.Helper()
	f.exec(`UPDATE ref_history SET first_referenced = ?, last_referenced = ?`, ts(watched), ts(watched))
	for _, h := range f.histories {
		h()
	}
	if err := f.tx.Commit(); err != nil {
		f.t.Fatal(err)
	}
	f.tx = nil
}

func (f *fixture) exec(q string, args ...any) {
	f.t.Helper()
	if _, err := f.tx.Exec(q, args...); err != nil {
		f.t.Fatalf("%s: %v", strings.Join(strings.Fields(q), " "), err)
	}
}

// now is the fixtures' time; watched is since when the referrers have
// been watched.
var (
	now     = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	watched = now.Add(-31 * 24 * time.Hour)
)

func ts(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }

func ago(d time.Duration) time.Time { return now.Add(-d) }

const day = 24 * time.Hour

// obj writes an object of kind "ns/name" (or "name" for a cluster-scoped
// kind), created created ago; its UID is kind/ns/name.
func (f *fixture) obj(kind, key string, created time.Duration) string {
	f.t.Helper()
	ns, name, ok := strings.Cut(key, "/")
	if !ok {
		ns, name = "", key
	}
	k := kinds[kind]
	apiVersion := k[1]
	if k[0] != "" {
		apiVersion = k[0] + "/" + k[1]
	}
	uid := kind + "/" + key
	f.exec(`INSERT INTO objects (uid, resource_id, api_version, kind, namespace, name, resource_version, creation_timestamp)
		VALUES (?, ?, ?, ?, ?, ?, '1', ?)`, uid, f.resources[kind], apiVersion, kind, ns, name, ts(ago(created)))
	return uid
}

func (f *fixture) deleting(uid string) {
	f.exec(`UPDATE objects SET deletion_timestamp = ? WHERE uid = ?`, ts(ago(time.Minute)), uid)
}

func (f *fixture) owner(dependent, owner string, controller bool) {
	kind, rest, _ := strings.Cut(owner, "/")
	name := rest[strings.LastIndex(rest, "/")+1:]
	k := kinds[kind]
	apiVersion := k[1]
	if k[0] != "" {
		apiVersion = k[0] + "/" + k[1]
	}
	f.exec(`INSERT INTO owner_refs (dependent_uid, position, api_version, kind, name, owner_uid, controller)
		VALUES (?, (SELECT count(*) FROM owner_refs WHERE dependent_uid = ?), ?, ?, ?, ?, ?)`,
		dependent, dependent, apiVersion, kind, name, owner, controller)
}

// ref writes a reference from referrer to the target "Kind ns/name",
// made at made ago.
type refOpt struct {
	optional, prefix bool
	group            string
}

func (f *fixture) ref(referrer, target, via string, opts ...refOpt) {
	f.t.Helper()
	var o refOpt
	if len(opts) > 0 {
		o = opts[0]
	}
	kind, key, _ := strings.Cut(target, " ")
	ns, name, ok := strings.Cut(key, "/")
	if !ok {
		ns, name = "", key
	}
	f.exec(`INSERT INTO refs (referrer_uid, target_group, target_kind, target_namespace, target_name, via, optional, prefix)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, referrer, o.group, kind, ns, name, via, o.optional, o.prefix)
}

// history sets when target ("Kind ns/name") was last referenced, as of
// commit.
func (f *fixture) history(target string, prefix bool, last time.Duration) {
	f.histories = append(f.histories, func() {
		kind, key, _ := strings.Cut(target, " ")
		ns, name, _ := strings.Cut(key, "/")
		f.exec(`INSERT INTO ref_history (target_group, target_kind, target_namespace, target_name, prefix, first_referenced,
				last_referenced)
			VALUES ('', ?, ?, ?, ?, ?, ?)
			ON CONFLICT DO UPDATE SET last_referenced = excluded.last_referenced, first_referenced = excluded.first_referenced`,
			kind, ns, name, prefix, ts(ago(60*day)), ts(ago(last)))
	})
}

func (f *fixture) label(uid, key, value string) {
	f.exec(`INSERT INTO object_labels (uid, key, value) VALUES (?, ?, ?)`, uid, key, value)
}

func (f *fixture) annotation(uid, key, value string) {
	f.exec(`INSERT INTO object_annotations (uid, key, value) VALUES (?, ?, ?)`, uid, key, value)
}

func (f *fixture) job(uid string, complete, failed bool, finished time.Duration, ttl *int) {
	var at any
	if complete || failed {
		at = ts(ago(finished))
	}
	f.exec(`INSERT INTO jobs (uid, complete, failed, finished_at, ttl_seconds_after_finished) VALUES (?, ?, ?, ?, ?)`,
		uid, complete, failed, at, ttl)
}

func (f *fixture) cronjob(uid string, successful, failed *int) {
	f.exec(`INSERT INTO cronjobs (uid, successful_jobs_history_limit, failed_jobs_history_limit) VALUES (?, ?, ?)`,
		uid, successful, failed)
}

func (f *fixture) secret(uid, typ string) {
	f.exec(`INSERT INTO secrets (uid, type) VALUES (?, ?)`, uid, typ)
}

func (f *fixture) pod(uid, phase string) {
	f.exec(`INSERT INTO pods (uid, phase) VALUES (?, ?)`, uid, phase)
}

func (f *fixture) workload(uid string, replicas int) {
	f.exec(`INSERT INTO workloads (uid, replicas) VALUES (?, ?)`, uid, replicas)
}

func (f *fixture) pvc(uid, phase, volume string) {
	f.exec(`INSERT INTO pvcs (uid, phase, volume_name) VALUES (?, ?, ?)`, uid, phase, volume)
}

// sandbox opens the rules' sandbox on the fixture's database.
func (f *fixture) sandbox(opts ...db.SandboxOptions) *db.Sandbox {
	f.t.Helper()
	var o db.SandboxOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	s, err := f.d.Rules().OpenSandbox(o)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { s.Close() })
	return s
}

// evaluate runs r at now and returns "uid: reason" of each match, with
// "finding " before a finding.
func evaluate(t testing.TB, s *db.Sandbox, r *Rule) []string {
	t.Helper()
	e := &Evaluator{Sandbox: s, Now: func() time.Time { return now }}
	if err := e.Check(context.Background(), r); err != nil {
		t.Fatalf("%s: %v", r.ID, err)
	}
	ms, _, err := e.Evaluate(context.Background(), r)
	if err != nil {
		t.Fatalf("%s: %v", r.ID, err)
	}
	out := make([]string, len(ms))
	for i, m := range ms {
		prefix := ""
		if m.Finding {
			prefix = "finding "
		}
		out[i] = fmt.Sprintf("%s%s: %s", prefix, m.UID, m.Reason)
	}
	return out
}

func builtinRule(t testing.TB, id string) *Rule {
	t.Helper()
	for _, r := range Builtins() {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no built-in %s", id)
	return nil
}

func intp(n int) *int { return &n }

func dbSandboxOptions(limit time.Duration) db.SandboxOptions {
	return db.SandboxOptions{TimeLimit: limit}
}
