package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

func TestFirstCPUs(t *testing.T) {
	for _, tc := range []struct {
		set  []int
		n    int
		want []int
	}{
		{set: []int{0, 1, 2, 3}, n: 2, want: []int{0, 1}},
		{set: []int{2, 5, 7}, n: 2, want: []int{2, 5}},
		{set: []int{70, 3}, n: 2, want: []int{3, 70}},
		{set: []int{4}, n: 2, want: []int{4}},
		{set: nil, n: 2, want: nil},
	} {
		var set unix.CPUSet
		for _, cpu := range tc.set {
			set.Set(cpu)
		}
		if got := firstCPUs(&set, tc.n); !slices.Equal(got, tc.want) {
			t.Errorf("firstCPUs(%v, %d) = %v, want %v", tc.set, tc.n, got, tc.want)
		}
	}
}

// pinHelperEnv makes the test binary a process with threads of its own:
// it locks that many goroutines to OS threads, says "ready", and for each
// line read from stdin locks as many more and says "more".
const pinHelperEnv = "BENCH_PIN_HELPER_THREADS"

func TestPinHelperProcess(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(pinHelperEnv))
	if n == 0 {
		return // not the helper: nothing to do
	}
	lockThread := func() {
		locked := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(locked)
			select {}
		}()
		<-locked
	}
	for range n {
		lockThread()
	}
	fmt.Println("ready")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		for range n {
			lockThread()
		}
		fmt.Println("more")
	}
	os.Exit(0)
}

// Every thread of a running process is pinned, and a thread it starts
// afterwards inherits the CPU.
func TestPinProcess(t *testing.T) {
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		t.Fatal(err)
	}
	cpus := firstCPUs(&allowed, len(allowed)*64)
	cpu := cpus[len(cpus)-1] // the last: a process starts on all of them

	cmd := exec.Command(os.Args[0], "-test.run=^TestPinHelperProcess$")
	cmd.Env = append(os.Environ(), pinHelperEnv+"=8")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	out := bufio.NewScanner(stdout)
	expect := func(line string) {
		t.Helper()
		if !out.Scan() || out.Text() != line {
			t.Fatalf("helper said %q (%v), want %q", out.Text(), out.Err(), line)
		}
	}
	expect("ready")

	threads, err := pinProcess(cmd.Process.Pid, cpu)
	if err != nil {
		t.Fatal(err)
	}
	if threads < 9 {
		t.Errorf("pinned %d threads; the helper has at least 9", threads)
	}
	checkPinned(t, cmd.Process.Pid, cpu, 9)

	if _, err := fmt.Fprintln(stdin); err != nil {
		t.Fatal(err)
	}
	expect("more")
	// 16 locked threads and main's: some started after the pinning.
	checkPinned(t, cmd.Process.Pid, cpu, max(17, threads+1))
}

// checkPinned fails unless process pid has at least threads threads, each
// allowed on cpu alone.
func checkPinned(t *testing.T, pid, cpu, threads int) {
	t.Helper()
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) < threads {
		t.Errorf("%d threads, want at least %d", len(entries), threads)
	}
	for _, e := range entries {
		tid, _ := strconv.Atoi(e.Name())
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &set); err != nil {
			t.Fatal(err)
		}
		if got := firstCPUs(&set, len(set)*64); !slices.Equal(got, []int{cpu}) {
			t.Errorf("thread %d may run on CPUs %v, want only %d", tid, got, cpu)
		}
	}
}
