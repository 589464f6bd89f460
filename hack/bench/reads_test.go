package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// The reads benchmark, small: it fills its database and every endpoint
// answers 200, so the benchmark does not rot between runs of make bench.
func TestReadsBenchmarkRuns(t *testing.T) {
	if err := runReads(context.Background(), t.TempDir(), 3_000, 1_000, 500, "", "", ""); err != nil {
		t.Fatal(err)
	}
}

// A kept database is reused as it is, not filled a second time.
func TestReadsBenchmarkReusesAKeptDatabase(t *testing.T) {
	keep := filepath.Join(t.TempDir(), "reads.db")
	run := func() os.FileInfo {
		t.Helper()
		if err := runReads(context.Background(), t.TempDir(), 3_000, 1_000, 500, keep, "", ""); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(keep)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	filled := run()
	if _, err := os.Stat(keep + ".json"); err != nil {
		t.Fatalf("no fixture kept: %v", err)
	}
	if reused := run(); !reused.ModTime().Equal(filled.ModTime()) || reused.Size() != filled.Size() {
		t.Fatalf("the kept database was written again: %v %d bytes, then %v %d bytes",
			filled.ModTime(), filled.Size(), reused.ModTime(), reused.Size())
	}
}
