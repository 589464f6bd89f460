package db

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
)

// made is what an Open made that was not there before it.
type made struct {
	// dirs are the directories made above the file, outermost first.
	dirs []string
	// lock and file say whether the lock file and the database file are
	// new.
	lock, file bool
}

// Created says whether Open created the database file: there was none at
// its path.
func (d *DB) Created() bool { return d.made.file }

// Discard closes the database, as Close does, and removes what Open
// created: the database file with its -wal and -shm, the lock file and the
// directories, while it still holds the lock. A daemon whose first start
// failed so leaves nothing behind. A database file that was there before
// Open is only closed, whatever else Open made.
func (d *DB) Discard() error { return d.close(true) }

// removeMade removes what Open made, if it made the database file. A
// directory that holds something else now stays.
func (d *core) removeMade() error {
	if !d.made.file {
		return nil
	}
	var errs []error
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		if err := os.Remove(d.Path + suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if d.made.lock {
		if err := os.Remove(d.Path + ".lock"); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	removeDirs(d.made.dirs)
	d.made = made{}
	return errors.Join(errs...)
}

// makeDirs makes the directories missing above the database, dir
// included, readable by their owner only, and returns those it made,
// outermost first. It makes none when one cannot be made, and names it.
func makeDirs(dir string) ([]string, error) {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err == nil {
			if !st.IsDir() {
				return nil, fmt.Errorf("database directory %s: not a directory", d)
			}
			break
		}
		// A file in the way higher up makes this one "not a directory":
		// name the file, further up.
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return nil, dirError(d, err)
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	var dirs []string
	for _, d := range slices.Backward(missing) {
		err := os.Mkdir(d, 0o700)
		if errors.Is(err, fs.ErrExist) {
			// Another process made it meanwhile: it is not ours to remove.
			continue
		}
		if err != nil {
			removeDirs(dirs)
			return nil, dirError(d, err)
		}
		dirs = append(dirs, d)
	}
	return dirs, nil
}

// dirError says in one line why the database's directory dir cannot be
// made or read.
func dirError(dir string, err error) error {
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) && pe.Path == dir {
		err = fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return fmt.Errorf("database directory %s: %w", dir, err)
}

// removeDirs removes the directories makeDirs made, innermost first. A
// directory that holds something now stays, and so do those above it.
func removeDirs(dirs []string) {
	for _, d := range slices.Backward(dirs) {
		if os.Remove(d) != nil {
			return
		}
	}
}

// isFileAt says whether f is the file path names now.
func isFileAt(f *os.File, path string) (bool, error) {
	fst, err := f.Stat()
	if err != nil {
		return false, err
	}
	pst, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return os.SameFile(fst, pst), nil
}
