// Package testcluster runs a real local Kubernetes control plane (etcd,
// kube-apiserver and optionally kube-controller-manager, from the binaries in
// BinDir) for tests, the demo and benchmarks.
package testcluster

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const (
	etcdTimeout      = 30 * time.Second
	apiserverTimeout = 2 * time.Minute
	pollInterval     = 200 * time.Millisecond
	// cmSettle is how long a new kube-controller-manager must stay up before
	// StartControllerManager trusts it; flag and kubeconfig errors make it exit
	// well within this.
	cmSettle = time.Second
	// logTailLines is how much log StartX errors carry.
	logTailLines = 40
	contextName  = "testcluster"
)

// Options configures Start. The zero value is usable.
type Options struct {
	// BinDir holds etcd, kube-apiserver and, for StartControllerManager,
	// kube-controller-manager; default BinDir().
	BinDir string
	// Dir is the working directory for data, certs, keys and logs; default a new
	// temporary directory. Stop removes it only if Start created it.
	Dir string
	// Logf, if set, receives progress messages (e.g. t.Logf).
	Logf func(format string, args ...any)
	// APIServerArgs are extra kube-apiserver flags appended after the defaults,
	// so they override them.
	APIServerArgs []string
	// CoordinatedLeaderElection turns on the feature gate of that name and
	// serves coordination.k8s.io/v1beta1 (LeaseCandidates): kube-apiserver
	// then elects the holders of coordinated Leases and collects expired
	// LeaseCandidates itself.
	CoordinatedLeaderElection bool
}

// Cluster is a running control plane. Its methods are safe for concurrent use.
type Cluster struct {
	// Config is an admin (system:masters bearer token) config for the
	// apiserver; TLS is unverified because the serving cert is self-signed.
	Config *rest.Config
	// Kubeconfig is the path of a kubeconfig file (context "testcluster")
	// equivalent to Config.
	Kubeconfig string
	// Dir is the working directory (see Options.Dir).
	Dir string
	// Token is the admin bearer token.
	Token string

	binDir        string
	removeDir     bool
	logf          func(format string, args ...any)
	etcdURL       string
	apiserverArgs []string
	probeClient   *http.Client // bearer-token client with a short timeout, for readiness probes

	mu                 sync.Mutex
	stopped            bool
	etcd               *process
	apiserver          *process
	controllerManagers map[*process]struct{}
	cmSeq              int
}

// Start launches etcd and kube-apiserver and returns once the apiserver is
// ready and the default namespace exists. The processes outlive ctx, which only
// bounds the startup wait; call Stop to end them. They are also killed if the
// calling process dies.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	begin := time.Now()
	c := &Cluster{binDir: opts.BinDir, Dir: opts.Dir, logf: opts.Logf, controllerManagers: map[*process]struct{}{}}
	if c.logf == nil {
		c.logf = func(string, ...any) {}
	}
	if c.binDir == "" {
		dir, err := BinDir()
		if err != nil {
			return nil, err
		}
		c.binDir = dir
	}
	if c.Dir == "" {
		dir, err := os.MkdirTemp("", "testcluster-")
		if err != nil {
			return nil, err
		}
		c.Dir, c.removeDir = dir, true
	} else if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return nil, err
	}

	if err := c.start(ctx, opts); err != nil {
		// Stop also removes a Dir we created, so the log tail must already be in err.
		return nil, errors.Join(err, c.Stop())
	}
	c.logf("testcluster: control plane ready at %s in %v (dir %s)", c.Config.Host, time.Since(begin).Round(time.Millisecond), c.Dir)
	return c, nil
}

