package rules

import (
	"slices"
	"strings"
)

// The built-in rules ship in report mode and run by default. Each is SQL
// over the views, as a user's rule is, and each leaves out what no
// built-in may touch (keepSQL): objects with ownerReferences (the owner
// garbage collector's), objects being deleted, the namespaces
// kube-system, kube-public and kube-node-lease, and objects marked to be
// kept (helm.sh/resource-policy: keep, kubegcd.io/keep=true, kor's
// kor/used=true). kor's kor/used=false makes an unused-* rule report the
// object, referenced or not, as kor does.

// builtin is a built-in rule and what an override of it may set.
type builtin struct {
	Rule
	params []paramSpec
	// reportOnly: the rule matches referrers, not garbage, and may never
	// act.
	reportOnly bool
}

type paramSpec struct {
	name     string
	duration bool
}

// Label and annotation keys the built-in rules read. The mirror must
// always keep them, whatever --mirror-labels and --mirror-annotations say.
var (
	BuiltinLabelKeys      = []string{"kor/used", "kubegcd.io/keep", "cleanup.kyverno.io/ttl"}
	BuiltinAnnotationKeys = []string{"helm.sh/resource-policy", "kubegcd.io/keep", "kubegcd.io/ttl", "kubegcd.io/expires",
		"janitor/ttl", "janitor/expires", "cleanup.kyverno.io/ttl"}
)

// SystemNamespaces are left out of every built-in rule.
var SystemNamespaces = []string{"kube-system", "kube-public", "kube-node-lease"}

// exception is a kor exception: objects kor never calls unused, by
// namespace and name, each a glob ("*" for every namespace).
type exception struct{ namespace, name string }

// korExceptions are kor's per-kind exceptions outside the system
// namespaces, which every built-in leaves out anyway.
var korExceptions = map[string][]exception{
	"ConfigMap": {
		{"*", "kube-root-ca.crt"}, {"*", "openshift-service-ca.crt"},
		{"gmp-system", "config-images"}, {"gmp-system", "webhook-ca"},
		{"kubernetes-dashboard", "kubernetes-dashboard-settings"},
	},
	"Secret": {
		{"kubernetes-dashboard", "kubernetes-dashboard-certs"}, {"kubernetes-dashboard", "kubernetes-dashboard-csrf"},
		{"kubernetes-dashboard", "kubernetes-dashboard-key-holder"},
		{"assisted-installer", "assisted-installer-controller-dockercfg-*"},
	},
	"ServiceAccount": {{"*", "default"}},
}

// keptSecretTypes are Secrets no built-in calls unused: Helm's releases,
// and the tokens and pull secrets Kubernetes (or OpenShift) makes for
// ServiceAccounts.
var keptSecretTypes = []string{"helm.sh/release.v1", "kubernetes.io/service-account-token", "kubernetes.io/dockercfg",
	"kubernetes.io/dockerconfigjson"}

// Referrer kinds whose pods a missing target stops.
var podReferrers = []string{"Pod", "ReplicationController", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet",
	"Job", "CronJob"}

const cutoffSQL = `time_add(:now, -duration_seconds(:grace))`

// keepSQL is the condition that object o is not left out of every
// built-in; withOwners also lets objects with owners through (the caller
// then decides on them).
func keepSQL(o string, withOwners bool) string {
	var b strings.Builder
	b.WriteString("NOT " + o + ".deleting")
	if !withOwners {
		b.WriteString("\n    AND " + o + ".owners = 0")
	}
	ns := sqlList(SystemNamespaces)
	b.WriteString("\n    AND " + o + ".namespace NOT IN " + ns)
	b.WriteString("\n    AND NOT (" + o + ".kind = 'Namespace' AND " + o + ".api_group = ''")
	b.WriteString(" AND " + o + ".name IN " + ns + ")")
	b.WriteString("\n    AND NOT EXISTS (SELECT 1 FROM annotations a WHERE a.uid = " + o + ".uid")
	b.WriteString("\n      AND (a.key = 'helm.sh/resource-policy' AND a.value = 'keep'")
	b.WriteString(" OR a.key = 'kubegcd.io/keep' AND a.value = 'true'))")
	b.WriteString("\n    AND NOT EXISTS (SELECT 1 FROM labels l WHERE l.uid = " + o + ".uid")
	b.WriteString("\n      AND (l.key = 'kor/used' AND l.value = 'true'")
	b.WriteString(" OR l.key = 'kubegcd.io/keep' AND l.value = 'true'))")
	return b.String()
}

