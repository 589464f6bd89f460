package testcluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubegcd/kubegcd/internal/testutil"
)

func TestCluster(t *testing.T) {
	testutil.NeedsControlPlane(t)
	ctx := t.Context()
	begin := time.Now()
	c, err := Start(ctx, Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Start took %v", time.Since(begin).Round(time.Millisecond))
	// Stop is idempotent, so this only matters when the test fails early.
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("cleanup Stop: %v", err)
		}
	})
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf(format+"\n%s", append(args, c.LogTail(30))...)
	}

	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	created, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "survivor"},
		Data:       map[string]string{"k": "v"},
	}, metav1.CreateOptions{})
	if err != nil {
		fail("create configmap: %v", err)
	}

	// The kubeconfig file must reach the same cluster as Config.
	kcCfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if kcCfg.Host != c.Config.Host {
		t.Fatalf("kubeconfig server %q, Config.Host %q", kcCfg.Host, c.Config.Host)
	}
	kcCS, err := kubernetes.NewForConfig(kcCfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kcCS.CoreV1().ConfigMaps("default").Get(ctx, "survivor", metav1.GetOptions{}); err != nil {
		fail("get configmap via kubeconfig: %v", err)
	}

	host := c.Config.Host
	oldAPIServer := c.apiserver
	restartBegin := time.Now()
	if err := c.RestartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("RestartAPIServer took %v", time.Since(restartBegin).Round(time.Millisecond))
	if c.Config.Host != host {
		t.Fatalf("host changed across restart: %s -> %s", host, c.Config.Host)
	}
	if !oldAPIServer.exited() || c.apiserver == nil || c.apiserver == oldAPIServer {
		t.Fatal("RestartAPIServer did not replace the apiserver process")
	}
	// cs still points at the original host:port, so this also proves the new
	// apiserver serves on the same port.
	got, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "survivor", metav1.GetOptions{})
	if err != nil {
		fail("get configmap after restart: %v", err)
	}
	if got.UID != created.UID || got.Data["k"] != "v" {
		t.Fatalf("configmap after restart: uid %s data %v, want uid %s data k=v", got.UID, got.Data, created.UID)
	}

	stopCM, err := c.StartControllerManager(ctx, "--controllers=garbagecollector")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.controllerManagers) != 1 {
		t.Fatalf("%d controller-managers tracked, want 1", len(c.controllerManagers))
	}
	var cm *process
	for p := range c.controllerManagers {
		cm = p
	}
	select {
	case <-cm.done:
		t.Fatalf("kube-controller-manager exited within 3s (%v):\n%s", cm.waitErr, tailFile(cm.logPath, 30))
	case <-time.After(3 * time.Second):
	}
	testGarbageCollection(t, c, cs)
	if err := stopCM(); err != nil {
		t.Fatalf("stop controller-manager: %v", err)
	}
	if !cm.exited() || len(c.controllerManagers) != 0 {
		t.Fatal("controller-manager still running or tracked after stop")
	}
	if err := stopCM(); err != nil {
		t.Fatalf("second stop of controller-manager: %v", err)
	}

	dir := c.Dir
	if err := c.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Dir %s still present after Stop (stat err %v)", dir, err)
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

// testGarbageCollection checks that the controller-manager really works
// against the cluster: deleting an owner must make it delete the dependent.
func testGarbageCollection(t *testing.T, c *Cluster, cs kubernetes.Interface) {
	t.Helper()
	ctx := t.Context()
	cms := cs.CoreV1().ConfigMaps("default")
	owner, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name:            "dependent",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	deadline := time.After(time.Minute)
	for {
		_, err := cms.Get(ctx, "dependent", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			t.Logf("garbage collector deleted the dependent after %v", time.Since(begin).Round(time.Millisecond))
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-deadline:
			var cmLogs []string
			for p := range c.controllerManagers {
				cmLogs = append(cmLogs, tailFile(p.logPath, 30))
			}
			t.Fatalf("dependent not garbage collected within 1m; controller-manager log:\n%s", strings.Join(cmLogs, "\n"))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func TestBinDirMissing(t *testing.T) {
	t.Setenv("KUBEGCD_BIN_DIR", t.TempDir())
	_, err := BinDir()
	if err == nil || !strings.Contains(err.Error(), "make kube-bins") {
		t.Fatalf("BinDir with empty KUBEGCD_BIN_DIR: err %v, want one mentioning make kube-bins", err)
	}
}

// TestBinDirNeeds checks that BinDir asks for what every cluster runs
// (etcd and kube-apiserver) and no more: the demo builds only those, and
// kube-controller-manager is checked when a test starts one.
func TestBinDirNeeds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		present []string
		wantErr string // "" for success
	}{
		{name: "control plane without controller-manager", present: []string{"etcd", "kube-apiserver"}},
		{name: "all three", present: []string{"etcd", "kube-apiserver", "kube-controller-manager"}},
		{name: "no kube-apiserver", present: []string{"etcd", "kube-controller-manager"}, wantErr: "kube-apiserver not found"},
		{name: "no etcd", present: []string{"kube-apiserver"}, wantErr: "etcd not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, name := range tc.present {
				if err := os.WriteFile(filepath.Join(dir, name), nil, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv("KUBEGCD_BIN_DIR", dir)
			got, err := BinDir()
			switch {
			case tc.wantErr == "" && (err != nil || got != dir):
				t.Fatalf("BinDir() = %q, %v; want %q", got, err, dir)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("BinDir() error %v; want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestStartControllerManagerMissing checks that a cluster started without
// kube-controller-manager says how to build it when a test asks for one.
func TestStartControllerManagerMissing(t *testing.T) {
	c := &Cluster{binDir: t.TempDir(), Dir: t.TempDir(), controllerManagers: map[*process]struct{}{}}
	_, err := c.StartControllerManager(context.Background())
	if err == nil || !strings.Contains(err.Error(), "make kube-bins") {
		t.Fatalf("StartControllerManager without the binary: err %v, want one mentioning make kube-bins", err)
	}
}

func TestTailFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	var lines []string
	// Long enough to span several read chunks.
	for i := range 20000 {
		lines = append(lines, strings.Repeat("x", i%50)+"|")
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 1, 3, 5000, 30000} {
		want := lines[max(0, len(lines)-n):]
		got := tailFile(path, n)
		if n == 0 {
			if got != "" {
				t.Errorf("tailFile(0) = %q, want empty", got)
			}
			continue
		}
		if got != strings.Join(want, "\n")+"\n" {
			t.Errorf("tailFile(%d): got %d lines, want %d", n, strings.Count(got, "\n"), len(want))
		}
	}
}
