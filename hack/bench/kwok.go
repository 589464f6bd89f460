package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegcd/kubegcd/internal/testcluster"
)

// kwok's node Leases and how long kwok may take to run the cluster.
const (
	kwokLeaseSeconds  = 40 // kwok renews every quarter: 10 s
	kwokSettleTimeout = 10 * time.Minute
)

// startKwok runs kwok on every node with the stage files of its release.
func startKwok(cluster *testcluster.Cluster, dir string) (*kwokProcess, error) {
	binDir, err := testcluster.BinDir()
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(binDir, "kwok")
	stages, _ := filepath.Glob(filepath.Join(binDir, "kwok-stages", "*.yaml"))
	if _, err := os.Stat(bin); err != nil || len(stages) == 0 {
		return nil, fmt.Errorf("kwok and its stage files not found in %s (`make bin/kwok` builds them)", binDir)
	}
	// kwok's own options. Its client has no rate limit of its own. It gets
	// more parallel stage players than its default 4, each waiting on one
	// request at a time, and more than one lister of the pods of a node it
	// starts to manage.
	conf := filepath.Join(dir, "kwok.yaml")
	if err := os.WriteFile(conf, []byte(`apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  podPlayStageParallelism: 64
  nodePlayStageParallelism: 8
  nodeLeaseParallelism: 8
  podsOnNodeSyncParallelism: 4
`), 0o644); err != nil {
		return nil, err
	}
	// --v=WARN: a line per pod update costs kwok more CPU than the update.
	args := []string{"--kubeconfig", cluster.Kubeconfig, "--manage-all-nodes=true", "--v=WARN",
		"--node-lease-duration-seconds=" + strconv.Itoa(kwokLeaseSeconds), "--config", conf}
	for _, s := range stages {
		args = append(args, "--config", s)
	}
	logPath := filepath.Join(dir, "kwok.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// kwok runs in its own process group, so Ctrl-C reaches only the
	// benchmark, which stops kwok. The kernel kills kwok should the
	// benchmark die.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	k := &kwokProcess{cmd: cmd, done: make(chan struct{})}
	go func() { k.err = cmd.Wait(); close(k.done) }()
	select {
	case <-k.done:
		return nil, fmt.Errorf("kwok exited at start (%w); see %s", k.err, logPath)
	case <-time.After(2 * time.Second):
		return k, nil
	}
}

// kwokProcess is a running kwok.
type kwokProcess struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// stop sends SIGTERM and waits; SIGKILL after stopGrace.
func (k *kwokProcess) stop() {
	_ = k.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.done:
		return
	case <-time.After(stopGrace):
	}
	_ = k.cmd.Process.Kill()
	<-k.done
}

// nodeReady tells whether n's Ready condition is true.
func nodeReady(n corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitKwok waits until kwok has made every node Ready (nodes > 0), started
// every pod in ns ("": all) and completed the Jobs' pods.
func waitKwok(ctx context.Context, kube kubernetes.Interface, ns string, nodes int) error {
	none := func(opts metav1.ListOptions) bool {
		opts.Limit = 1
		l, err := kube.CoreV1().Pods(ns).List(ctx, opts)
		return err == nil && len(l.Items) == 0
	}
	err := pollUntil(ctx, kwokSettleTimeout, func() (bool, error) {
		if nodes > 0 {
			l, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
			if err != nil || len(l.Items) < nodes {
				return false, nil
			}
			for _, n := range l.Items {
				if !nodeReady(n) {
					return false, nil
				}
			}
		}
		pending := metav1.ListOptions{FieldSelector: "status.phase=Pending,spec.nodeName!="}
		unfinishedJobPods := metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name",
			FieldSelector: "status.phase!=Succeeded"}
		return none(pending) && none(unfinishedJobPods), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for kwok: %w", err)
	}
	return nil
}
