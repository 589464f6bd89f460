package db

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kubegcd/kubegcd/internal/api"
)

var copyT0 = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

// copyOf is a copy of a ConfigMap ns/name taken at copyT0 plus minutes.
func copyOf(uid, kind, resource, ns, name string, minutes int) *DeletedCopy {
	apiVersion := "v1"
	if kind == "Widget" {
		apiVersion = "example.com/v1"
	}
	return &DeletedCopy{
		Target:     api.Target{APIVersion: apiVersion, Kind: kind, Namespace: ns, Name: name, UID: uid},
		Resource:   resource,
		Controller: api.ControllerOwnerGC,
		TakenAt:    copyT0.Add(time.Duration(minutes) * time.Minute),
		Object:     []byte(`{"kind":"` + kind + `","metadata":{"name":"` + name + `","uid":"` + uid + `"},"data":{"k":"` + strings.Repeat("v", 100) + `"}}`),
	}
}

// openCopies is a database with the ConfigMap resource (short name cm)
// discovered, and no Widget resource.
func openCopies(t *testing.T, opts ...Options) Copies {
	t.Helper()
	d := openTemp(t, opts...)
	_, err := d.write.Exec(`INSERT INTO resources (id, api_group, version, resource, kind, namespaced, short_names)
		VALUES (1, '', 'v1', 'configmaps', 'ConfigMap', 1, '["cm"]')`)
	if err != nil {
		t.Fatal(err)
	}
	return d.Copies()
}

func putCopies(t *testing.T, c Copies, copies ...*DeletedCopy) {
	t.Helper()
	for _, dc := range copies {
		if err := c.PutDeletedCopy(context.Background(), dc); err != nil {
			t.Fatal(err)
		}
	}
}

func TestDeletedCopyRoundTrip(t *testing.T) {
	ctx := context.Background()
	c := openCopies(t)
	dc := copyOf("u1", "ConfigMap", "configmaps", "a", "one", 0)
	dc.RuleID, dc.RuleHash, dc.Controller, dc.SecretDataDropped = "stale", "h1", api.ControllerRules, true
	putCopies(t, c, dc)
	if dc.Size <= 0 || dc.Size >= int64(len(dc.Object)) {
		t.Errorf("size %d of a %d-byte object: want it compressed", dc.Size, len(dc.Object))
	}
	got, err := c.DeletedCopy(ctx, "u1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(dc, got); diff != "" {
		t.Errorf("copy read back (-want +got):\n%s", diff)
	}

	// Kept again for the same UID, it replaces the first.
	again := copyOf("u1", "ConfigMap", "configmaps", "a", "one", 5)
	putCopies(t, c, again)
	got, err = c.DeletedCopy(ctx, "u1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(again, got); diff != "" {
		t.Errorf("copy replaced (-want +got):\n%s", diff)
	}

	if err := c.DropDeletedCopy(ctx, "u1"); err != nil {
		t.Fatal(err)
	}
	_, err = c.DeletedCopy(ctx, "u1")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `no copy of a deleted object with uid "u1"`) {
		t.Errorf("dropped copy: %v, want a not-found error naming the uid", err)
	}
	if err := c.DropDeletedCopy(ctx, "u1"); err != nil {
		t.Errorf("dropping a copy that is not there: %v", err)
	}
}

func TestDeletedCopyCorrupt(t *testing.T) {
	c := openCopies(t)
	putCopies(t, c, copyOf("u1", "ConfigMap", "configmaps", "a", "one", 0))
	if _, err := c.write.Exec(`UPDATE deleted_copies SET body = x'00010203'`); err != nil {
		t.Fatal(err)
	}
	_, err := c.DeletedCopy(context.Background(), "u1")
	if !errors.Is(err, ErrCorruptCopy) || !strings.Contains(err.Error(), "the copy of ConfigMap u1 is corrupt: ") {
		t.Errorf("corrupt body: %v, want an error saying the copy is corrupt", err)
	}
}

