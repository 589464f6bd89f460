package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// memory is a process's memory, in bytes. RSS is its resident set size
// now and HWM its peak. Anon and File split what is resident now into the
// process's own (anonymous) memory and file-backed pages, such as the
// database pages SQLite maps, which belong to the page cache. RSS counts a
// page once for each mapping of it. Each of SQLite's read connections maps
// the database, so a page read through three connections counts three
// times. PSS, from smaps_rollup, counts each page once and shared ones in
// part.
type memory struct {
	RSS, HWM   uint64
	Anon, File uint64
	PSS        uint64
}

// readMemory reads the memory of process pid.
func readMemory(pid int) (memory, error) {
	return readMemoryOf(strconv.Itoa(pid))
}

// readMemoryOf reads VmRSS, VmHWM, RssAnon and RssFile (with RssShmem) from
// /proc/PROC/status and PSS from smaps_rollup. proc is a PID, or "self" for
// this process.
func readMemoryOf(proc string) (memory, error) {
	b, err := os.ReadFile("/proc/" + proc + "/status")
	if err != nil {
		return memory{}, err
	}
	var m memory
	fields := map[string]*uint64{"VmRSS": &m.RSS, "VmHWM": &m.HWM, "RssAnon": &m.Anon, "RssFile": &m.File, "RssShmem": nil}
	var shmem uint64
	seen := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		dst, want := fields[key]
		if !ok || !want {
			continue
		}
		if dst == nil {
			dst = &shmem
		}
		f := strings.Fields(value) // "123456 kB"
		if len(f) != 2 || f[1] != "kB" {
			return memory{}, fmt.Errorf("/proc/%s/status: unexpected %s line %q", proc, key, sc.Text())
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return memory{}, fmt.Errorf("/proc/%s/status: %s: %w", proc, key, err)
		}
		*dst = kb << 10
		seen++
	}
	if seen != len(fields) {
		return memory{}, fmt.Errorf("/proc/%s/status: no VmRSS, VmHWM, RssAnon, RssFile and RssShmem (process gone?)", proc)
	}
	m.File += shmem
	if m.PSS, err = readPSS(proc); err != nil {
		return memory{}, err
	}
	return m, nil
}

// readPSS reads the Pss line of /proc/PROC/smaps_rollup.
func readPSS(proc string) (uint64, error) {
	b, err := os.ReadFile("/proc/" + proc + "/smaps_rollup")
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		value, ok := strings.CutPrefix(line, "Pss:")
		if !ok {
			continue
		}
		f := strings.Fields(value)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("/proc/%s/smaps_rollup: unexpected line %q", proc, line)
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		return kb << 10, err
	}
	return 0, fmt.Errorf("/proc/%s/smaps_rollup: no Pss line", proc)
}

// findProcess returns the PID of the one running process whose executable is
// named name and whose command line contains arg.
func findProcess(name, arg string) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	var found []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(cmdline) == 0 {
			continue // gone, or a kernel thread
		}
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if filepath.Base(args[0]) == name && slices.Contains(args[1:], arg) {
			found = append(found, pid)
		}
	}
	switch len(found) {
	case 0:
		return 0, fmt.Errorf("no %s process with %s", name, arg)
	case 1:
		return found[0], nil
	default:
		return 0, fmt.Errorf("%d %s processes with %s: %v", len(found), name, arg, found)
	}
}

// lastLog returns the path of dir/prefix-N.log with the highest N.
func lastLog(dir, prefix string) (string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, prefix+"-*.log"))
	if err != nil {
		return "", err
	}
	last, lastN := "", -1
	for _, p := range paths {
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), prefix+"-"), ".log"))
		if err == nil && n > lastN {
			last, lastN = p, n
		}
	}
	if last == "" {
		return "", fmt.Errorf("no %s-N.log in %s", prefix, dir)
	}
	return last, nil
}

// cpuTicks sums user and system CPU time, in clock ticks (1/100 s on
// Linux), of every running process whose executable is named name.
func cpuTicks(name string) (uint64, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	var total uint64
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		comm, ticks, ok := statTicks(string(stat))
		if ok && comm == name[:min(len(name), 15)] {
			total += ticks
		}
	}
	return total, nil
}

// pidCPU returns the user and system CPU seconds that process pid has used
// so far, over all its threads.
func pidCPU(pid int) (float64, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	_, ticks, ok := statTicks(string(stat))
	if !ok {
		return 0, fmt.Errorf("/proc/%d/stat: no CPU times", pid)
	}
	return float64(ticks) / 100, nil
}

// statTicks reads the command name and the user plus system clock ticks
// out of a /proc/PID/stat line.
func statTicks(s string) (comm string, ticks uint64, ok bool) {
	// pid (comm) state ppid … utime stime: fields 14 and 15, counted
	// after the ")" that ends comm, which may contain spaces.
	open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || close < open {
		return "", 0, false
	}
	fields := strings.Fields(s[close+1:])
	if len(fields) < 13 {
		return "", 0, false
	}
	u, err1 := strconv.ParseUint(fields[11], 10, 64)
	st, err2 := strconv.ParseUint(fields[12], 10, 64)
	return s[open+1 : close], u + st, err1 == nil && err2 == nil
}

// rssOf returns the resident set size of process pid.
func rssOf(pid int) (uint64, error) {
	m, err := readMemory(pid)
	return m.RSS, err
}

// procCPU is the CPU seconds pid has used so far; 0 when it cannot be read.
func procCPU(pid int) float64 {
	cpu, _ := pidCPU(pid)
	return cpu
}

// cpuOf returns the CPU seconds used so far by the processes named name
// ("bench" is this process).
func cpuOf(name string) float64 {
	if name == "bench" {
		name = filepath.Base(os.Args[0])
	}
	t, _ := cpuTicks(name)
	return float64(t) / 100
}

// cpuOfPIDs returns the CPU seconds each process has used so far.
func cpuOfPIDs(pids []int) ([]float64, error) {
	cpu := make([]float64, len(pids))
	for i, pid := range pids {
		var err error
		if cpu[i], err = pidCPU(pid); err != nil {
			return nil, err
		}
	}
	return cpu, nil
}