// exceptionSQL is the condition that c is one of kor's exceptions of kind.
func exceptionSQL(c, kind string) string {
	var terms []string
	for _, e := range korExceptions[kind] {
		t := c + ".name GLOB " + quote(e.name)
		if e.namespace != "*" {
			t = c + ".namespace GLOB " + quote(e.namespace) + " AND " + t
		}
		terms = append(terms, t)
	}
	if len(terms) == 0 {
		return "0"
	}
	return "(" + strings.Join(terms, "\n        OR ") + ")"
}

// unused describes an unused-* rule: objects of kind (core group) that
// nothing references now, nor has for :grace, created before that, while
// kubegcd has watched the referrers for at least that long.
//
// The conditions come cheapest first, since SQLite checks them in the
// order written: a referenced object costs one lookup in refs, and only
// an unreferenced one is looked up in the history and the exclusions.
type unused struct {
	kind string
	// extra narrows the candidates: conditions on o, each after AND.
	extra string
	// refs are the conditions that nothing references o now; history
	// that nothing has since :cutoff; lastRef is when o was last
	// referenced ('' for never). Each defaults to o's exact references.
	refs, history, lastRef string
}

func (u unused) sql() string {
	kind := quote(u.kind)
	exact := `r.target_group = '' AND r.target_kind = ` + kind + ` AND r.target_namespace = o.namespace
      AND r.target_name = o.name`
	refs := u.refs
	if refs == "" {
		refs = `NOT EXISTS (SELECT 1 FROM refs r WHERE ` + exact + `)`
	}
	history := u.history
	if history == "" {
		history = `NOT EXISTS (SELECT 1 FROM last_referenced r WHERE ` + exact + ` AND r.prefix = 0
      AND r.last_referenced > ` + cutoffSQL + `)`
	}
	lastRef := u.lastRef
	if lastRef == "" {
		lastRef = `coalesce((SELECT r.last_referenced FROM last_referenced r WHERE ` + exact + ` AND r.prefix = 0), '')`
	}
	// kor/used=false first: the sandbox keeps a UID's first row. The
	// labelled objects are few: CROSS JOIN keeps SQLite from reading every
	// object of the kind and looking up its labels, which took 100 ms a
	// pass at 40,000 ConfigMaps.
	return `SELECT o.uid, 'labelled kor/used=false' AS reason
FROM labels k CROSS JOIN objects o ON o.uid = k.uid
WHERE k.key = 'kor/used' AND k.value = 'false' AND o.kind = ` + kind + ` AND o.api_version = 'v1'` + u.extra + `
  AND ` + keepSQL("o", false) + `
UNION ALL
SELECT o.uid, 'no reference since ' || max(coalesce(o.created_at, ''), w.watched_since, ` + lastRef + `) AS reason
FROM mirror w CROSS JOIN objects o
WHERE w.watched_since <= ` + cutoffSQL + `
  AND o.kind = ` + kind + ` AND o.api_version = 'v1'
  AND coalesce(o.created_at, '') <= ` + cutoffSQL + `
  AND ` + refs + `
  AND ` + history + `
  AND NOT ` + exceptionSQL("o", u.kind) + u.extra + `
  AND ` + keepSQL("o", false)
}

// A StatefulSet's claim <template>-<set>-<ordinal> is referenced by the
// prefix <template>-<set>- (internal/refs): its name without the ordinal.
const (
	claimStem   = `rtrim(o.name, '0123456789')`
	isClaimName = `(` + claimStem + ` != o.name AND ` + claimStem + ` GLOB '?*-')`
	claimPrefix = `r.target_group = '' AND r.target_kind = 'PersistentVolumeClaim' AND r.target_namespace = o.namespace
        AND r.prefix = 1 AND r.target_name = ` + claimStem
	claimExact = `r.target_group = '' AND r.target_kind = 'PersistentVolumeClaim' AND r.target_namespace = o.namespace
      AND r.target_name = o.name AND r.prefix = 0`
)

