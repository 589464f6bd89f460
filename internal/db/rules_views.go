package db

import "strings"

// The views are the cleanup rules' contract (docs/rules.md): a rule's
// SELECT reads them and nothing else. They are TEMP views on the rules'
// own connections, so that a rule's "objects" is the view while the table
// of that name stays out of its reach, and no schema change of the tables
// breaks a rule: a column is added to a view, never renamed without a
// deprecation. Every view reads its tables as main.<table>, since its own
// name hides the table of the same name.
//
// Times are text in the tables' format, 2006-01-02T15:04:05.000000Z, which
// sorts as time.
var ruleViews = []struct{ name, sql string }{
	{"objects", `SELECT o.uid, o.api_version, ` + groupSQL("o.api_version") + ` AS api_group, o.kind, o.namespace, o.name,
		o.creation_timestamp AS created_at, o.deletion_timestamp, o.deletion_timestamp IS NOT NULL AS deleting,
		(SELECT count(*) FROM main.owner_refs r WHERE r.dependent_uid = o.uid) AS owners
	FROM main.objects o`},
	{"labels", `SELECT uid, key, value FROM main.object_labels`},
	{"annotations", `SELECT uid, key, value FROM main.object_annotations`},
	// "references" is an SQL keyword, so the view is refs.
	// The referrer's columns are subqueries, not a join: a rule that
	// only asks whether a target is referenced reads the index of refs
	// alone. Every referrer is mirrored (refs cascade from objects).
	{"refs", `SELECT r.referrer_uid,
		(SELECT o.kind FROM main.objects o WHERE o.uid = r.referrer_uid) AS referrer_kind,
		(SELECT o.namespace FROM main.objects o WHERE o.uid = r.referrer_uid) AS referrer_namespace,
		(SELECT o.name FROM main.objects o WHERE o.uid = r.referrer_uid) AS referrer_name,
		r.target_group, r.target_kind, r.target_namespace, r.target_name, r.via, r.optional, r.prefix
	FROM main.refs r`},
	{"last_referenced", `SELECT target_group, target_kind, target_namespace, target_name, prefix, first_referenced,
		last_referenced FROM main.ref_history`},
	// cronjob_uid is the Job's controlling CronJob, from its owner
	// references, whether or not that CronJob still exists.
	{"jobs", `SELECT j.uid, j.complete, j.failed, j.finished_at, j.ttl_seconds_after_finished,
		(SELECT r.owner_uid FROM main.owner_refs r WHERE r.dependent_uid = j.uid AND r.kind = 'CronJob'
			AND r.api_version LIKE 'batch/%' AND r.controller = 1 ORDER BY r.position LIMIT 1) AS cronjob_uid
	FROM main.jobs j`},
	{"cronjobs", `SELECT uid, successful_jobs_history_limit, failed_jobs_history_limit, suspend FROM main.cronjobs`},
	{"secrets", `SELECT uid, type FROM main.secrets`},
	{"pvcs", `SELECT uid, phase, volume_name FROM main.pvcs`},
	{"workloads", `SELECT uid, replicas FROM main.workloads`},
	{"pods", `SELECT uid, phase, node_name FROM main.pods`},
	// watched_since is since when every referrer resource has been
	// mirrored: the latest first full list among those kubegcd watches,
	// NULL while one of them has never been listed. A target is never
	// unreferenced for longer than that.
	{"mirror", `SELECT CASE WHEN count(*) > 0 AND count(*) = count(first_synced_at) THEN max(first_synced_at) END
		AS watched_since
	FROM main.resources WHERE (api_group, kind) IN (` + referrerResources() + `)`},
}

// referrerKinds are the built-in referrers: the kinds whose specs name
// other objects, by API group. The mirror view's watched_since is the
// latest first sync among them.
var referrerKinds = [][2]string{
	{"", "Pod"}, {"", "ReplicationController"}, {"", "ServiceAccount"}, {"", "PersistentVolumeClaim"},
	{"", "PersistentVolume"},
	{"apps", "Deployment"}, {"apps", "ReplicaSet"}, {"apps", "StatefulSet"}, {"apps", "DaemonSet"},
	{"batch", "Job"}, {"batch", "CronJob"},
	{"networking.k8s.io", "Ingress"},
	{"rbac.authorization.k8s.io", "RoleBinding"}, {"rbac.authorization.k8s.io", "ClusterRoleBinding"},
	{"autoscaling", "HorizontalPodAutoscaler"},
}

func referrerResources() string {
	var b strings.Builder
	b.WriteString("VALUES ")
	for i, k := range referrerKinds {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(" + quoteSQL(k[0]) + ", " + quoteSQL(k[1]) + ")")
	}
	return b.String()
}

// quoteSQL is s as an SQL string literal.
func quoteSQL(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// RuleViews are the names of the views a rule may read.
func RuleViews() []string {
	out := make([]string, len(ruleViews))
	for i, v := range ruleViews {
		out[i] = v.name
	}
	return out
}

// createViewsSQL creates every view in the connection's TEMP schema, in
// two layers. SQLite tells the authorizer which view (or common table
// expression: it cannot tell them apart) a read of a table comes from, so
// a rule's own "WITH objects AS (SELECT * FROM main.objects)" would pass
// for the view objects. Hence the inner views, which alone read the
// tables, have names a rule cannot know (inner, secret to the process);
// the views of the contract read them.
func createViewsSQL(inner string) string {
	var b strings.Builder
	for _, v := range ruleViews {
		b.WriteString("CREATE TEMP VIEW " + inner + v.name + " AS " + v.sql + ";\n")
		b.WriteString("CREATE TEMP VIEW " + v.name + " AS SELECT * FROM temp." + inner + v.name + ";\n")
	}
	return b.String()
}