func TestFindDeletedCopies(t *testing.T) {
	c := openCopies(t)
	putCopies(t, c,
		copyOf("u1", "ConfigMap", "configmaps", "a", "one", 0),
		copyOf("u2", "ConfigMap", "configmaps", "a", "one", 2),
		copyOf("u3", "ConfigMap", "configmaps", "b", "one", 1),
		copyOf("u4", "ConfigMap", "configmaps", "a", "two", 3),
		copyOf("w1", "Widget", "widgets", "a", "one", 4),
	)
	tests := []struct {
		kind, namespace, name string
		want                  []string
	}{
		{"ConfigMap", "a", "one", []string{"u2", "u1"}},
		{"configmap", "a", "one", []string{"u2", "u1"}},
		{"CONFIGMAPS", "a", "one", []string{"u2", "u1"}},
		{"cm", "a", "one", []string{"u2", "u1"}},
		{"cm", "", "one", []string{"u2", "u3", "u1"}},
		{"cm", "a", "", []string{"u4", "u2", "u1"}},
		// Widgets are served no longer: their copies' own kind and
		// resource find them.
		{"widget", "a", "one", []string{"w1"}},
		{"widgets", "a", "one", []string{"w1"}},
		{"widgets.example.com", "a", "one", []string{"w1"}},
		{"Secret", "a", "one", nil},
		{"", "a", "one", []string{"w1", "u2", "u1"}},
	}
	for _, tt := range tests {
		t.Run(tt.kind+"/"+tt.namespace+"/"+tt.name, func(t *testing.T) {
			got, err := c.FindDeletedCopies(context.Background(), tt.kind, tt.namespace, tt.name)
			if err != nil {
				t.Fatal(err)
			}
			var uids []string
			for _, dc := range got {
				if dc.Object != nil {
					t.Errorf("%s: listed with its object", dc.Target.UID)
				}
				uids = append(uids, dc.Target.UID)
			}
			if diff := cmp.Diff(tt.want, uids); diff != "" {
				t.Errorf("copies found (-want +got):\n%s", diff)
			}
		})
	}
}

func TestListDeletedCopiesPages(t *testing.T) {
	c := openCopies(t)
	ctx := context.Background()
	for i, uid := range []string{"a", "b", "c", "d", "e"} {
		putCopies(t, c, copyOf(uid, "ConfigMap", "configmaps", "a", uid, i%3))
	}
	// Newest first, then by UID backwards: minute 2 (c), 1 (e, b), 0 (d, a).
	want := []string{"c", "e", "b", "d", "a"}
	var got []string
	f := DeletedCopyFilter{Limit: 2}
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		items, next, err := c.ListDeletedCopies(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, dc := range items {
			got = append(got, dc.Target.UID)
		}
		if next == nil {
			break
		}
		f.After = next
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pages (-want +got):\n%s", diff)
	}
}

func TestMarkRestored(t *testing.T) {
	ctx := context.Background()
	c := openCopies(t)
	byRule := copyOf("u1", "ConfigMap", "configmaps", "a", "one", 0)
	byRule.Controller, byRule.RuleID, byRule.RuleHash = api.ControllerRules, "stale", "h1"
	putCopies(t, c, byRule, copyOf("u2", "ConfigMap", "configmaps", "a", "two", 0))
	at := copyT0.Add(time.Hour)

	tests := []struct {
		name, uid, restoredUID string
		wantErr                error
	}{
		{"a rule's deletion", "u1", "n1", nil},
		{"a collector's deletion", "u2", "n2", nil},
		{"again", "u1", "n3", ErrAlreadyRestored},
		{"no copy", "ghost", "n4", ErrNotFound},
	}
	for _, tt := range tests {
		err := c.MarkRestored(ctx, tt.uid, tt.restoredUID, at, "alice")
		if !errors.Is(err, tt.wantErr) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.wantErr)
		}
	}

	got, err := c.DeletedCopy(ctx, "u1")
	if err != nil {
		t.Fatal(err)
	}
	if got.RestoredUID != "n1" || got.RestoredBy != "alice" || got.RestoredAt == nil || !got.RestoredAt.Equal(at) {
		t.Errorf("restored copy: uid %q by %q at %v, want n1 by alice at %v", got.RestoredUID, got.RestoredBy,
			got.RestoredAt, at)
	}
	from, err := c.RestoredFrom(ctx, "n1")
	if err != nil || from == nil || from.Target.UID != "u1" {
		t.Errorf("RestoredFrom(n1) = %+v, %v; want the copy u1", from, err)
	}
	if from, err := c.RestoredFrom(ctx, "u1"); err != nil || from != nil {
		t.Errorf("RestoredFrom of an object not restored = %+v, %v; want nil", from, err)
	}

	spared := []struct {
		rule, hash string
		want       map[string]bool
	}{
		{"stale", "h1", map[string]bool{"n1": true}},
		{"stale", "h2", map[string]bool{}},
		{"other", "h1", map[string]bool{}},
	}
	for _, s := range spared {
		got, err := c.SparedUIDs(ctx, s.rule, s.hash)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(s.want, got); diff != "" {
			t.Errorf("SparedUIDs(%s, %s) (-want +got):\n%s", s.rule, s.hash, diff)
		}
	}
	by, err := c.SparedBy(ctx, "n1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Spared{{RuleID: "stale", RuleHash: "h1", UID: "n1", DeletedUID: "u1", At: at}}, by); diff != "" {
		t.Errorf("SparedBy(n1) (-want +got):\n%s", diff)
	}
	if by, err := c.SparedBy(ctx, "n2"); err != nil || len(by) != 0 {
		t.Errorf("SparedBy of a collector's restore = %v, %v; want none", by, err)
	}
}