func (c *Cluster) start(ctx context.Context, opts Options) error {
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	etcdPort, peerPort, apiPort := ports[0], ports[1], ports[2]
	c.etcdURL = "http://127.0.0.1:" + strconv.Itoa(etcdPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)

	token := make([]byte, 16)
	if _, err := rand.Read(token); err != nil {
		return err
	}
	c.Token = hex.EncodeToString(token)
	c.Config = &rest.Config{
		Host:            "https://127.0.0.1:" + strconv.Itoa(apiPort),
		BearerToken:     c.Token,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		QPS:             1000,
		Burst:           2000,
	}
	probeCfg := rest.CopyConfig(c.Config)
	probeCfg.Timeout = 5 * time.Second
	if c.probeClient, err = rest.HTTPClientFor(probeCfg); err != nil {
		return err
	}

	saKey, saPub := filepath.Join(c.Dir, "sa.key"), filepath.Join(c.Dir, "sa.pub")
	tokensFile := filepath.Join(c.Dir, "tokens.csv")
	c.Kubeconfig = filepath.Join(c.Dir, "kubeconfig")
	if err := writeServiceAccountKeys(saKey, saPub); err != nil {
		return err
	}
	if err := os.WriteFile(tokensFile, []byte(c.Token+`,admin,admin-uid,"system:masters"`+"\n"), 0o600); err != nil {
		return err
	}
	if err := c.writeKubeconfig(); err != nil {
		return err
	}

	etcd, err := startProcess("etcd", filepath.Join(c.binDir, "etcd"), []string{
		"--name=testcluster",
		"--data-dir=" + filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls=" + c.etcdURL,
		"--advertise-client-urls=" + c.etcdURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=testcluster=" + peerURL,
		"--log-level=warn",
		"--quota-backend-bytes=8589934592",
		// Test data is disposable; skipping fsync makes writes (and so
		// benchmarks) bound by CPU rather than by the disk.
		"--unsafe-no-fsync",
	}, filepath.Join(c.Dir, "etcd.log"))
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.etcd = etcd
	c.mu.Unlock()
	etcdBegin := time.Now()
	if err := poll(ctx, etcd, etcdTimeout, c.etcdHealthy); err != nil {
		return fmt.Errorf("etcd not healthy at %s: %w\n%s", c.etcdURL, err, c.LogTail(logTailLines))
	}
	c.logf("testcluster: etcd healthy at %s after %v", c.etcdURL, time.Since(etcdBegin).Round(time.Millisecond))

	c.apiserverArgs = append([]string{
		"--etcd-servers=" + c.etcdURL,
		"--secure-port=" + strconv.Itoa(apiPort),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// Without --tls-cert-file the apiserver generates a self-signed serving
		// cert here once and reuses it on restart.
		"--cert-dir=" + filepath.Join(c.Dir, "certs"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + saPub,
		"--service-account-signing-key-file=" + saKey,
		"--token-auth-file=" + tokensFile,
		"--authorization-mode=RBAC",
		// There is no kubelet/network; don't maintain the kubernetes Service endpoints.
		"--endpoint-reconciler-type=none",
		"--service-cluster-ip-range=10.0.0.0/24",
		// Serve the alpha StorageVersion API (internal.apiserver.k8s.io) and
		// apiserver identity leases, which the default flags leave off.
		"--feature-gates=StorageVersionAPI=true,APIServerIdentity=true" + coordinated(opts, ",CoordinatedLeaderElection=true"),
		"--runtime-config=internal.apiserver.k8s.io/v1alpha1=true" + coordinated(opts, ",coordination.k8s.io/v1beta1=true"),
		// Benchmarks drive thousands of requests per second from one client;
		// APF and the default inflight limits would throttle them.
		"--enable-priority-and-fairness=false",
		"--max-requests-inflight=2000",
		"--max-mutating-requests-inflight=1000",
	}, opts.APIServerArgs...)
	return c.StartAPIServer(ctx)
}

// coordinated is more when the options ask for coordinated leader
// election, else "".
func coordinated(opts Options, more string) string {
	if opts.CoordinatedLeaderElection {
		return more
	}
	return ""
}

// EtcdURL is etcd's client URL, for tests that act on etcd directly (for
// instance compacting it, so that watches from older revisions expire).
func (c *Cluster) EtcdURL() string { return c.etcdURL }

// StopAPIServer terminates kube-apiserver (SIGTERM, SIGKILL after 10s) and
// waits for it to exit. etcd keeps running. It is a no-op if it is not running.
func (c *Cluster) StopAPIServer() error {
	c.mu.Lock()
	p := c.apiserver
	c.apiserver = nil
	c.mu.Unlock()
	if p == nil {
		return nil
	}
	return p.stop()
}

// StartAPIServer starts kube-apiserver on the same port, against the same etcd,
// and waits until /readyz is OK and the default namespace exists.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return errors.New("testcluster: cluster is stopped")
	}
	if c.apiserver != nil {
		c.mu.Unlock()
		return errors.New("testcluster: kube-apiserver is already running")
	}
	p, err := startProcess("kube-apiserver", filepath.Join(c.binDir, "kube-apiserver"), c.apiserverArgs, filepath.Join(c.Dir, "apiserver.log"))
	if err != nil {
		c.mu.Unlock()
		return err
	}
	c.apiserver = p
	c.mu.Unlock()

	begin := time.Now()
	if err := poll(ctx, p, apiserverTimeout, c.apiserverReady); err != nil {
		err = fmt.Errorf("kube-apiserver not ready at %s: %w\n%s", c.Config.Host, err, c.LogTail(logTailLines))
		c.mu.Lock()
		if c.apiserver == p {
			c.apiserver = nil
		}
		c.mu.Unlock()
		// The startup failure is the error worth reporting; a stop error here
		// would only repeat that the process already died.
		_ = p.stop()
		return err
	}
	c.logf("testcluster: kube-apiserver ready at %s after %v", c.Config.Host, time.Since(begin).Round(time.Millisecond))
	return nil
}

// RestartAPIServer stops kube-apiserver and starts it again on the same port.
func (c *Cluster) RestartAPIServer(ctx context.Context) error {
	if err := c.StopAPIServer(); err != nil {
		return err
	}
	return c.StartAPIServer(ctx)
}

