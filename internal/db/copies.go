package db

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
)

// opCopies writes the copies of deleted objects and what restores record.
var opCopies = writeOp{name: "copies"}

// ErrAlreadyRestored is MarkRestored's answer for a copy that a restore
// already used.
var ErrAlreadyRestored = errors.New("already restored")

// ErrCopyTooLarge is PutDeletedCopy's answer for a copy that alone takes
// more than the bound on the copies' bytes.
var ErrCopyTooLarge = errors.New("larger than --deleted-copies-max-bytes")

// ErrCorruptCopy is DeletedCopy's answer for a copy whose body does not
// decompress.
var ErrCorruptCopy = errors.New("corrupt")

// DeletedCopy is the copy of an object kubegcd deleted, kept for a
// restore.
type DeletedCopy struct {
	// Target is the deleted object: its apiVersion, kind, namespace, name
	// and UID.
	Target api.Target
	// Resource is the plural resource that serves it, such as configmaps.
	Resource string
	// Controller deleted it: api.ControllerRules, or a collector that
	// --deleted-copies-for names.
	Controller api.Controller
	// RuleID and RuleHash name the cleanup rule that deleted it and the
	// hash of its text; "" for a collector.
	RuleID, RuleHash string
	TakenAt          time.Time
	// Object is the object as JSON. It is stored gzip-compressed. The
	// listings leave it nil.
	Object []byte
	// Size is the length of the compressed copy, in bytes.
	Size int64
	// SecretDataDropped: the object is a Secret whose data was not kept.
	SecretDataDropped bool
	// RestoredUID is the UID of the object a restore made from the copy;
	// "" until then. RestoredAt and RestoredBy say when and who asked.
	RestoredUID string
	RestoredAt  *time.Time
	RestoredBy  string
}

// Spared is an object restored from the copy of one a rule deleted: that
// rule leaves it alone while its text hashes to RuleHash.
type Spared struct {
	RuleID, RuleHash string
	// UID is the restored object's; DeletedUID the copy's.
	UID, DeletedUID string
	At              time.Time
}

// gzipWriters are reused: a writer holds some 800 KB of tables.
var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed) // a valid level never fails
	return w
}}

// compress gzips b. The fastest level: a copy is taken before each delete
// it keeps, and JSON shrinks well at any level.
func compress(b []byte) []byte {
	var buf bytes.Buffer
	w := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(w)
	w.Reset(&buf)
	_, _ = w.Write(b) // a bytes.Buffer does not fail
	_ = w.Close()
	return buf.Bytes()
}

