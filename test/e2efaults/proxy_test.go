package e2efaults

import (
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// faultProxy forwards TCP from a loopback port to the API server, so that a
// test can take the API server away from one kubegcd alone: TLS passes
// through it untouched (the test cluster's configs do not verify the
// server's name).
type faultProxy struct {
	t        *testing.T
	l        net.Listener
	upstream string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
}

// newProxy starts a proxy to the test cluster's API server; it stops when
// the test ends.
func newProxy(t *testing.T) *faultProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{t: t, l: l, upstream: strings.TrimPrefix(cluster.Config.Host, "https://"), conns: map[net.Conn]struct{}{}}
	go p.serve()
	t.Cleanup(func() {
		l.Close()
		p.Cut()
	})
	return p
}

func (p *faultProxy) serve() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

func (p *faultProxy) forward(c net.Conn) {
	p.mu.Lock()
	if p.cut {
		// Accepted and closed at once, as by a load balancer whose
		// server is down: the request ends before a byte of TLS, an
		// EOF that client-go retries as it would a reset connection.
		p.mu.Unlock()
		c.Close()
		return
	}
	p.conns[c] = struct{}{}
	p.mu.Unlock()
	up, err := net.Dial("tcp", p.upstream)
	if err != nil {
		p.drop(c)
		return
	}
	p.mu.Lock()
	if p.cut {
		p.mu.Unlock()
		up.Close()
		p.drop(c)
		return
	}
	p.conns[up] = struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	p.drop(c)
	p.drop(up)
}

func (p *faultProxy) drop(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// Cut closes every open connection and refuses new ones until Restore.
func (p *faultProxy) Cut() {
	p.mu.Lock()
	p.cut = true
	conns := p.conns
	p.conns = map[net.Conn]struct{}{}
	p.mu.Unlock()
	for c := range conns {
		c.Close()
	}
}

// Restore forwards new connections again.
func (p *faultProxy) Restore() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

// Kubeconfig writes a kubeconfig that reaches the API server through the
// proxy with token.
func (p *faultProxy) Kubeconfig(token string) string {
	p.t.Helper()
	return kubeconfig(p.t, "https://"+p.l.Addr().String(), token)
}

// kubeconfig writes a kubeconfig for server and token.
func kubeconfig(t *testing.T, server, token string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2efaults"] = &clientcmdapi.Cluster{Server: server, InsecureSkipTLSVerify: true}
	cfg.AuthInfos["e2efaults"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["e2efaults"] = &clientcmdapi.Context{Cluster: "e2efaults", AuthInfo: "e2efaults", Namespace: "default"}
	cfg.CurrentContext = "e2efaults"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