func TestPruneDeletedCopies(t *testing.T) {
	ctx := context.Background()
	// Five copies, one a minute, each of the same size.
	uids := []string{"m0", "m1", "m2", "m3", "m4"}
	tests := []struct {
		name      string
		olderThan time.Duration // after copyT0
		maxCopies int64         // the bound, in copies' sizes; 0: none
		want      []string
	}{
		{"nothing old, no bound", 0, 0, uids},
		{"older than the retention", 2 * time.Minute, 0, []string{"m2", "m3", "m4"}},
		{"over the bound: the oldest go", 0, 3, []string{"m2", "m3", "m4"}},
		{"both", 3 * time.Minute, 1, []string{"m4"}},
		{"a bound of every copy", 0, 5, uids},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := openCopies(t)
			var size int64
			for i, uid := range uids {
				dc := copyOf(uid, "ConfigMap", "configmaps", "a", "same", i)
				putCopies(t, c, dc)
				size = dc.Size
			}
			removed, err := c.PruneDeletedCopies(ctx, copyT0.Add(tt.olderThan), tt.maxCopies*size)
			if err != nil {
				t.Fatal(err)
			}
			if removed != len(uids)-len(tt.want) {
				t.Errorf("removed %d, want %d", removed, len(uids)-len(tt.want))
			}
			if diff := cmp.Diff(tt.want, copiesLeft(t, c)); diff != "" {
				t.Errorf("copies left (-want +got):\n%s", diff)
			}
			n, bytes, err := c.DeletedCopiesSize(ctx)
			if err != nil || n != len(tt.want) || bytes != int64(len(tt.want))*size {
				t.Errorf("size: %d copies, %d bytes, %v; want %d, %d", n, bytes, err, len(tt.want), int64(len(tt.want))*size)
			}
		})
	}
}