var unusedPVCs = unused{
	kind: "PersistentVolumeClaim",
	// A PersistentVolume's claimRef is the binding's other end, not a use.
	refs: `NOT EXISTS (SELECT 1 FROM refs r WHERE ` + claimExact + ` AND r.referrer_kind IS NOT 'PersistentVolume')
  AND NOT (` + isClaimName + ` AND EXISTS (SELECT 1 FROM refs r WHERE ` + claimPrefix + `))`,
	history: `NOT EXISTS (SELECT 1 FROM last_referenced r
      WHERE ` + claimExact + ` AND r.last_referenced > ` + cutoffSQL + `)
  AND NOT (` + isClaimName + ` AND EXISTS (SELECT 1 FROM last_referenced r
      WHERE ` + claimPrefix + ` AND r.last_referenced > ` + cutoffSQL + `))`,
	lastRef: `max(coalesce((SELECT r.last_referenced FROM last_referenced r WHERE ` + claimExact + `), ''),
    CASE WHEN ` + isClaimName + ` THEN coalesce((SELECT max(r.last_referenced) FROM last_referenced r
      WHERE ` + claimPrefix + `), '') ELSE '' END)`,
}

var builtins = []*builtin{
	{
		Rule: Rule{
			ID: "unused-configmaps",
			Description: "ConfigMaps nothing has referenced for grace (Pods, the pod templates of workloads and CronJobs, " +
				"and declared custom resources), unless kor/used=false says to report them anyway.",
			Select: unused{kind: "ConfigMap"}.sql(),
			Params: map[string]any{"grace": "24h"},
		},
		params: []paramSpec{{name: "grace", duration: true}},
	},
	{
		Rule: Rule{
			ID: "unused-secrets",
			Description: "Secrets nothing has referenced for grace; never Helm releases, service-account tokens " +
				"or pull secrets made for ServiceAccounts.",
			Select: unused{kind: "Secret", extra: `
  AND NOT EXISTS (SELECT 1 FROM secrets s WHERE s.uid = o.uid AND s.type IN ` + sqlList(keptSecretTypes) + `)`}.sql(),
			Params: map[string]any{"grace": "24h"},
		},
		params: []paramSpec{{name: "grace", duration: true}},
	},
	{
		Rule: Rule{
			ID: "unused-pvcs",
			Description: "PersistentVolumeClaims no Pod, pod template or StatefulSet claim template has referenced " +
				"for grace (a PersistentVolume's claimRef does not count).",
			Select: unusedPVCs.sql(),
			Params: map[string]any{"grace": "24h"},
		},
		params: []paramSpec{{name: "grace", duration: true}},
	},
	{
		Rule: Rule{
			ID: "unused-serviceaccounts",
			Description: "ServiceAccounts no Pod, pod template, RoleBinding or ClusterRoleBinding has referenced " +
				"for grace; never a namespace's default.",
			Select: unused{kind: "ServiceAccount"}.sql(),
			Params: map[string]any{"grace": "24h"},
		},
		params: []paramSpec{{name: "grace", duration: true}},
	},
	{
		Rule: Rule{
			ID: "finished-jobs",
			Description: "Jobs Complete or Failed for min_age without ttlSecondsAfterFinished: standalone ones, " +
				"and a CronJob's beyond its history limit (successful 3, failed 1 unless it says otherwise).",
			Select:   finishedJobsSQL,
			Params:   map[string]any{"min_age": "24h"},
			Interval: DefaultInterval,
		},
		params: []paramSpec{{name: "min_age", duration: true}},
	},
	{
		Rule: Rule{
			ID: "dangling-references",
			Description: "Pods and workloads that refer to a ConfigMap, Secret, PersistentVolumeClaim or ServiceAccount " +
				"that does not exist, so their next Pod will not start (optional references left out).",
			Select: danglingSQL,
		},
		reportOnly: true,
	},
	{
		Rule: Rule{
			ID: "ttl-expired",
			Description: "Objects of any kind, Namespaces and cluster-scoped ones included, past their TTL: " +
				"kubegcd.io/ttl (from creation) or kubegcd.io/expires, kube-janitor's janitor/ttl and janitor/expires, " +
				"Kyverno's cleanup.kyverno.io/ttl. A value that does not parse is a finding, never a match.",
			Select: ttlSQL,
		},
	},
}

