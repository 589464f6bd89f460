package db

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubegcd/kubegcd/internal/testutil"
)

// TestRefsRowidMigration: migration 26 makes refs a rowid table and keeps
// every row; no target's history moves. Deleting a referrer then drops its
// rows (the cascade) and moves their targets' history (the trigger). The
// step down keeps the rows too.
func TestRefsRowidMigration(t *testing.T) {
	conn, m := migratedTo(t, 25)
	const then = "2026-01-01T00:00:00.000000Z"
	if _, err := conn.Exec(`INSERT INTO resources (id, api_group, version, resource, kind, namespaced) VALUES (1, '', 'v1', 'pods', 'Pod', 1);
		INSERT INTO objects (uid, resource_id, api_version, kind, namespace, name, resource_version)
			VALUES ('A', 1, 'v1', 'Pod', 'ns', 'a', '1'), ('B', 1, 'v1', 'Pod', 'ns', 'b', '1');
		INSERT INTO refs (referrer_uid, target_group, target_kind, target_namespace, target_name, via, optional, prefix)
			VALUES ('A', '', 'ConfigMap', 'ns', 'cm', 'spec.volumes[].configMap', 1, 0),
				('A', '', 'Secret', 'ns', 's', 'spec.imagePullSecrets[]', 0, 0),
				('B', '', 'ConfigMap', 'ns', 'cm', 'spec.volumes[].configMap', 0, 0),
				('B', '', 'PersistentVolumeClaim', 'ns', 'data-b', 'spec.volumes[].ephemeral', 0, 1);
		INSERT INTO ref_history (target_group, target_kind, target_namespace, target_name, prefix, first_referenced, last_referenced)
			VALUES ('', 'ConfigMap', 'ns', 'cm', 0, '` + then + `', '` + then + `'),
				('', 'Secret', 'ns', 's', 0, '` + then + `', '` + then + `'),
				('', 'PersistentVolumeClaim', 'ns', 'data-b', 1, '` + then + `', '` + then + `')`); err != nil {
		t.Fatal(err)
	}
	rows := func(query string) []string { t.Helper(); return testutil.StringRows(t, conn, query) }
	const refsQuery = `SELECT referrer_uid || ' ' || target_group || '/' || target_kind || ' ' || target_namespace || '/' ||
		target_name || ' ' || via || ' ' || optional || prefix FROM refs ORDER BY 1`
	const historyQuery = `SELECT target_kind || ' ' || target_name || ' ' || (last_referenced = '` + then + `')
		FROM ref_history ORDER BY 1`
	refs, history := rows(refsQuery), rows(historyQuery)
	if err := m.Migrate(26); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(refs, rows(refsQuery)); diff != "" {
		t.Errorf("refs after the migration (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(history, rows(historyQuery)); diff != "" {
		t.Errorf("ref_history after the migration (-before +after):\n%s", diff)
	}
	if _, err := conn.Exec(`DELETE FROM objects WHERE uid = 'A'`); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(refs[2:], rows(refsQuery)); diff != "" {
		t.Errorf("refs after A went (-want +got):\n%s", diff)
	}
	wantHistory := []string{"ConfigMap cm 0", "PersistentVolumeClaim data-b 1", "Secret s 0"}
	if diff := cmp.Diff(wantHistory, rows(historyQuery)); diff != "" {
		t.Errorf("ref_history after A went (-want +got):\n%s", diff)
	}
	if err := m.Migrate(25); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(refs[2:], rows(refsQuery)); diff != "" {
		t.Errorf("refs after the step down (-want +got):\n%s", diff)
	}
}

// BenchmarkRefsRowidMigration times migration 26 on a database of 100,000
// pods with six references each, as an upgrade runs it at start.
func BenchmarkRefsRowidMigration(b *testing.B) {
	const pods = 100_000
	for range b.N {
		b.StopTimer()
		conn, m := migratedTo(b, 25)
		if _, err := conn.Exec(`INSERT INTO resources (id, api_group, version, resource, kind, namespaced)
				VALUES (1, '', 'v1', 'pods', 'Pod', 1);
			WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?1)
			INSERT INTO objects (uid, resource_id, api_version, kind, namespace, name, resource_version)
			SELECT lower(hex(randomblob(16))), 1, 'v1', 'Pod', 'ns-' || (i % 50), 'pod-' || i, '1' FROM n;
			INSERT INTO refs (referrer_uid, target_group, target_kind, target_namespace, target_name, via)
			SELECT o.uid, '', t.kind, o.namespace, t.kind || '-' || (abs(random()) % 500), t.via
			FROM objects o, (SELECT 'ConfigMap' AS kind, 'spec.volumes[].configMap' AS via
				UNION ALL SELECT 'ConfigMap', 'spec.containers[].env[].valueFrom.configMapKeyRef'
				UNION ALL SELECT 'Secret', 'spec.containers[].envFrom[].secretRef'
				UNION ALL SELECT 'PersistentVolumeClaim', 'spec.volumes[].persistentVolumeClaim'
				UNION ALL SELECT 'Secret', 'spec.imagePullSecrets[]'
				UNION ALL SELECT 'ServiceAccount', 'spec.serviceAccountName') t`, pods); err != nil {
			b.Fatal(err)
		}
		conn.Close()
		b.StartTimer()
		if err := m.Migrate(26); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/upgrade")
}