// decompress reads what compress wrote.
func decompress(b []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// PutDeletedCopy stores dc, its object compressed, in place of any copy of
// the same UID. It sets dc.Size. Under a bound on the copies' bytes
// (Options.DeletedCopiesMaxBytes), the oldest copies go, in the same
// write, until the rest and dc fit: a burst of deletes never passes the
// bound, which the hourly pruning alone would let it do for an hour. A
// copy larger than the bound alone is refused with an error that wraps
// ErrCopyTooLarge, and nothing is dropped for it.
func (c Copies) PutDeletedCopy(ctx context.Context, dc *DeletedCopy) error {
	if dc.Target.UID == "" {
		return errors.New("deleted copy: no uid")
	}
	body := compress(dc.Object)
	if bound := c.copiesMaxBytes; bound > 0 && int64(len(body)) > bound {
		return fmt.Errorf("keeping a copy of %s: %d bytes compressed, %w (%d)", dc.Target.UID, len(body),
			ErrCopyTooLarge, bound)
	}
	err := c.inWriteTx(ctx, opCopies, func(tx *sql.Tx) error {
		// Delete, then insert: REPLACE would fire no trigger of
		// deleted_copies_total for the copy it replaces.
		if _, err := tx.ExecContext(ctx, `DELETE FROM deleted_copies WHERE uid = ?`, dc.Target.UID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO deleted_copies (uid, api_version, kind, resource,
			namespace, name, controller, rule_id, rule_hash, taken_at, secret_data_dropped, size,
			restored_uid, restored_at, restored_by, body)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			dc.Target.UID, dc.Target.APIVersion, dc.Target.Kind, dc.Resource, dc.Target.Namespace, dc.Target.Name,
			dc.Controller, dc.RuleID, dc.RuleHash, formatTime(&dc.TakenAt), dc.SecretDataDropped, len(body),
			dc.RestoredUID, formatTime(dc.RestoredAt), dc.RestoredBy, body)
		if err != nil || c.copiesMaxBytes <= 0 {
			return err
		}
		_, err = trimCopies(ctx, tx, c.copiesMaxBytes, dc.Target.UID)
		return err
	})
	if err != nil {
		return fmt.Errorf("keeping a copy of %s: %w", dc.Target.UID, err)
	}
	dc.Size = int64(len(body))
	return nil
}

// DropDeletedCopy removes the copy of uid: the delete it was taken for did
// not happen after all. No copy is no error.
func (c Copies) DropDeletedCopy(ctx context.Context, uid string) error {
	err := c.inWriteTx(ctx, opCopies, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM deleted_copies WHERE uid = ?`, uid)
		return err
	})
	if err != nil {
		return fmt.Errorf("dropping the copy of %s: %w", uid, err)
	}
	return nil
}

// SparedUIDs returns the objects the rule ruleID spares while its text
// hashes to ruleHash: those restored from the copies of objects it
// deleted with that text.
func (c Copies) SparedUIDs(ctx context.Context, ruleID, ruleHash string) (map[string]bool, error) {
	out := map[string]bool{}
	err := eachString(ctx, c.read, `SELECT uid FROM rule_spared WHERE rule_id = ? AND rule_hash = ?`,
		func(uid string) { out[uid] = true }, ruleID, ruleHash)
	if err != nil {
		return nil, fmt.Errorf("objects spared by rule %s: %w", ruleID, err)
	}
	return out, nil
}

// SparedBy returns the rules that spare uid, by rule id, whatever their
// text hashes to now.
func (c Copies) SparedBy(ctx context.Context, uid string) ([]Spared, error) {
	rows, err := c.query(ctx, `SELECT rule_id, rule_hash, uid, deleted_uid, at FROM rule_spared
		WHERE uid = ? ORDER BY rule_id`, uid)
	if err != nil {
		return nil, fmt.Errorf("rules that spare %s: %w", uid, err)
	}
	defer rows.Close()
	var out []Spared
	for rows.Next() {
		var s Spared
		var at sql.NullString
		if err := rows.Scan(&s.RuleID, &s.RuleHash, &s.UID, &s.DeletedUID, &at); err != nil {
			return nil, fmt.Errorf("rules that spare %s: %w", uid, err)
		}
		if t := parseTime(at); t != nil {
			s.At = *t
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("rules that spare %s: %w", uid, err)
	}
	return out, nil
}

// copyColumns are the columns of a copy but its body.
const copyColumns = `uid, api_version, kind, resource, namespace, name, controller, rule_id, rule_hash,
	taken_at, secret_data_dropped, size, restored_uid, restored_at, restored_by`

// scanCopy reads a row of copyColumns, then of more, into dc.
func scanCopy(rows interface{ Scan(...any) error }, dc *DeletedCopy, more ...any) error {
	var taken, restored sql.NullString
	err := rows.Scan(append([]any{&dc.Target.UID, &dc.Target.APIVersion, &dc.Target.Kind, &dc.Resource,
		&dc.Target.Namespace, &dc.Target.Name, &dc.Controller, &dc.RuleID, &dc.RuleHash, &taken,
		&dc.SecretDataDropped, &dc.Size, &dc.RestoredUID, &restored, &dc.RestoredBy}, more...)...)
	if err != nil {
		return err
	}
	if t := parseTime(taken); t != nil {
		dc.TakenAt = *t
	}
	dc.RestoredAt = parseTime(restored)
	return nil
}

// DeletedCopy returns the copy of the deleted object uid, its object
// decompressed. No copy is an error that wraps ErrNotFound; a body that
// does not decompress, one that says the copy is corrupt.
func (c Copies) DeletedCopy(ctx context.Context, uid string) (*DeletedCopy, error) {
	var dc DeletedCopy
	var body []byte
	err := scanCopy(c.queryRow(ctx, `SELECT `+copyColumns+`, body FROM deleted_copies WHERE uid = ?`, uid), &dc, &body)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, fmt.Errorf("no copy of a deleted object with uid %q: %w", uid, ErrNotFound)
	case err != nil:
		return nil, fmt.Errorf("the copy of %s: %w", uid, err)
	}
	if dc.Object, err = decompress(body); err != nil {
		return nil, fmt.Errorf("the copy of %s %s is %w: %w", dc.Target.Kind, dc.Target.UID, ErrCorruptCopy, err)
	}
	return &dc, nil
}

// RestoredFrom returns the copy that the object uid was restored from,
// without its object; nil when it was not restored.
func (c Copies) RestoredFrom(ctx context.Context, uid string) (*DeletedCopy, error) {
	var dc DeletedCopy
	err := scanCopy(c.queryRow(ctx, `SELECT `+copyColumns+` FROM deleted_copies
		WHERE restored_uid = ? AND restored_uid <> ''`, uid), &dc)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("the copy %s was restored from: %w", uid, err)
	}
	return &dc, nil
}

// DeletedCopyFilter selects copies. Zero fields select every copy.
type DeletedCopyFilter struct {
	// Kind is a kind in any case, a resource's plural, or a short name
	// discovery lists, each alone or with .group.
	Kind      string
	Namespace string
	Name      string
	// After continues a listing after the copy it names: the key
	// ListDeletedCopies returned with a page.
	After *DeletedCopyKey
	// Limit bounds a page (default 100).
	Limit int
}

// DeletedCopyKey is a copy's place in the listing: newest first, then by
// UID.
type DeletedCopyKey struct {
	TakenAt time.Time
	UID     string
}

// ListDeletedCopies returns the copies f selects, newest first, without
// their objects, and the key to continue after (nil at the end).
func (c Copies) ListDeletedCopies(ctx context.Context, f DeletedCopyFilter) ([]DeletedCopy, *DeletedCopyKey, error) {
	var where []string
	var args []any
	if f.Kind != "" {
		cond, kargs, err := c.copyKindCondition(ctx, f.Kind)
		if err != nil {
			return nil, nil, fmt.Errorf("deleted copies: %w", err)
		}
		where = append(where, cond)
		args = append(args, kargs...)
	}
	if f.Namespace != "" {
		where = append(where, "namespace = ?")
		args = append(args, f.Namespace)
	}
	if f.Name != "" {
		where = append(where, "name = ?")
		args = append(args, f.Name)
	}
	if k := f.After; k != nil {
		where = append(where, "(taken_at, uid) < (?, ?)")
		args = append(args, formatTime(&k.TakenAt), k.UID)
	}
	if f.Limit <= 0 {
		f.Limit = 100
	}
	q := `SELECT ` + copyColumns + ` FROM deleted_copies`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY taken_at DESC, uid DESC LIMIT ?"
	args = append(args, f.Limit+1)
	rows, err := c.read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("deleted copies: %w", err)
	}
	defer rows.Close()
	out := []DeletedCopy{}
	for rows.Next() {
		var dc DeletedCopy
		if err := scanCopy(rows, &dc); err != nil {
			return nil, nil, fmt.Errorf("deleted copies: %w", err)
		}
		out = append(out, dc)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("deleted copies: %w", err)
	}
	out, next := page(out, f.Limit, func(dc DeletedCopy) DeletedCopyKey {
		return DeletedCopyKey{TakenAt: dc.TakenAt, UID: dc.Target.UID}
	})
	return out, next, nil
}

// FindDeletedCopies returns every copy of the objects of that kind,
// namespace and name, newest first, without their objects. Kind is
// matched as DeletedCopyFilter.Kind; "" namespace is any, as is "" name.
func (c Copies) FindDeletedCopies(ctx context.Context, kind, namespace, name string) ([]DeletedCopy, error) {
	var out []DeletedCopy
	f := DeletedCopyFilter{Kind: kind, Namespace: namespace, Name: name, Limit: 1000}
	for {
		got, next, err := c.ListDeletedCopies(ctx, f)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
		if next == nil {
			return out, nil
		}
		f.After = next
	}
}

// copyKindCondition matches kind as kubectl would: the kinds whose
// resource discovery recorded under that kind, plural, singular or short
// name (alone or with .group), or the copy's own kind, in any case, or its
// resource. A kind no resource serves any longer still finds its copies.
func (c Copies) copyKindCondition(ctx context.Context, kind string) (string, []any, error) {
	kinds := []any{kind}
	err := eachString(ctx, c.read, `SELECT DISTINCT kind FROM resources WHERE lower(?1) IN (lower(kind), resource,
		lower(kind) || '.' || api_group, resource || '.' || api_group)
		OR EXISTS (SELECT 1 FROM json_each(short_names) WHERE lower(value) = lower(?1))`,
		func(k string) { kinds = append(kinds, k) }, kind)
	if err != nil {
		return "", nil, err
	}
	lower := strings.ToLower(kind)
	args := append(kinds, lower, lower)
	return `(kind COLLATE NOCASE IN (?` + strings.Repeat(", ?", len(kinds)-1) + `) OR resource = ? OR resource || '.' || ` +
		groupSQL("api_version") + ` = ?)`, args, nil
}

// MarkRestored records that the copy uid was restored as the object
// restoredUID, at at, by who asked. When a rule deleted the original, the
// restored object is spared by that rule while the rule's text hashes as
// it did. A copy already restored is an error that wraps
// ErrAlreadyRestored, and no copy one that wraps ErrNotFound.
func (c Copies) MarkRestored(ctx context.Context, uid, restoredUID string, at time.Time, by string) error {
	err := c.inWriteTx(ctx, opCopies, func(tx *sql.Tx) error {
		var ruleID, ruleHash, was string
		err := tx.QueryRowContext(ctx, `SELECT rule_id, rule_hash, restored_uid FROM deleted_copies WHERE uid = ?`,
			uid).Scan(&ruleID, &ruleHash, &was)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("no copy of a deleted object with uid %q: %w", uid, ErrNotFound)
		case err != nil:
			return err
		case was != "":
			return fmt.Errorf("the copy of %s was restored as %s: %w", uid, was, ErrAlreadyRestored)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE deleted_copies SET restored_uid = ?, restored_at = ?, restored_by = ?
			WHERE uid = ?`, restoredUID, formatTime(&at), by, uid); err != nil {
			return err
		}
		if ruleID == "" {
			return nil
		}
		_, err = tx.ExecContext(ctx, `INSERT OR REPLACE INTO rule_spared (rule_id, uid, rule_hash, deleted_uid, at)
			VALUES (?, ?, ?, ?, ?)`, ruleID, restoredUID, ruleHash, uid, formatTime(&at))
		return err
	})
	if err != nil {
		return fmt.Errorf("recording the restore of %s: %w", uid, err)
	}
	return nil
}

