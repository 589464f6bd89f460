package rules

import (
	"context"
	"database/sql"
	"syscall"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/db"
)

var sqlNamed = sql.Named

// benchFill writes a mirror of 1,000,000 objects in 1,000 namespaces with
// 200,000 references, in one transaction, straight into the tables:
// 300,000 Pods (most owned by 100,000 ReplicaSets of 50,000 Deployments),
// 100,000 ConfigMaps, 100,000 Secrets, 50,000 each of ServiceAccounts,
// PersistentVolumeClaims and Jobs (half of a CronJob's), 5,000 CronJobs,
// and 195,000 custom resources, 2,000 of them with a TTL. The Deployments
// and some Pods refer to ConfigMaps, Secrets, ServiceAccounts and claims,
// so that each kind has from a fifth to three fifths unused; a thousand
// Deployments refer to a ConfigMap that does not exist.
var benchFill = []string{
	`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 299999)
	INSERT INTO objects (uid, resource_id, api_version, kind, namespace, name, resource_version, creation_timestamp)
	SELECT 'pod-' || i, (SELECT id FROM resources WHERE kind = 'Pod'), 'v1', 'Pod', 'ns-' || (i % 1000), 'pod-' || i, '1', :created FROM n`,
	`INSERT INTO pods (uid, phase) SELECT uid, CASE WHEN rowid % 10 = 0 THEN 'Succeeded' ELSE 'Running' END
	FROM (SELECT uid, row_number() OVER () AS rowid FROM objects WHERE kind = 'Pod')`,
	`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 269999)
	INSERT INTO owner_refs (dependent_uid, position, api_version, kind, name, owner_uid, controller, sole)
	SELECT 'pod-' || i, 0, 'apps/v1', 'ReplicaSet', 'rs-' || (i % 100000), 'rs-' || (i % 100000), 1, 1 FROM n`,
	`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 99999)
	INSERT INTO objects (uid, resource_id, api_version, kind, namespace, name, resource_version, creation_timestamp)
	SELECT 'rs-' || i, (SELECT id FROM resources WHERE kind = 'ReplicaSet'), 'apps/v1', 'ReplicaSet', 'ns-' || (i % 1000), 'rs-' || i, '1', :created FROM n`,
	`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 99999)
	INSERT INTO owner_refs (dependent_uid, position, api_version, kind, name, owner_uid, controller, sole)
	SELECT 'rs-' || i, 0, 'apps/v1', 'Deployment', 'dep-' || (i % 50000), 'dep-' || (i % 50000), 1, 1 FROM n`,
	`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 49999)
	INSERT INTO objects (uid, resource_id, api_version, kind, namespace, name, resource_version, creation_timestamp)
	SELECT 'dep-' || i, (SELECT id FROM resources WHERE kind = 'Deployment'), 'apps/v1', 'Deployment', 'ns-' || (i % 1000), 'dep-' || i, '1', :created FROM n`,
	`INSERT INTO workloads (uid, replicas) SELECT uid, CASE WHEN substr(uid, 5) % 5 = 0 THEN 0 ELSE 2 END FROM objects WHERE kind = 'Deployment'`,
	`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 99999)
	INSERT INTO objects (uid, resource_id, api_version, kind, namespace, name, resource_version, creation_timestamp)
	SELECT 'cm-' || i, (SELECT id FROM resources WHERE kind = 'ConfigMap'), 'v1', 'ConfigMap', 'ns-' || (i % 1000), 'cm-' || i, '1', :created FROM n`,
	`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 99999)
	INSERT INTO objects (uid, resource_id, api_version, kind, namespace, name, resource_version, creation_timestamp)
	SELECT 'sec-' || i, (SELECT id FROM resources WHERE kind = 'Secret'), 'v1', 'Secret', 'ns-' || (i % 1000), 'sec-' || i, '1', :created FROM n`,
	`INSERT INTO secrets (uid, type) SELECT uid, CASE substr(uid, 5) % 10 WHEN 0 THEN 'helm.sh/release.v1'
		WHEN 1 THEN 'kubernetes.io/service-account-token' ELSE 'Opaque' END FROM objects WHERE kind = 'Secret'`,
	`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 49999)
	INSERT INTO objects (uid, resource_id, api_version, kind, namespace, name, resource_version, creation_timestamp)
	SELECT 'sa-' || i, (SELECT id FROM resources WHERE kind = 'ServiceAccount'), 'v1', 'ServiceAccount', 'ns-' || (i % 1000), 'sa-' || i, '1', :created FROM n`,
	`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 49999)
	INSERT INTO objects (uid, resource_id, api_version, kind, namespace, name, resource_version, creation_timestamp)
	SELECT 'pvc-' || i, (SELECT id FROM resources WHERE kind = 'PersistentVolumeClaim'), 'v1', 'PersistentVolumeClaim', 'ns-' || (i % 1000), 'pvc-' || i, '1', :created FROM n`,
	`INSERT INTO pvcs (uid, phase) SELECT uid, 'Bound' FROM objects WHERE kind = 'PersistentVolumeClaim'`,
	`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 4999)
	INSERT INTO objects (uid, resource_id, api_version, kind, namespace, name, resource_version, creation_timestamp)
	SELECT 'cj-' || i, (SELECT id FROM resources WHERE kind = 'CronJob'), 'batch/v1', 'CronJob', 'ns-' || (i % 1000), 'cj-' || i, '1', :created FROM n`,
	`INSERT INTO cronjobs (uid) SELECT uid FROM objects WHERE kind = 'CronJob'`,
	`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 49999)
	INSERT INTO objects (uid, resource_id, api_version, kind, namespace, name, resource_version, creation_timestamp)
	SELECT 'job-' || i, (SELECT id FROM resources WHERE kind = 'Job'), 'batch/v1', 'Job', 'ns-' || (i % 1000), 'job-' || i, '1', :created FROM n`,
	`INSERT INTO jobs (uid, complete, failed, finished_at) SELECT uid, substr(uid, 5) % 3 != 0, substr(uid, 5) % 3 = 0,
		strftime('%Y-%m-%dT%H:%M:%f000Z', :now, '-2 days', '-' || substr(uid, 5) || ' seconds') FROM objects WHERE kind = 'Job'`,
	`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 24999)
	INSERT INTO owner_refs (dependent_uid, position, api_version, kind, name, owner_uid, controller, sole)
	SELECT 'job-' || i, 0, 'batch/v1', 'CronJob', 'cj-' || (i % 5000), 'cj-' || (i % 5000), 1, 1 FROM n`,
	`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 194999)
	INSERT INTO objects (uid, resource_id, api_version, kind, namespace, name, resource_version, creation_timestamp)
	SELECT 'w-' || i, (SELECT id FROM resources WHERE kind = 'Widget'), 'example.com/v1', 'Widget', 'ns-' || (i % 1000), 'w-' || i, '1', :created FROM n`,
	`INSERT INTO object_labels (uid, key, value) SELECT uid, 'app', 'app-' || (substr(uid, 4) % 100) FROM objects WHERE kind = 'ConfigMap'`,
	`INSERT INTO object_labels (uid, key, value) SELECT uid, 'kor/used', 'true' FROM objects WHERE kind = 'ConfigMap' AND substr(uid, 4) % 100 = 7`,
	`INSERT INTO object_annotations (uid, key, value) SELECT uid, 'kubegcd.io/ttl', CASE WHEN substr(uid, 3) % 20 = 0 THEN 'soon' ELSE '1h' END
		FROM objects WHERE kind = 'Widget' AND CAST(substr(uid, 3) AS INTEGER) < 2000`,
	// 200,000 references: the Deployments' to 50,000 ConfigMaps (1,000 of
	// them missing), 40,000 Secrets and 20,000 ServiceAccounts; the Pods'
	// to 30,000 ConfigMaps, 20,000 Secrets and 40,000 claims.
	`INSERT INTO refs (referrer_uid, target_group, target_kind, target_namespace, target_name, via)
	SELECT uid, '', 'ConfigMap', namespace, CASE WHEN CAST(substr(uid, 5) AS INTEGER) < 1000 THEN 'missing-' ELSE 'cm-' END || substr(uid, 5),
		'spec.template.spec.volumes[].configMap' FROM objects WHERE kind = 'Deployment'`,
	`INSERT INTO refs (referrer_uid, target_group, target_kind, target_namespace, target_name, via)
	SELECT uid, '', 'Secret', namespace, 'sec-' || substr(uid, 5), 'spec.template.spec.volumes[].secret'
	FROM objects WHERE kind = 'Deployment' AND CAST(substr(uid, 5) AS INTEGER) < 40000`,
	`INSERT INTO refs (referrer_uid, target_group, target_kind, target_namespace, target_name, via)
	SELECT uid, '', 'ServiceAccount', namespace, 'sa-' || substr(uid, 5), 'spec.template.spec.serviceAccountName'
	FROM objects WHERE kind = 'Deployment' AND CAST(substr(uid, 5) AS INTEGER) < 20000`,
	`INSERT INTO refs (referrer_uid, target_group, target_kind, target_namespace, target_name, via)
	SELECT uid, '', 'ConfigMap', namespace, 'cm-' || (50000 + substr(uid, 5)), 'spec.containers[].envFrom[].configMapRef'
	FROM objects WHERE kind = 'Pod' AND CAST(substr(uid, 5) AS INTEGER) < 30000`,
	`INSERT INTO refs (referrer_uid, target_group, target_kind, target_namespace, target_name, via)
	SELECT uid, '', 'Secret', namespace, 'sec-' || (50000 + substr(uid, 5)), 'spec.containers[].env[].valueFrom.secretKeyRef'
	FROM objects WHERE kind = 'Pod' AND CAST(substr(uid, 5) AS INTEGER) < 20000`,
	`INSERT INTO refs (referrer_uid, target_group, target_kind, target_namespace, target_name, via)
	SELECT uid, '', 'PersistentVolumeClaim', namespace, 'pvc-' || substr(uid, 5), 'spec.volumes[].persistentVolumeClaim'
	FROM objects WHERE kind = 'Pod' AND CAST(substr(uid, 5) AS INTEGER) < 40000`,
	`UPDATE ref_history SET first_referenced = :watched, last_referenced = :watched`,
	// The unused ones were referenced until 10 days ago.
	`INSERT INTO ref_history (target_group, target_kind, target_namespace, target_name, first_referenced, last_referenced)
	SELECT '', kind, namespace, name, :watched, :lately FROM objects
	WHERE kind IN ('ConfigMap', 'Secret') AND substr(uid, instr(uid, '-') + 1) % 7 = 0 ON CONFLICT DO NOTHING`,
	`ANALYZE`,
}