// StartControllerManager runs kube-controller-manager against the cluster
// (admin kubeconfig, no leader election, no serving port) with args appended,
// e.g. "--controllers=garbagecollector". Its output goes to
// controller-manager-N.log in Dir. It returns once the process has stayed up
// for a second; stop terminates it and waits, and may be called more than once.
// Cluster.Stop stops any still running.
func (c *Cluster) StartControllerManager(ctx context.Context, args ...string) (stop func() error, err error) {
	if err := checkBin(c.binDir, "kube-controller-manager"); err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return nil, errors.New("testcluster: cluster is stopped")
	}
	c.cmSeq++
	logPath := filepath.Join(c.Dir, fmt.Sprintf("controller-manager-%d.log", c.cmSeq))
	p, err := startProcess("kube-controller-manager", filepath.Join(c.binDir, "kube-controller-manager"), append([]string{
		"--kubeconfig=" + c.Kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
		// Lets the default controller set (which includes the service account
		// token controller) run when the caller does not pass --controllers.
		"--service-account-private-key-file=" + filepath.Join(c.Dir, "sa.key"),
	}, args...), logPath)
	if err != nil {
		c.mu.Unlock()
		return nil, err
	}
	c.controllerManagers[p] = struct{}{}
	c.mu.Unlock()

	stop = func() error {
		c.mu.Lock()
		delete(c.controllerManagers, p)
		c.mu.Unlock()
		return p.stop()
	}
	select {
	case <-time.After(cmSettle):
		return stop, nil
	case <-p.done:
		// stop reports the unexpected exit together with the log tail.
		return nil, stop()
	case <-ctx.Done():
		return nil, errors.Join(ctx.Err(), stop())
	}
}

// Stop stops all controller-managers, kube-apiserver and etcd, and removes Dir
// if Start created it. Calls after the first return nil.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return nil
	}
	c.stopped = true
	procs := make([]*process, 0, len(c.controllerManagers)+2)
	for p := range c.controllerManagers {
		procs = append(procs, p)
	}
	// Dependents first: etcd must outlive the apiserver's graceful shutdown.
	procs = append(procs, c.apiserver, c.etcd)
	c.controllerManagers, c.apiserver, c.etcd = nil, nil, nil
	c.mu.Unlock()

	var errs []error
	for _, p := range procs {
		if p != nil {
			errs = append(errs, p.stop())
		}
	}
	if c.removeDir {
		errs = append(errs, os.RemoveAll(c.Dir))
	}
	return errors.Join(errs...)
}

// LogTail returns the last n lines of the apiserver and etcd logs, for test
// failure messages.
func (c *Cluster) LogTail(n int) string {
	var s string
	for _, name := range []string{"apiserver.log", "etcd.log"} {
		s += "==> " + name + " <==\n" + tailFile(filepath.Join(c.Dir, name), n)
	}
	return s
}

// poll calls check every pollInterval until it returns nil, p exits, ctx is
// done or timeout passes; the error then includes check's last complaint.
func poll(ctx context.Context, p *process, timeout time.Duration, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		err := check(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited (%w); last check: %w", p.name, p.waitErr, err)
		case <-ctx.Done():
			return fmt.Errorf("%w; last check: %w", ctx.Err(), err)
		case <-time.After(pollInterval):
		}
	}
}

func (c *Cluster) etcdHealthy(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.etcdURL+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var health struct {
		Health string `json:"health"`
		Reason string `json:"reason"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&health); err != nil {
		return fmt.Errorf("/health: HTTP %d: %w", resp.StatusCode, err)
	}
	if health.Health != "true" {
		return fmt.Errorf("/health: %q %s", health.Health, health.Reason)
	}
	return nil
}

// apiserverReady requires /readyz and also the default namespace: readyz can
// pass before the bootstrap controller has created it, and tests write there.
func (c *Cluster) apiserverReady(ctx context.Context) error {
	for _, path := range []string{"/readyz", "/api/v1/namespaces/default"} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Config.Host+path, nil)
		if err != nil {
			return err
		}
		resp, err := c.probeClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: HTTP %d", path, resp.StatusCode)
		}
	}
	return nil
}

func (c *Cluster) writeKubeconfig() error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[contextName] = &clientcmdapi.Cluster{Server: c.Config.Host, InsecureSkipTLSVerify: true}
	cfg.AuthInfos[contextName] = &clientcmdapi.AuthInfo{Token: c.Token}
	cfg.Contexts[contextName] = &clientcmdapi.Context{Cluster: contextName, AuthInfo: contextName, Namespace: "default"}
	cfg.CurrentContext = contextName
	return clientcmd.WriteToFile(*cfg, c.Kubeconfig)
}

// writeServiceAccountKeys writes a fresh RSA key pair for signing and verifying
// service account tokens.
func writeServiceAccountKeys(keyPath, pubPath string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644)
}

// freePorts returns n distinct free loopback ports. All listeners are held
// until every port is chosen so the kernel cannot hand out one twice; another
// process could still grab one before our binaries bind it, which is rare
// enough for tests.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