// PruneDeletedCopies removes the copies taken before olderThan, then the
// oldest until the rest take at most maxBytes (0: no bound), and the
// records of spared objects that are gone and older than olderThan. It
// returns how many copies it removed.
func (c Copies) PruneDeletedCopies(ctx context.Context, olderThan time.Time, maxBytes int64) (removed int, err error) {
	err = c.inWriteTx(ctx, opCopies, func(tx *sql.Tx) error {
		removed = 0
		cutoff := formatTime(&olderThan)
		res, err := tx.ExecContext(ctx, `DELETE FROM deleted_copies WHERE taken_at < ?`, cutoff)
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		removed = int(n)
		if _, err := tx.ExecContext(ctx, `DELETE FROM rule_spared WHERE at < ?
			AND NOT EXISTS (SELECT 1 FROM objects o WHERE o.uid = rule_spared.uid)`, cutoff); err != nil {
			return err
		}
		if maxBytes <= 0 {
			return nil
		}
		trimmed, err := trimCopies(ctx, tx, maxBytes, "")
		removed += trimmed
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("pruning deleted copies: %w", err)
	}
	return removed, nil
}

// trimCopies drops the oldest copies but the copy of keep until the rest
// take at most maxBytes, and returns how many it dropped. A put keeps the
// copy it wrote, which alone fits, whatever its time says.
func trimCopies(ctx context.Context, tx *sql.Tx, maxBytes int64, keep string) (int, error) {
	var total int64
	if err := tx.QueryRowContext(ctx, `SELECT bytes FROM deleted_copies_total`).Scan(&total); err != nil {
		return 0, err
	}
	if total <= maxBytes {
		return 0, nil
	}
	// The oldest go first; their sizes come from the index on taken_at and
	// the rows, not the bodies.
	rows, err := tx.QueryContext(ctx, `SELECT uid, size FROM deleted_copies ORDER BY taken_at, uid`)
	if err != nil {
		return 0, err
	}
	var gone []string
	for total > maxBytes && rows.Next() {
		var uid string
		var size int64
		if err := rows.Scan(&uid, &size); err != nil {
			rows.Close()
			return 0, err
		}
		if uid == keep {
			continue
		}
		gone = append(gone, uid)
		total -= size
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM deleted_copies WHERE uid IN (SELECT value FROM json_each(?))`,
		jsonOrNull(gone)); err != nil {
		return 0, err
	}
	return len(gone), nil
}

// DeletedCopiesSize is how many copies are kept and their compressed
// bytes. It reads one row, which triggers keep.
func (c Copies) DeletedCopiesSize(ctx context.Context) (count int, bytes int64, err error) {
	err = c.queryRow(ctx, `SELECT copies, bytes FROM deleted_copies_total`).Scan(&count, &bytes)
	if err != nil {
		return 0, 0, fmt.Errorf("deleted copies' size: %w", err)
	}
	return count, bytes, nil
}
