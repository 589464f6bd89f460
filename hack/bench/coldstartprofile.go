package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kubegcd/kubegcd/internal/testcluster"
)

// fsyncCount is what the counted start saw: the fsync and fdatasync calls
// kubegcd made from its start to /readyz, by the file they synced.
type fsyncCount struct {
	skipped string        // why they were not counted ("": they were)
	ready   time.Duration // start → /readyz under strace
	objects int64
	byFile  map[string]int // "WAL", "database", or a file's name
}

func (f fsyncCount) total() int {
	n := 0
	for _, c := range f.byFile {
		n += c
	}
	return n
}

// countFsyncs starts kubegcd cold under strace, which records each fsync
// and fdatasync with its time and file, and counts those made before
// /readyz. strace stops the process at these calls only (--seccomp-bpf),
// but at every signal too, so the start is slower than in the rounds.
func (b *coldstartBench) countFsyncs(ctx context.Context, n int) (f fsyncCount, err error) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		return fsyncCount{skipped: "not counted: strace is not installed"}, nil
	}
	name := fmt.Sprintf("coldstart-%s-strace", namespaceSize(n))
	addr, err := freeAddr()
	if err != nil {
		return f, err
	}
	db := filepath.Join(b.dbDir, name+".db")
	if err := removeDB(db); err != nil {
		return f, err
	}
	out := filepath.Join(b.dir, name+".txt")
	args := append([]string{"-f", "--seccomp-bpf", "-qq", "-ttt", "-y", "-e", "trace=fsync,fdatasync",
		"-e", "signal=none", "-o", out, "--", b.bin}, b.kubegcdArgs(db, addr)...)
	begin := time.Now()
	d, err := testcluster.StartKubegcd(strace, filepath.Join(b.dir, name+".log"), args...)
	if err != nil {
		return f, err
	}
	defer func() { err = errors.Join(err, stopTraced(d), removeDB(db)) }()
	if err := b.cfg.pin.pinClient("strace", d.Pid()); err != nil {
		return f, err
	}
	base := "http://" + addr
	if err := d.WaitReady(ctx, base+"/readyz", readyPoll, coldstartTimeout(n)); err != nil {
		return f, err
	}
	ready := time.Now()
	f.ready = ready.Sub(begin)
	if st, err := testcluster.GetKubegcdStatus(ctx, base); err == nil {
		f.objects = st.Objects
	}
	if err := stopTraced(d); err != nil {
		return f, err
	}
	f.byFile, err = parseFsyncs(out, filepath.Base(b.dbDir), filepath.Base(db), ready)
	return f, err
}

// stopTraced ends kubegcd run under strace: SIGTERM to kubegcd itself,
// then strace exits with it, having written what it traced. Called again
// once stopped, it does nothing.
func stopTraced(d *testcluster.Kubegcd) error {
	select {
	case <-d.Done():
		return d.Err()
	default:
	}
	child, err := firstChild(d.Pid())
	if err != nil {
		return errors.Join(err, d.Stop(stopGrace))
	}
	_ = syscall.Kill(child, syscall.SIGTERM)
	select {
	case <-d.Done():
		return d.Err()
	case <-time.After(stopGrace):
		return errors.Join(fmt.Errorf("kubegcd under strace did not stop within %s of SIGTERM", stopGrace), d.Kill())
	}
}

// firstChild returns the first child process of pid.
func firstChild(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, fmt.Errorf("process %d has no child", pid)
	}
	return strconv.Atoi(f[0])
}

