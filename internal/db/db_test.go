package db

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-migrate/migrate/v4"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/testutil"
	"github.com/kubegcd/kubegcd/migrations"
)

// openTemp opens a fresh database, with opts when given.
func openTemp(t *testing.T, opts ...Options) *DB {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	d, err := Open(context.Background(), filepath.Join(t.TempDir(), "kubegcd.db"), o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// listAll writes objs as one complete list of resource rid, as the
// ingester's relist does: what it lacks leaves the mirror.
func listAll(t *testing.T, d *DB, rid int64, objs ...*Object) {
	t.Helper()
	ctx := context.Background()
	epoch, err := d.Mirror().BeginList(ctx, rid)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Mirror().WriteListPage(ctx, rid, epoch, objs); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Mirror().FinishList(ctx, rid, epoch, "1"); err != nil {
		t.Fatal(err)
	}
}

func tableNames(t *testing.T, path string) []string {
	t.Helper()
	conn, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return testutil.StringRows(t, conn, `SELECT name FROM sqlite_master
		WHERE type = 'table' AND name <> 'schema_migrations' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
}

func TestMigrateUpDownUp(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")

	v, dirty, err := Migrate(ctx, path, "up")
	if err != nil || dirty || v != LatestVersion() {
		t.Fatalf("up: version %d dirty %v err %v, want %d", v, dirty, err, LatestVersion())
	}
	up := tableNames(t, path)
	if len(up) == 0 {
		t.Fatal("no tables after migrating up")
	}
	for range LatestVersion() {
		if _, _, err := Migrate(ctx, path, "down"); err != nil {
			t.Fatalf("down: %v", err)
		}
	}
	if got := tableNames(t, path); len(got) != 0 {
		t.Fatalf("tables left after migrating all the way down: %v", got)
	}
	if v, _, err := Migrate(ctx, path, "version"); err != nil || v != 0 {
		t.Fatalf("version after down: %d, %v", v, err)
	}
	if _, _, err := Migrate(ctx, path, "up"); err != nil {
		t.Fatalf("up again: %v", err)
	}
	if got := tableNames(t, path); strings.Join(got, ",") != strings.Join(up, ",") {
		t.Fatalf("tables after up/down/up = %v, want %v", got, up)
	}
	if _, _, err := Migrate(ctx, path, "sideways"); err == nil {
		t.Fatal("unknown migrate command accepted")
	}
}

// TestEachDownMigrationRestoresTheSchema takes the schema up one migration
// at a time, then down and up again one at a time, and wants the schema
// at each version to be what it was on the way up: every table, column,
// index, trigger and view as sqlite_master records its SQL. A down
// migration that forgets a column, an index or a trigger fails here.
func TestEachDownMigrationRestoresTheSchema(t *testing.T) {
	path, m := emptyMigrate(t)
	step := func(n int, to uint) {
		t.Helper()
		if err := m.Steps(n); err != nil {
			t.Fatalf("migrating %+d to version %d: %v", n, to, err)
		}
	}
	// The versions need not be contiguous: a step goes to the next one.
	versions := append([]uint{0}, migrationVersions(t)...)
	schemas := []string{schemaOf(t, path)}
	for _, v := range versions[1:] {
		step(1, v)
		schemas = append(schemas, schemaOf(t, path))
	}
	for i := len(versions) - 1; i > 0; i-- {
		step(-1, versions[i-1])
		if got := schemaOf(t, path); got != schemas[i-1] {
			t.Errorf("down from %d: the schema of version %d is not restored:\n%s", versions[i], versions[i-1], schemaDiff(schemas[i-1], got))
		}
	}
	for i, v := range versions[1:] {
		step(1, v)
		if got := schemaOf(t, path); got != schemas[i+1] {
			t.Errorf("up to %d again: the schema differs from the first time:\n%s", v, schemaDiff(schemas[i+1], got))
		}
	}
}

// emptyMigrate creates an empty database file and returns its path and a
// migrate of it, closed when the test ends, to step its schema.
func emptyMigrate(t testing.TB) (string, *migrate.Migrate) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.db")
	if _, err := createPrivate(path); err != nil {
		t.Fatal(err)
	}
	m, err := newMigrate(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return path, m
}

// migratedTo creates a database at version and opens a connection to it
// with foreign keys on, closed when the test ends; m steps it further.
func migratedTo(t testing.TB, version uint) (conn *sql.DB, m *migrate.Migrate) {
	t.Helper()
	path, m := emptyMigrate(t)
	if err := m.Migrate(version); err != nil {
		t.Fatal(err)
	}
	conn, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn, m
}

// migrationVersions lists the versions of the embedded migrations, in order.
func migrationVersions(t *testing.T) []uint {
	t.Helper()
	entries, err := fs.ReadDir(migrations.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	var out []uint
	for _, e := range entries {
		n, _, ok := strings.Cut(e.Name(), "_")
		if !ok {
			continue
		}
		if v, err := strconv.ParseUint(n, 10, 32); err == nil && !slices.Contains(out, uint(v)) {
			out = append(out, uint(v))
		}
	}
	slices.Sort(out)
	if out[len(out)-1] != LatestVersion() {
		t.Fatalf("versions %v do not end at %d", out, LatestVersion())
	}
	return out
}

// schemaOf is the database's schema as sqlite_master records it, one line
// per table, index, trigger or view, sorted.
func schemaOf(t *testing.T, path string) string {
	t.Helper()
	conn, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rows, err := conn.Query(`SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master
		WHERE name <> 'schema_migrations' AND name <> 'version_unique' AND name NOT LIKE 'sqlite_%'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var typ, name, table, text string
		if err := rows.Scan(&typ, &name, &table, &text); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, typ+" "+name+" on "+table+": "+strings.Join(strings.Fields(text), " "))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// schemaDiff lists the lines of want missing from got (-) and the lines of
// got not in want (+).
func schemaDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var out []string
	for _, l := range w {
		if !slices.Contains(g, l) {
			out = append(out, "- "+l)
		}
	}
	for _, l := range g {
		if !slices.Contains(w, l) {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}

func TestNewerSchemaRefused(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "new.db")
	if _, _, err := Migrate(ctx, path, "up"); err != nil {
		t.Fatal(err)
	}
	conn, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(`UPDATE schema_migrations SET version = ?`, LatestVersion()+1); err != nil {
		t.Fatal(err)
	}
	conn.Close()

	_, err = Open(ctx, path, Options{})
	if err == nil || !strings.Contains(err.Error(), "newer than this kubegcd supports") {
		t.Fatalf("Open of a newer schema: err = %v, want refusal", err)
	}
	if _, _, err := Migrate(ctx, path, "down"); err == nil {
		t.Fatal("migrate down of a newer schema was not refused")
	}
}

func TestDirtySchemaRefused(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "dirty.db")
	if _, _, err := Migrate(ctx, path, "up"); err != nil {
		t.Fatal(err)
	}
	conn, _ := sql.Open("sqlite", "file:"+path)
	if _, err := conn.Exec(`UPDATE schema_migrations SET dirty = 1`); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if _, err := Open(ctx, path, Options{}); err == nil || !strings.Contains(err.Error(), "dirty") {
		t.Fatalf("Open of a dirty schema: err = %v", err)
	}
}

func TestLockedByAnotherOpen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "locked.db")
	first, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(ctx, path, Options{})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: err = %v, want ErrLocked", err)
	}
	if !strings.Contains(err.Error(), "pid") {
		t.Errorf("lock error does not name the holder: %v", err)
	}
	first.Close()
	second, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	second.Close()
}

