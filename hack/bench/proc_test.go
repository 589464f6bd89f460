package main

import (
	"os"
	"testing"
)

func TestStatTicks(t *testing.T) {
	for _, tc := range []struct {
		stat      string
		comm      string
		ticks     uint64
		wantValid bool
	}{
		{stat: "4242 (kube-apiserver) S 1 4242 4242 0 -1 4194560 90 0 0 0 1234 566 0 0 20 0 31 0 100 0 0",
			comm: "kube-apiserver", ticks: 1800, wantValid: true},
		{stat: "17 (a (b) c) R 1 17 17 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 5 0 0",
			comm: "a (b) c", ticks: 10, wantValid: true},
		{stat: "17 (short) R 1 17", wantValid: false},
		{stat: "no parentheses", wantValid: false},
	} {
		comm, ticks, ok := statTicks(tc.stat)
		if ok != tc.wantValid || ok && (comm != tc.comm || ticks != tc.ticks) {
			t.Errorf("statTicks(%q) = %q, %d, %v; want %q, %d, %v", tc.stat, comm, ticks, ok, tc.comm, tc.ticks, tc.wantValid)
		}
	}
}

// This process's CPU time is read, and it only grows.
func TestPidCPU(t *testing.T) {
	before, err := pidCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	for i := range 50_000_000 {
		x ^= i
	}
	after, err := pidCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after < before {
		t.Errorf("CPU went from %.2f s to %.2f s (%d)", before, after, x)
	}
	if _, err := pidCPU(-1); err == nil {
		t.Error("pidCPU(-1): no error")
	}
}