// BenchmarkBuiltinRules: one pass of each built-in rule over the mirror
// benchFill writes. Target: at most 1 s a pass.
func BenchmarkBuiltinRules(b *testing.B) {
	f := newFixture(b)
	start := time.Now()
	for _, q := range benchFill {
		f.exec(q, sqlNamed("created", ts(ago(40*day))), sqlNamed("now", ts(now)), sqlNamed("watched", ts(watched)),
			sqlNamed("lately", ts(ago(10*day))))
	}
	f.commit()
	// As the daemon's checkpointer would have.
	if _, err := f.raw.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		b.Fatal(err)
	}
	var objects, refs int
	if err := f.raw.QueryRow(`SELECT (SELECT count(*) FROM objects), (SELECT count(*) FROM refs)`).Scan(&objects, &refs); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d objects, %d references, written in %s", objects, refs, time.Since(start).Round(time.Second))
	// The time limit would fail a slow pass; the benchmark measures it.
	s := f.sandbox(db.SandboxOptions{TimeLimit: 10 * time.Minute})
	e := &Evaluator{Sandbox: s, Now: func() time.Time { return now }}
	for _, r := range Builtins() {
		b.Run(r.ID, func(b *testing.B) {
			var n int
			cpu0 := cpuTime()
			for b.Loop() {
				ms, _, err := e.Evaluate(context.Background(), r)
				if err != nil {
					b.Fatal(err)
				}
				n = len(ms)
			}
			b.ReportMetric(float64(n), "matches")
			// On a shared machine the wall time says more of the others
			// than of the pass.
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuTime is the CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// youngFill writes the mirror of the scale benchmark's cluster, as
// kubegcd holds it minutes after its first sync: 50,000 Pods in 50
// namespaces, owned by ReplicaSets, each referring to its namespace's
// default ServiceAccount and kube-root-ca.crt ConfigMap, as the API
// server's admission gives them; 40,000 ConfigMaps, 30,000 Secrets.
// There, no controller publishes kube-root-ca.crt: every Pod refers to a
// ConfigMap that does not exist, and is left out for its owner.
// Everything was created and first listed 10 minutes ago, so nothing can
// be unused yet: what a pass costs is what it reads to find that out.
var youngFill = []string{
	`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 49999)
	INSERT INTO objects (uid, resource_id, api_version, kind, namespace, name, resource_version, creation_timestamp)
	SELECT 'pod-' || i, (SELECT id FROM resources WHERE kind = 'Pod'), 'v1', 'Pod', 'ns-' || (i % 50), 'pod-' || i, '1', :created FROM n`,
	`INSERT INTO pods (uid, phase) SELECT uid, 'Running' FROM objects WHERE kind = 'Pod'`,
	`INSERT INTO owner_refs (dependent_uid, position, api_version, kind, name, owner_uid, controller, sole)
	SELECT uid, 0, 'apps/v1', 'ReplicaSet', 'rs-' || (substr(uid, 5) / 25), 'rs-' || (substr(uid, 5) / 25), 1, 1
	FROM objects WHERE kind = 'Pod'`,
	`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 49)
	INSERT INTO objects (uid, resource_id, api_version, kind, namespace, name, resource_version, creation_timestamp)
	SELECT 'sa-' || i, (SELECT id FROM resources WHERE kind = 'ServiceAccount'), 'v1', 'ServiceAccount', 'ns-' || i, 'default', '1', :created FROM n`,
	`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 39999)
	INSERT INTO objects (uid, resource_id, api_version, kind, namespace, name, resource_version, creation_timestamp)
	SELECT 'cm-' || i, (SELECT id FROM resources WHERE kind = 'ConfigMap'), 'v1', 'ConfigMap', 'ns-' || (i % 50),
		'config-' || i, '1', :created FROM n`,
	`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 29999)
	INSERT INTO objects (uid, resource_id, api_version, kind, namespace, name, resource_version, creation_timestamp)
	SELECT 'sec-' || i, (SELECT id FROM resources WHERE kind = 'Secret'), 'v1', 'Secret', 'ns-' || (i % 50), 'secret-' || i, '1', :created FROM n`,
	`INSERT INTO secrets (uid, type) SELECT uid, 'Opaque' FROM objects WHERE kind = 'Secret'`,
	`INSERT INTO refs (referrer_uid, target_group, target_kind, target_namespace, target_name, via)
	SELECT uid, '', 'ServiceAccount', namespace, 'default', 'spec.serviceAccountName' FROM objects WHERE kind = 'Pod'`,
	`INSERT INTO refs (referrer_uid, target_group, target_kind, target_namespace, target_name, via)
	SELECT uid, '', 'ConfigMap', namespace, 'kube-root-ca.crt', 'spec.volumes[].projected.sources[].configMap'
	FROM objects WHERE kind = 'Pod'`,
	`UPDATE ref_history SET first_referenced = :created, last_referenced = :created`,
	`UPDATE resources SET first_synced_at = :created`,
}

// BenchmarkBuiltinRulesYoungMirror: one pass of each built-in rule over
// the mirror youngFill writes, as in the scale benchmark's heartbeats,
// where the passes recur every 5 minutes.
func BenchmarkBuiltinRulesYoungMirror(b *testing.B) {
	f := newFixture(b)
	for _, q := range youngFill {
		f.exec(q, sqlNamed("created", ts(now.Add(-10*time.Minute))))
	}
	if err := f.tx.Commit(); err != nil {
		b.Fatal(err)
	}
	f.tx = nil
	if _, err := f.raw.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		b.Fatal(err)
	}
	s := f.sandbox(db.SandboxOptions{TimeLimit: 10 * time.Minute})
	e := &Evaluator{Sandbox: s, Now: func() time.Time { return now }}
	for _, r := range Builtins() {
		b.Run(r.ID, func(b *testing.B) {
			cpu0 := cpuTime()
			for b.Loop() {
				ms, _, err := e.Evaluate(context.Background(), r)
				if err != nil || len(ms) != 0 {
					b.Fatal(len(ms), err)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
		})
	}
}
