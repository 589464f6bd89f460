package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/kubegcd/kubegcd/internal/testcluster"
)

// pinning places the control plane (etcd and kube-apiserver) on one CPU and
// everything that drives it (kubegcd, kube-controller-manager and this
// process, the raw client) on another, as in an off-cluster deployment. A
// nil *pinning pins nothing.
type pinning struct {
	controlPlane, clients int // CPU numbers
	// both holds the two CPUs, for unpinned.
	both unix.CPUSet
}

// newPinning picks the first two CPUs this process may run on: CPU 0 and
// CPU 1 on a machine with no cpuset.
func newPinning() (*pinning, error) {
	if n := runtime.NumCPU(); n < 2 {
		return nil, fmt.Errorf("--pin needs two CPUs or more; this machine has %d", n)
	}
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		return nil, fmt.Errorf("--pin: sched_getaffinity: %w", err)
	}
	cpus := firstCPUs(&allowed, 2)
	if len(cpus) < 2 {
		return nil, fmt.Errorf("--pin needs two CPUs or more; this process may run on %d", len(cpus))
	}
	p := &pinning{controlPlane: cpus[0], clients: cpus[1]}
	p.both.Set(cpus[0])
	p.both.Set(cpus[1])
	return p, nil
}

// firstCPUs returns the n lowest CPUs in set, or fewer if set has fewer.
func firstCPUs(set *unix.CPUSet, n int) []int {
	var cpus []int
	for cpu := 0; cpu < len(set)*64 && len(cpus) < n; cpu++ {
		if set.IsSet(cpu) {
			cpus = append(cpus, cpu)
		}
	}
	return cpus
}

// pinCluster pins the cluster's etcd and kube-apiserver to the control
// plane's CPU, then this process to the clients' CPU. The processes this
// one starts afterwards inherit the clients' CPU.
func (p *pinning) pinCluster(cluster *testcluster.Cluster) error {
	if p == nil {
		return nil
	}
	etcd, apiserver, err := clusterPIDs(cluster)
	if err != nil {
		return err
	}
	for _, proc := range []struct {
		name string
		pid  int
		cpu  int
	}{
		{"etcd", etcd, p.controlPlane},
		{"kube-apiserver", apiserver, p.controlPlane},
		{"bench", os.Getpid(), p.clients},
	} {
		threads, err := pinProcess(proc.pid, proc.cpu)
		if err != nil {
			return fmt.Errorf("pin %s: %w", proc.name, err)
		}
		fmt.Printf("  pinned %s (pid %d, %d threads) to CPU %d\n", proc.name, proc.pid, threads, proc.cpu)
	}
	return nil
}

// unpinned runs fn with the cluster and this process on both CPUs, then
// pins them again. Filling the cluster is set-up, not a measurement: a
// control plane on one CPU created 200,000 ConfigMaps at 580 a second.
func (p *pinning) unpinned(cluster *testcluster.Cluster, fn func() error) error {
	if p == nil {
		return fn()
	}
	etcd, apiserver, err := clusterPIDs(cluster)
	if err != nil {
		return err
	}
	for _, pid := range []int{etcd, apiserver, os.Getpid()} {
		if _, err := setAffinity(pid, &p.both); err != nil {
			return fmt.Errorf("unpin pid %d: %w", pid, err)
		}
	}
	if err := fn(); err != nil {
		return err
	}
	return p.pinCluster(cluster)
}

// clusterPIDs finds the cluster's etcd and kube-apiserver processes.
func clusterPIDs(cluster *testcluster.Cluster) (etcd, apiserver int, err error) {
	if etcd, err = findProcess("etcd", "--data-dir="+filepath.Join(cluster.Dir, "etcd")); err != nil {
		return 0, 0, err
	}
	if apiserver, err = findProcess("kube-apiserver", "--etcd-servers="+cluster.EtcdURL()); err != nil {
		return 0, 0, err
	}
	return etcd, apiserver, nil
}

// pinClient pins a process that drives the control plane (kubegcd,
// kube-controller-manager) to the clients' CPU. It inherits that CPU from
// this process already; pinning it again keeps the placement explicit.
func (p *pinning) pinClient(name string, pid int) error {
	if p == nil {
		return nil
	}
	if _, err := pinProcess(pid, p.clients); err != nil {
		return fmt.Errorf("pin %s: %w", name, err)
	}
	return nil
}

// pinProcess sets the CPU affinity of every thread of process pid to cpu
// and returns how many threads it pinned. sched_setaffinity acts on one
// thread, so each entry of /proc/PID/task is set. A new thread inherits
// the affinity of the thread that creates it, so the threads are listed
// again until a listing finds none that is not pinned yet.
func pinProcess(pid, cpu int) (int, error) {
	var set unix.CPUSet
	set.Set(cpu)
	return setAffinity(pid, &set)
}

// setAffinity sets the CPU affinity of every thread of process pid to set
// and returns how many threads it set.
func setAffinity(pid int, set *unix.CPUSet) (int, error) {
	pinned := map[int]bool{}
	for {
		entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			return 0, err
		}
		added := 0
		for _, e := range entries {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || pinned[tid] {
				continue
			}
			if err := unix.SchedSetaffinity(tid, set); err != nil {
				if errors.Is(err, unix.ESRCH) {
					continue // the thread has exited
				}
				return 0, fmt.Errorf("sched_setaffinity(%d, CPUs %v): %w", tid, firstCPUs(set, set.Count()), err)
			}
			pinned[tid] = true
			added++
		}
		if added == 0 {
			return len(pinned), nil
		}
	}
}
