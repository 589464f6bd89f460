package http

import (
	"crypto/sha256"
	"os"
	"syscall"
	"time"
)

const (
	// recheckEvery bounds how often a file read again on change (the
	// token file, the TLS certificate and key) is looked at: a stat.
	recheckEvery = time.Second
	// rereadEvery bounds how long a file is trusted on its stat alone.
	// A rewrite in place within one tick of the file system's clock
	// keeps every time stat shows, so the content is read and its hash
	// compared at least this often.
	rereadEvery = 10 * time.Second
)

// fileStamp is what stat says of a file, symbolic links followed. A file
// renamed over the old one, or a symbolic link swapped, has another device
// or inode, whatever its times; a file rewritten in place has another
// change time, which no one can set back (touch, cp -p and tar set the
// modification time only).
type fileStamp struct {
	dev, ino    uint64
	size        int64
	mod, change time.Time
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	s := fileStamp{size: fi.Size(), mod: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		//nolint:unconvert // Dev is a uint32 on some platforms
		s.dev, s.ino, s.change = uint64(st.Dev), st.Ino, time.Unix(st.Ctim.Unix())
	}
	return s, nil
}

// watchedFile is a file the server reads again when it changes. A look
// costs a stat; the file is read only when the stat differs from the last
// read's, or when that read is older than rereadEvery. A read tells a
// change by the content's SHA-256, so a file touched but not changed is
// not taken again.
type watchedFile struct {
	path string
	// stamp and sum are the last read's: what stat said before it, and
	// the hash of what it read. Zero when it failed, so that the next
	// look reads again.
	stamp  fileStamp
	sum    [sha256.Size]byte
	readAt time.Time
}

// stale tells whether the file may differ from its last read. A clock
// set back since then reads it too.
func (f *watchedFile) stale(now time.Time) bool {
	if now.Sub(f.readAt) >= rereadEvery || now.Before(f.readAt) {
		return true
	}
	stamp, err := stampOf(f.path)
	return err != nil || stamp != f.stamp
}

// read reads the file and tells whether its content differs from the last
// read's. The stamp is taken first: an edit between the two is seen at the
// next look.
func (f *watchedFile) read(now time.Time) (data []byte, changed bool, err error) {
	f.readAt = now
	stamp, err := stampOf(f.path)
	if err == nil {
		data, err = os.ReadFile(f.path)
	}
	if err != nil {
		f.stamp, f.sum = fileStamp{}, [sha256.Size]byte{}
		return nil, true, err
	}
	sum := sha256.Sum256(data)
	changed = sum != f.sum
	f.stamp, f.sum = stamp, sum
	return data, changed, nil
}