// parseFsyncs counts the calls strace wrote to path ("PID SECONDS
// fsync(FD</path/file>) = 0", or "… <unfinished ...>" when another thread
// came between) made before ready, by file: db's WAL, its rollback
// journal, db, the directory (base name dir) or another file's base name.
func parseFsyncs(path, dir, db string, ready time.Time) (map[string]int, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	limit := float64(ready.UnixMicro()) / 1e6
	counts := map[string]int{}
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		f := strings.Fields(sc.Text()) // strace pads the PID
		if len(f) < 3 || !strings.HasPrefix(f[2], "fsync(") && !strings.HasPrefix(f[2], "fdatasync(") {
			continue
		}
		at, err := strconv.ParseFloat(f[1], 64)
		if err != nil || at > limit {
			continue
		}
		target := f[2]
		if i, j := strings.IndexByte(target, '<'), strings.IndexByte(target, '>'); i >= 0 && j > i {
			target = filepath.Base(target[i+1 : j])
		}
		switch target {
		case db + "-wal":
			target = "WAL"
		case db + "-journal":
			target = "journal"
		case db:
			target = "database"
		case dir:
			target = "directory"
		}
		counts[target]++
	}
	return counts, sc.Err()
}

// profile starts kubegcd cold with --profiling once more when
// KUBEGCD_BENCH_CPUPROFILE=PATH is set (%n in PATH is the size). It writes
// to PATH a CPU profile from /healthz, which comes as ingestion starts, to
// /readyz: consecutive one-second profiles merged by go tool pprof. The
// allocations from the start to /readyz go to PATH.allocs. It returns what
// it wrote.
func (b *coldstartBench) profile(ctx context.Context, n int) (_ string, err error) {
	path := os.Getenv("KUBEGCD_BENCH_CPUPROFILE")
	if path == "" {
		return "", nil
	}
	path = strings.ReplaceAll(path, "%n", countLabel(n))
	d, base, db, begin, err := b.startKubegcd(fmt.Sprintf("coldstart-%s-profiled", namespaceSize(n)), "--profiling")
	if err != nil {
		return "", err
	}
	defer func() { err = errors.Join(err, d.Stop(stopGrace), removeDB(db)) }()
	if err := d.WaitReady(ctx, base+"/healthz", readyPoll, coldstartTimeout(n)); err != nil {
		return "", err
	}
	healthy := time.Since(begin)
	type readiness struct {
		at  time.Duration
		err error
	}
	readyCh := make(chan readiness, 1)
	go func() {
		err := d.WaitReady(ctx, base+"/readyz", readyPoll, coldstartTimeout(n))
		at := time.Since(begin)
		if err == nil {
			// Allocations since the start: the profile counts them from
			// the process's start.
			var allocs []byte
			if allocs, err = testcluster.HTTPGet(ctx, base+"/debug/pprof/allocs"); err == nil {
				err = os.WriteFile(path+".allocs", allocs, 0o644)
			}
		}
		readyCh <- readiness{at, err}
	}()
	var windows []string
	var ready readiness
	for done := false; !done; {
		w := fmt.Sprintf("%s.%d", path, len(windows))
		prof, err := testcluster.HTTPGet(ctx, base+"/debug/pprof/profile?seconds=1")
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(w, prof, 0o644); err != nil {
			return "", err
		}
		windows = append(windows, w)
		select {
		case ready = <-readyCh:
			done = true
		default:
		}
	}
	covered := time.Since(begin)
	if ready.err != nil {
		return "", ready.err
	}
	what := fmt.Sprintf("CPU %s (/healthz %.1f s → %.1f s; /readyz at %.1f s), allocations %s.allocs",
		path, healthy.Seconds(), covered.Seconds(), ready.at.Seconds(), path)
	if err := mergeProfiles(ctx, path, windows); err != nil {
		return fmt.Sprintf("%s; the CPU profile in %d windows %s.N, not merged: %v", what, len(windows), path, err), nil
	}
	return what, nil
}

// mergeProfiles merges the profiles into path with go tool pprof, then
// removes them. make bench runs go, so it is on the PATH.
func mergeProfiles(ctx context.Context, path string, profiles []string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return err
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, goBin, append([]string{"tool", "pprof", "-proto"}, profiles...)...)
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = out, &stderr
	err = cmd.Run()
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	for _, p := range profiles {
		_ = os.Remove(p)
	}
	return nil
}
