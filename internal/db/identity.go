package db

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// ErrFileGone matches (errors.Is) the error of a database file that was
// deleted, moved away or replaced while in use.
var ErrFileGone = errors.New("database file gone")

// FileWatch tells whether a database's path still names the file that was
// opened. A file deleted or replaced under a running kubegcd keeps taking
// its writes, the audit history and the intents among them, because SQLite
// holds it open. But nothing will read them again: the next start opens
// whatever the path names then.
type FileWatch struct {
	path   string
	opened os.FileInfo
}

// WatchFile records which file d's path names now. Call it right after
// Open, while the connections Open made hold that file.
func (d *DB) WatchFile() (*FileWatch, error) {
	fi, err := os.Stat(d.Path)
	if err != nil {
		return nil, fmt.Errorf("database %s: %w", d.Path, err)
	}
	return &FileWatch{path: d.Path, opened: fi}, nil
}

// Check returns nil while the path names the file opened: the same device
// and inode. SQLite keeps that file open, so its inode cannot be reused.
// Otherwise Check returns an error that Is ErrFileGone and says what became
// of the file. A path Check cannot look at for another reason, such as a
// permission taken away, is not taken for gone: a later check decides.
func (w *FileWatch) Check() error {
	fi, err := os.Stat(w.path)
	gone := "database " + w.path + " was deleted or replaced while kubegcd ran: "
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return fileGone{gone + "nothing is at its path now; " +
			"what kubegcd wrote since is in a file no start will open, " +
			"and the next start creates the file afresh and lists the cluster again"}
	case err != nil:
		return nil
	case !os.SameFile(fi, w.opened):
		// A deletion looks like this too, once a new connection of the
		// pools, opening the path, has created an empty file there.
		return fileGone{gone + "another file is at its path now; " +
			"what kubegcd wrote since went to the old one, and the next start opens the one at the path"}
	}
	return nil
}

// Cause returns what ended the run when a write found the database corrupt:
// Check's error if the file is gone, else corrupt. After a replacement, a
// connection opened by the path reads the new file beside the old one's
// WAL, and finds it malformed. The damage is then not in the file kubegcd
// wrote, and the next start opens the new one.
func (w *FileWatch) Cause(corrupt error) error {
	if err := w.Check(); err != nil {
		return err
	}
	return corrupt
}

// Watch checks the file every period until ctx ends, and then returns nil,
// or until the file is gone, and then returns Check's error.
func (w *FileWatch) Watch(ctx context.Context, period time.Duration) error {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if err := w.Check(); err != nil {
				return err
			}
		}
	}
}

type fileGone struct{ msg string }

func (g fileGone) Error() string        { return g.msg }
func (g fileGone) Is(target error) bool { return target == ErrFileGone }
