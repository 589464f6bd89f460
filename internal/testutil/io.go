package testutil

import (
	"crypto/rand"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// WrittenBytes is what the process has asked the kernel to write so far
// (wchar in /proc/self/io). SQLite runs in the process, so a difference of
// two readings counts every page a database wrote to its WAL and to its
// file at checkpoints, whether or not the disk has it yet.
func WrittenBytes(tb testing.TB) int64 {
	tb.Helper()
	raw, err := os.ReadFile("/proc/self/io")
	if err != nil {
		tb.Fatalf("the bytes written are read from /proc/self/io: %v", err)
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, "wchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				tb.Fatalf("/proc/self/io: %v", err)
			}
			return n
		}
	}
	tb.Fatal("/proc/self/io has no wchar line")
	return 0
}

// RandomUID is a UID as the API server makes them: random, so that the
// entries of an index keyed by UID fall on leaves all over it.
func RandomUID() string {
	var u [16]byte
	rand.Read(u[:])
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:])
}
