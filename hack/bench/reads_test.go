package main

import (
	"context"
	"testing"
)

// The reads benchmark, small: it fills its database and every endpoint
// answers 200, so the benchmark does not rot between runs of make bench.
func TestReadsBenchmarkRuns(t *testing.T) {
	if err := runReads(context.Background(), t.TempDir(), 3_000, 1_000, 500); err != nil {
		t.Fatal(err)
	}
}