// TestPutDeletedCopyBound: under --deleted-copies-max-bytes, a copy that
// would pass the bound drops the oldest in the same write, never itself; a
// copy larger than the bound alone is refused, and drops nothing.
func TestPutDeletedCopyBound(t *testing.T) {
	ctx := context.Background()
	size := int64(len(compress(copyOf("m0", "ConfigMap", "configmaps", "a", "same", 0).Object)))
	big := copyOf("big", "ConfigMap", "configmaps", "a", "same", 9)
	big.Object = make([]byte, 8*size) // random bytes do not compress
	if _, err := rand.Read(big.Object); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		puts []*DeletedCopy
		// refused is the index in puts of the put that fails; -1: none.
		refused int
		want    []string // oldest first
	}{
		{"under the bound", []*DeletedCopy{copyAt("m0", 0), copyAt("m1", 1)}, -1, []string{"m0", "m1"}},
		{"each put past the bound drops the oldest",
			[]*DeletedCopy{copyAt("m0", 0), copyAt("m1", 1), copyAt("m2", 2), copyAt("m3", 3), copyAt("m4", 4)}, -1,
			[]string{"m2", "m3", "m4"}},
		{"the copy put stays, though taken before the others",
			[]*DeletedCopy{copyAt("m1", 1), copyAt("m2", 2), copyAt("m3", 3), copyAt("m0", 0)}, -1,
			[]string{"m0", "m2", "m3"}},
		{"taken again for one UID, it counts once",
			[]*DeletedCopy{copyAt("m0", 0), copyAt("m1", 1), copyAt("m2", 2), copyAt("m0", 5)}, -1,
			[]string{"m1", "m2", "m0"}},
		{"larger than the bound alone: refused, nothing dropped",
			[]*DeletedCopy{copyAt("m0", 0), copyAt("m1", 1), big}, 2, []string{"m0", "m1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := openCopies(t, Options{DeletedCopiesMaxBytes: 3 * size})
			for i, dc := range tt.puts {
				err := c.PutDeletedCopy(ctx, dc)
				if i == tt.refused {
					if !errors.Is(err, ErrCopyTooLarge) {
						t.Fatalf("put %s: %v, want %v", dc.Target.UID, err, ErrCopyTooLarge)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if _, bytes, err := c.DeletedCopiesSize(ctx); err != nil || bytes > 3*size {
					t.Fatalf("after %s: %d bytes, %v; the bound is %d", dc.Target.UID, bytes, err, 3*size)
				}
			}
			if diff := cmp.Diff(tt.want, copiesLeft(t, c)); diff != "" {
				t.Errorf("copies left, oldest first (-want +got):\n%s", diff)
			}
		})
	}
}

// copiesLeft returns the UIDs of the copies c keeps, oldest first.
func copiesLeft(t *testing.T, c Copies) []string {
	t.Helper()
	left, err := c.FindDeletedCopies(context.Background(), "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	var uids []string
	for i := len(left) - 1; i >= 0; i-- {
		uids = append(uids, left[i].Target.UID)
	}
	return uids
}

// copyAt is a copy of the ConfigMap a/same with uid, taken at copyT0 plus
// minutes: every such copy compresses to the same size.
func copyAt(uid string, minutes int) *DeletedCopy {
	return copyOf(uid, "ConfigMap", "configmaps", "a", "same", minutes)
}

// TestDeletedCopiesTotal: the count and bytes that the metrics and the
// pruning read follow every change of the copies. A copy taken again for
// the same UID replaces the old one and counts once.
func TestDeletedCopiesTotal(t *testing.T) {
	ctx := context.Background()
	c := openCopies(t)
	big := copyOf("u1", "ConfigMap", "configmaps", "a", "one", 0)
	big.Object = append(big.Object[:len(big.Object):len(big.Object)], strings.Repeat(" ", 5000)...)
	steps := []struct {
		name string
		do   func() error
	}{
		{"three taken", func() error {
			putCopies(t, c, copyOf("u1", "ConfigMap", "configmaps", "a", "one", 0),
				copyOf("u2", "ConfigMap", "configmaps", "a", "two", 1), copyOf("u3", "ConfigMap", "configmaps", "a", "three", 2))
			return nil
		}},
		{"one taken again, larger", func() error { return c.PutDeletedCopy(ctx, big) }},
		{"one restored", func() error { return c.MarkRestored(ctx, "u2", "n2", copyT0, "admin") }},
		{"one dropped", func() error { return c.DropDeletedCopy(ctx, "u3") }},
		{"one dropped twice", func() error { return c.DropDeletedCopy(ctx, "u3") }},
		{"all pruned", func() error { _, err := c.PruneDeletedCopies(ctx, copyT0.Add(time.Hour), 0); return err }},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		var want struct {
			n     int
			bytes int64
		}
		if err := c.queryRow(ctx, `SELECT count(*), coalesce(sum(size), 0) FROM deleted_copies`).Scan(&want.n,
			&want.bytes); err != nil {
			t.Fatal(err)
		}
		n, bytes, err := c.DeletedCopiesSize(ctx)
		if err != nil || n != want.n || bytes != want.bytes {
			t.Errorf("%s: %d copies, %d bytes (%v); the table holds %d, %d", s.name, n, bytes, err, want.n, want.bytes)
		}
	}
}

// TestDeletedCopiesTotalMigration: migration 27 counts the copies a
// database already holds.
func TestDeletedCopiesTotalMigration(t *testing.T) {
	conn, m := migratedTo(t, 26)
	for i, size := range []int{120, 30} {
		if _, err := conn.Exec(`INSERT INTO deleted_copies (uid, api_version, kind, resource, name, controller,
			taken_at, size, body) VALUES (?, 'v1', 'ConfigMap', 'configmaps', ?, 'ownergc', '2026-03-01', ?, x'00')`,
			fmt.Sprint("u", i), fmt.Sprint("cm", i), size); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Migrate(27); err != nil {
		t.Fatal(err)
	}
	var n, bytes int64
	if err := conn.QueryRow(`SELECT copies, bytes FROM deleted_copies_total`).Scan(&n, &bytes); err != nil ||
		n != 2 || bytes != 150 {
		t.Errorf("after migration 27: %d copies, %d bytes (%v); want 2, 150", n, bytes, err)
	}
}