// finishedJobsSQL ranks a CronJob's finished Jobs newest first, the
// failed apart from the successful, as the CronJob controller counts
// them against its history limits.
var finishedJobsSQL = `WITH finished AS MATERIALIZED (
  SELECT o.uid, o.kind, o.api_group, o.namespace, o.name, o.deleting, o.owners, j.failed, j.cronjob_uid,
    coalesce(j.finished_at, o.created_at) AS finished_at, CASE WHEN j.failed THEN 'Failed' ELSE 'Complete' END AS state
  FROM objects o JOIN jobs j ON j.uid = o.uid
  WHERE o.kind = 'Job' AND o.api_version LIKE 'batch/%' AND (j.complete OR j.failed)
    AND j.ttl_seconds_after_finished IS NULL AND NOT o.deleting
), ranked AS (
  SELECT f.*, row_number() OVER (PARTITION BY f.cronjob_uid, f.failed ORDER BY f.finished_at DESC, f.uid) AS place
  FROM finished f
  WHERE f.cronjob_uid IS NOT NULL AND f.owners = 1
)
SELECT f.uid, f.state || ' since ' || f.finished_at || ', no ttlSecondsAfterFinished' AS reason
FROM finished f
WHERE f.owners = 0 AND f.finished_at <= time_add(:now, -duration_seconds(:min_age))
  AND ` + keepSQL("f", true) + `
UNION ALL
SELECT r.uid, r.state || ' since ' || r.finished_at || ', number ' || r.place || ' of CronJob ' || c.name
  || ', whose history keeps ' || CASE WHEN r.failed THEN coalesce(cj.failed_jobs_history_limit, 1)
                                     ELSE coalesce(cj.successful_jobs_history_limit, 3) END AS reason
FROM ranked r
  JOIN objects c ON c.uid = r.cronjob_uid
  LEFT JOIN cronjobs cj ON cj.uid = r.cronjob_uid
WHERE r.place > CASE WHEN r.failed THEN coalesce(cj.failed_jobs_history_limit, 1)
                     ELSE coalesce(cj.successful_jobs_history_limit, 3) END
  AND r.finished_at <= time_add(:now, -duration_seconds(:min_age))
  AND ` + keepSQL("r", true)

// danglingSQL asks first whether each target exists, once per target: it
// reads the distinct targets from the index of refs alone, and only the
// references to a missing target from the table. Pods all refer to their
// namespace's default ServiceAccount and kube-root-ca.crt: at 50,000 Pods,
// a lookup per reference took 130 ms a pass. An object of another group
// with the target's kind and name would pass for it.
// A reference to a missing target then meets the exclusions first: most
// referrers are Pods with an owner, which one lookup leaves out.
// The unary plus keeps SQLite from grouping through the index on
// referrers, which costs a row lookup for every reference: it groups the
// few dangling ones.
var danglingSQL = `WITH missing AS MATERIALIZED (
  SELECT t.target_kind, t.target_namespace, t.target_name
  FROM (SELECT DISTINCT target_kind, target_namespace, target_name FROM refs
    WHERE target_group = '' AND target_kind IN ('ConfigMap', 'Secret', 'PersistentVolumeClaim', 'ServiceAccount')
      AND NOT prefix) t
  WHERE NOT EXISTS (SELECT 1 FROM objects o WHERE o.kind = t.target_kind AND o.namespace = t.target_namespace
    AND o.name = t.target_name)
)
SELECT r.referrer_uid AS uid,
  'refers to ' || group_concat(r.target_kind || ' ' || r.target_name || ' (' || r.via || ')', ', ')
  || ', which does not exist' AS reason
FROM missing m CROSS JOIN refs r ON r.target_kind = m.target_kind AND r.target_namespace = m.target_namespace
  AND r.target_name = m.target_name
WHERE r.target_group = '' AND NOT r.optional AND NOT r.prefix
  -- an ephemeral volume's claim is made for its Pod, after it
  AND r.via NOT LIKE '%ephemeral%'
  AND EXISTS (SELECT 1 FROM objects o WHERE o.uid = r.referrer_uid
    AND ` + keepSQL("o", false) + `
    -- a Pod or a Job that has finished starts no Pod again
    AND NOT EXISTS (SELECT 1 FROM pods p WHERE p.uid = o.uid AND p.phase IN ('Succeeded', 'Failed'))
    AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.uid = o.uid AND (j.complete OR j.failed)))
  AND r.referrer_kind IN ` + sqlList(podReferrers) + `
GROUP BY +r.referrer_uid`