func TestUnwritablePath(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{
		"under a file": filepath.Join(file, "nope", "x.db"),
		"a directory":  dir,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Open(context.Background(), path, Options{}); err == nil {
				t.Fatalf("Open(%s) succeeded", path)
			}
		})
	}
	if os.Geteuid() != 0 { // root ignores permission bits
		ro := filepath.Join(dir, "ro")
		os.Mkdir(ro, 0o500)
		if _, err := Open(context.Background(), filepath.Join(ro, "x.db"), Options{}); err == nil {
			t.Fatal("Open in a read-only directory succeeded")
		}
	}
}

func boolp(b bool) *bool { return &b }

// openConfigMaps opens a temporary database that mirrors ConfigMaps and
// returns it with the resource's id.
func openConfigMaps(t *testing.T) (*DB, int64) {
	t.Helper()
	d := openTemp(t)
	rid, err := d.Mirror().EnsureResource(context.Background(), Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	return d, rid
}

// configMap is the ConfigMap named and identified by uid in namespace ns,
// with a reference to each ConfigMap of owners.
func configMap(uid string, owners ...string) *Object {
	o := &Object{UID: uid, APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: uid, ResourceVersion: "1"}
	for _, u := range owners {
		o.OwnerReferences = append(o.OwnerReferences, api.OwnerRef{APIVersion: "v1", Kind: "ConfigMap", Name: u, UID: u})
	}
	return o
}

func TestObjectRoundTripAndRelist(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	rid, err := d.Mirror().EnsureResource(ctx, Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	owner := &Object{UID: "owner", APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "o", ResourceVersion: "1", CreationTimestamp: &created}
	dep := &Object{UID: "dep", APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "d", ResourceVersion: "2",
		Finalizers: []string{"a/b"},
		OwnerReferences: []api.OwnerRef{
			{APIVersion: "v1", Kind: "ConfigMap", Name: "o", UID: "owner", Controller: boolp(true), BlockOwnerDeletion: boolp(false)},
			{APIVersion: "apps/v1", Kind: "Deployment", Name: "x", UID: "gone"},
		}}
	epoch, err := d.Mirror().BeginList(ctx, rid)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Mirror().WriteListPage(ctx, rid, epoch, []*Object{owner, dep}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Mirror().FinishList(ctx, rid, epoch, "2"); err != nil {
		t.Fatal(err)
	}
	got, err := d.Objects().GetObject(ctx, "dep")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.OwnerReferences) != 2 || *got.OwnerReferences[0].Controller != true || *got.OwnerReferences[0].BlockOwnerDeletion ||
		got.OwnerReferences[1].Controller != nil || got.OwnerReferences[1].UID != "gone" || got.Finalizers[0] != "a/b" {
		t.Fatalf("dependent read back wrong: %+v", got)
	}
	if o, _ := d.Objects().GetObject(ctx, "owner"); o == nil || !o.CreationTimestamp.Equal(created) {
		t.Fatalf("owner read back wrong: %+v", o)
	}

	// A relist that no longer returns the owner removes it and reports it.
	epoch, _ = d.Mirror().BeginList(ctx, rid)
	if err := d.Mirror().WriteListPage(ctx, rid, epoch, []*Object{dep}); err != nil {
		t.Fatal(err)
	}
	changes, err := d.Mirror().FinishList(ctx, rid, epoch, "3")
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 2 || changes[0].Type != ChangeDeleted || changes[0].UID != "owner" || changes[0].ResourceID != rid || changes[1].Type != ChangeRelisted {
		t.Fatalf("relist changes = %+v", changes)
	}
	if _, err := d.Objects().GetObject(ctx, "owner"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("owner still mirrored after relist: %v", err)
	}

	// Watch events: delete cascades to owner refs.
	if _, err := d.Mirror().ApplyEvents(ctx, []Event{{ResourceID: rid, Deleted: true, Object: &Object{UID: "dep"}}}); err != nil {
		t.Fatal(err)
	}
	var refs int
	if err := d.read.QueryRow(`SELECT count(*) FROM owner_refs`).Scan(&refs); err != nil || refs != 0 {
		t.Fatalf("owner refs left after delete: %d, %v", refs, err)
	}
}

// A watch update writes every column that changed, whether it takes the
// narrow UPDATE (indexed columns unchanged) or the full upsert.
func TestWatchUpdateWritesWhatChanged(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)
	grace := int64(30)
	for _, tc := range []struct {
		name   string
		change func(o *Object)
	}{
		{"the version alone", func(o *Object) {}},
		{"finalizers", func(o *Object) { o.Finalizers = []string{"example.com/keep"} }},
		{"deletion requested", func(o *Object) { o.DeletionTimestamp, o.DeletionGracePeriodSeconds = &now, &grace }},
		{"owners", func(o *Object) {
			o.OwnerReferences = []api.OwnerRef{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "owner"}}
		}},
		{"another apiVersion", func(o *Object) { o.APIVersion = "example.com/v1" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, rid := openConfigMaps(t)
			if _, err := d.Mirror().ApplyEvents(ctx, eventsOf(rid, configMap("cm"))); err != nil {
				t.Fatal(err)
			}
			want := configMap("cm")
			want.ResourceVersion = "2"
			tc.change(want)
			if _, err := d.Mirror().ApplyEvents(ctx, eventsOf(rid, want)); err != nil {
				t.Fatal(err)
			}
			got, err := d.Objects().GetObject(ctx, "cm")
			if err != nil {
				t.Fatal(err)
			}
			if got.ResourceVersion != "2" || got.APIVersion != want.APIVersion || !slices.Equal(got.Finalizers, want.Finalizers) ||
				!timeEqual(got.DeletionTimestamp, want.DeletionTimestamp) ||
				!reflect.DeepEqual(got.DeletionGracePeriodSeconds, want.DeletionGracePeriodSeconds) ||
				len(got.OwnerReferences) != len(want.OwnerReferences) {
				t.Errorf("stored %+v, want %+v", got, want)
			}
		})
	}
}

func timeEqual(a, b *time.Time) bool {
	return (a == nil) == (b == nil) && (a == nil || a.Equal(*b))
}
