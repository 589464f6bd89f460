package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// IsCorrupt reports whether err says the database file itself is damaged
// (SQLITE_CORRUPT, SQLITE_NOTADB). Unlike a busy, locked or full database,
// a damaged file makes every retry fail.
func IsCorrupt(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff { // the primary code of an extended one
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		return true
	}
	return false
}

// ErrCorrupt matches (errors.Is) the error of a database found corrupt, at
// start or by a write.
var ErrCorrupt = errors.New("database is corrupt")

// corruptError is the one line a corrupt database gets, at start or when a
// write finds it later.
func corruptError(path, cause string) error {
	return corrupt{fmt.Sprintf("database %s is corrupt (%s); "+
		"restore it from a backup or move it away to start afresh", path, cause)}
}

type corrupt struct{ msg string }

func (c corrupt) Error() string        { return c.msg }
func (c corrupt) Is(target error) bool { return target == ErrCorrupt }

// quickCheck runs PRAGMA quick_check. It reads every page, so it finds
// damage anywhere in the file. It skips the comparison of indexes against
// tables, which makes integrity_check several times slower.
func quickCheck(ctx context.Context, pool *sql.DB, path string) error {
	return checkPages(ctx, pool, path, "quick_check")
}

// checkPages runs PRAGMA check, which is quick_check or integrity_check,
// and turns the problems it lists into one corrupt error.
func checkPages(ctx context.Context, pool *sql.DB, path, check string) error {
	failed := func(err error) error {
		if IsCorrupt(err) {
			return corruptError(path, err.Error())
		}
		return fmt.Errorf("database %s: %w", path, err)
	}
	rows, err := pool.QueryContext(ctx, "PRAGMA "+check)
	if err != nil {
		return failed(err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return failed(err)
		}
		// A row may hold several lines, under a "*** in database main ***".
		for _, line := range strings.Split(s, "\n") {
			if line != "ok" && line != "" && !strings.HasPrefix(line, "*** ") {
				problems = append(problems, line)
			}
		}
	}
	// Having listed problems, SQLite may also fail the statement itself.
	// The problems say more.
	if len(problems) == 0 {
		if err := rows.Err(); err != nil {
			return failed(err)
		}
		return nil
	}
	const shown = 3
	summary := strings.Join(problems[:min(len(problems), shown)], "; ")
	if len(problems) > shown {
		summary += fmt.Sprintf("; and %d more", len(problems)-shown)
	}
	return corruptError(path, "PRAGMA "+check+": "+summary)
}

// Check runs PRAGMA integrity_check on the database at path, which a
// running kubegcd may be using: it reads one snapshot and takes no lock. It
// returns nil when the database is sound, and an error that Is ErrCorrupt
// when it is not.
func Check(ctx context.Context, path string) error {
	path, err := existing(path)
	if err != nil {
		return err
	}
	pool, err := openPool(path, true)
	if err != nil {
		return err
	}
	defer pool.Close()
	return checkPages(ctx, pool, path, "integrity_check")
}

// Backup copies the database at path to dest, a file that must not exist
// yet. A running kubegcd may be using the database. The copy is one
// consistent snapshot (VACUUM INTO), private to its owner (0600) like the
// database, and checked. A failed backup leaves no file behind.
func Backup(ctx context.Context, path, dest string) (err error) {
	path, err = existing(path)
	if err != nil {
		return err
	}
	// The file is created empty and private first, which VACUUM INTO
	// accepts, so the copy is never readable by others, not even for a
	// moment.
	f, err := os.OpenFile(dest, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	f.Close()
	defer func() {
		if err != nil {
			os.Remove(dest)
		}
	}()
	pool, err := openPool(path, false)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := pool.ExecContext(ctx, "VACUUM INTO ?", dest); err != nil {
		if IsCorrupt(err) {
			return corruptError(path, err.Error())
		}
		return fmt.Errorf("backup of %s to %s: %w", path, dest, err)
	}
	if err := Check(ctx, dest); err != nil {
		return fmt.Errorf("backup %s does not check out: %w", dest, err)
	}
	return nil
}

// existing makes path absolute and requires the file to exist, because
// opening a missing database would create an empty one.
func existing(path string) (string, error) {
	abs, err := resolve(path)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(abs); err != nil {
		return "", fmt.Errorf("database %s: %w", abs, err)
	}
	return abs, nil
}

// checkFile runs quickCheck on its own connection.
func checkFile(ctx context.Context, path string) error {
	pool, err := openPool(path, false)
	if err != nil {
		return err
	}
	defer pool.Close()
	return quickCheck(ctx, pool, path)
}

// Corrupt is closed once a write has found the database file corrupt. No
// later write can succeed, so the mirror can no longer be kept and the
// daemon must stop. CorruptErr says what was found.
func (d *DB) Corrupt() <-chan struct{} { return d.corrupt }

// CorruptErr returns the corruption found once Corrupt is closed, and nil
// before.
func (d *DB) CorruptErr() error {
	select {
	case <-d.corrupt:
		return d.corruptErr
	default:
		return nil
	}
}

// noteCorrupt records the first write that found the file corrupt.
func (d *core) noteCorrupt(op string, err error) {
	var se *sqlite.Error
	if !IsCorrupt(err) || !errors.As(err, &se) {
		return
	}
	d.corruptOnce.Do(func() {
		d.corruptErr = corruptError(d.Path, op+": "+se.Error())
		close(d.corrupt)
	})
}
