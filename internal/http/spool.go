package http

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
)

const (
	// spoolBudget bounds the bytes of the answers spooled for their
	// clients at once, in files beside the database: a large answer past
	// it is refused with a 429, and the disk keeps room for the audit.
	spoolBudget = 1 << 30
)

// answerBounds are the server's bounds on the answers read whole from the
// database: the reads at once, and the bytes spooled for their clients.
type answerBounds struct {
	// wideReads holds a slot for each wide answer being read.
	wideReads chan struct{}
	// dir holds the spool files; spooled counts their bytes.
	dir     string
	spooled *atomic.Int64
}

func newAnswerBounds(spoolDir string) answerBounds {
	if spoolDir == "" {
		spoolDir = os.TempDir()
	}
	return answerBounds{wideReads: make(chan struct{}, maxWideReads), dir: spoolDir, spooled: new(atomic.Int64)}
}

func (b answerBounds) spool() *spool { return &spool{dir: b.dir, used: b.spooled} }

var (
	// errSpoolFull: the spool files would pass spoolBudget.
	errSpoolFull = errors.New("the answers' spool is full")
	// errSpoolRead marks a failed read of a spool file.
	errSpoolRead = errors.New("reading the answer's spool")
)

// spool holds an answer's encoding between its encoding and its sending:
// the first answerChunk bytes in memory, all of it in an unnamed file of
// dir once it is larger. The page cache keeps a file that is soon read,
// and the kernel may write it out rather than the daemon hold it.
type spool struct {
	dir  string
	used *atomic.Int64 // the bytes in every spool's file
	mem  []byte
	f    *os.File
	size int64 // the bytes in f, counted in used
}

func (p *spool) Write(b []byte) (int, error) {
	if p.f == nil && len(p.mem)+len(b) <= answerChunk {
		p.mem = append(p.mem, b...)
		return len(b), nil
	}
	if p.f == nil {
		if err := p.open(); err != nil {
			return 0, err
		}
		mem := p.mem
		p.mem = nil
		if _, err := p.Write(mem); err != nil {
			return 0, err
		}
	}
	if p.used.Add(int64(len(b))) > spoolBudget {
		p.used.Add(-int64(len(b)))
		return 0, errSpoolFull
	}
	p.size += int64(len(b))
	return p.f.Write(b)
}

// open makes the spool's file, removed at once: it goes with the process,
// however that ends.
func (p *spool) open() error {
	f, err := os.CreateTemp(p.dir, ".kubegcd-answer-*")
	if err != nil {
		return err
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return err
	}
	p.f = f
	return nil
}

// reader reads what was spooled, from the start.
func (p *spool) reader() io.Reader {
	if p.f == nil {
		return bytes.NewReader(p.mem)
	}
	if _, err := p.f.Seek(0, io.SeekStart); err != nil {
		return errReader{fmt.Errorf("%w: %w", errSpoolRead, err)}
	}
	return spoolReader{p.f}
}

// spoolReader marks the file's read errors as the spool's, not the
// client's.
type spoolReader struct{ f *os.File }

func (r spoolReader) Read(b []byte) (int, error) {
	n, err := r.f.Read(b)
	if err != nil && !errors.Is(err, io.EOF) {
		err = fmt.Errorf("%w: %w", errSpoolRead, err)
	}
	return n, err
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func (p *spool) close() {
	if p.f != nil {
		p.f.Close()
		p.used.Add(-p.size)
		p.f, p.size = nil, 0
	}
	p.mem = nil
}