var ttlSQL = `WITH ttl AS (
  SELECT a.uid, a.key, a.value FROM annotations a
  WHERE a.key IN ('kubegcd.io/ttl', 'kubegcd.io/expires', 'janitor/ttl', 'janitor/expires', 'cleanup.kyverno.io/ttl')
  UNION ALL
  SELECT l.uid, l.key, l.value FROM labels l WHERE l.key = 'cleanup.kyverno.io/ttl'
), expiry AS (
  SELECT t.uid, t.key, t.value,
    CASE WHEN t.key IN ('kubegcd.io/expires', 'janitor/expires') THEN parse_time(t.value)
         WHEN t.key = 'cleanup.kyverno.io/ttl'
           THEN coalesce(time_add(o.created_at, duration_seconds(t.value)), parse_time(t.value))
         ELSE time_add(o.created_at, duration_seconds(t.value)) END AS expires_at
  FROM ttl t JOIN objects o ON o.uid = t.uid
  -- kube-janitor's janitor/ttl: forever never expires
  WHERE lower(trim(t.value)) != 'forever'
    AND ` + keepSQL("o", false) + `
)
SELECT uid,
  group_concat(CASE WHEN expires_at IS NULL
    THEN key || '=' || value || ' is not a ' || CASE WHEN key GLOB '*expires' THEN 'time' ELSE 'duration' END
    ELSE key || '=' || value || ' expired at ' || expires_at END, '; ') AS reason,
  min(expires_at IS NULL) AS finding
FROM expiry
WHERE expires_at IS NULL OR expires_at <= :now
GROUP BY uid`

func init() {
	for _, b := range builtins {
		if b.Interval == 0 {
			b.Interval = DefaultInterval
		}
		b.Mode, b.Occurrences, b.Propagation = ModeReport, DefaultOccurrences, DefaultPropagation
		b.Source = Source{BuiltIn: true}
		b.Hash = b.hash()
	}
}

// Builtins returns the built-in rules as shipped, each a copy of its own.
func Builtins() []*Rule {
	out := make([]*Rule, len(builtins))
	for i, b := range builtins {
		out[i] = b.clone()
	}
	return out
}

func builtinByID(id string) *builtin {
	for _, b := range builtins {
		if b.ID == id {
			return b
		}
	}
	return nil
}

func (b *builtin) cloneParams() map[string]any {
	out := make(map[string]any, len(b.Params))
	for k, v := range b.Params {
		out[k] = v
	}
	return out
}

func (b *builtin) param(name string) (paramSpec, bool) {
	i := slices.IndexFunc(b.params, func(p paramSpec) bool { return p.name == name })
	if i < 0 {
		return paramSpec{}, false
	}
	return b.params[i], true
}

func (b *builtin) paramNames() []string {
	var out []string
	for _, p := range b.params {
		out = append(out, p.name)
	}
	return out
}

// quote is s as an SQL string literal.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// sqlList is ss as a parenthesised list of SQL string literals.
func sqlList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = quote(s)
	}
	return "(" + strings.Join(q, ", ") + ")"
}
