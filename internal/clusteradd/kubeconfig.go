package clusteradd

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubegcd/kubegcd/internal/cmdline"
)

// caller is the caller's own kubeconfig, whose credentials cluster add uses
// once, and whose cluster entry the written kubeconfig copies.
type caller struct {
	config      *rest.Config
	contextName string
	clusterName string
	cluster     *clientcmdapi.Cluster
	// files are the kubeconfig files read, which cluster add never writes.
	files []string
}

// loadCaller reads the kubeconfig as kubectl does: --kubeconfig, else
// $KUBECONFIG, else ~/.kube/config; its --context, else its current one.
func loadCaller(kubeconfig, context string) (*caller, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context})
	raw, err := cc.RawConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	if len(raw.Contexts) == 0 {
		return nil, errors.New("no kubeconfig to read (--kubeconfig, $KUBECONFIG, ~/.kube/config): cluster add needs your own, with rights to create roles")
	}
	name := context
	if name == "" {
		name = raw.CurrentContext
	}
	if name == "" {
		return nil, cmdline.Usagef("the kubeconfig names no current context: give --context (contexts: %s)", contextNames(raw))
	}
	ctx, ok := raw.Contexts[name]
	if !ok {
		return nil, cmdline.Usagef("--context %s: no such context in the kubeconfig (contexts: %s)", name, contextNames(raw))
	}
	cluster, ok := raw.Clusters[ctx.Cluster]
	if !ok {
		return nil, fmt.Errorf("context %s names cluster %q, which the kubeconfig does not hold", name, ctx.Cluster)
	}
	config, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("context %s: %w", name, err)
	}
	files := rules.GetLoadingPrecedence()
	if kubeconfig != "" {
		files = []string{kubeconfig}
	}
	return &caller{config: config, contextName: name, clusterName: ctx.Cluster, cluster: cluster, files: files}, nil
}

func contextNames(c clientcmdapi.Config) string {
	names := slices.Sorted(maps.Keys(c.Contexts))
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// userName is the user entry of the kubeconfig cluster add writes.
const userName = "kubegcd"

// kubeconfigFor is a kubeconfig for the caller's cluster, as the caller
// reaches it, that authenticates with tok. The cluster's CA goes in inline,
// so that the file stands alone wherever it is copied (systemd's
// LoadCredential= copies it).
func kubeconfigFor(c *caller, tok string) (*clientcmdapi.Config, error) {
	ca := c.cluster.CertificateAuthorityData
	if len(ca) == 0 && c.cluster.CertificateAuthority != "" {
		var err error
		if ca, err = os.ReadFile(c.cluster.CertificateAuthority); err != nil {
			return nil, fmt.Errorf("reading the CA of cluster %s: %w", c.clusterName, err)
		}
	}
	out := clientcmdapi.NewConfig()
	out.Clusters[c.clusterName] = &clientcmdapi.Cluster{
		Server:                   c.cluster.Server,
		TLSServerName:            c.cluster.TLSServerName,
		InsecureSkipTLSVerify:    c.cluster.InsecureSkipTLSVerify,
		CertificateAuthorityData: ca,
		ProxyURL:                 c.cluster.ProxyURL,
		DisableCompression:       c.cluster.DisableCompression,
	}
	out.AuthInfos[userName] = &clientcmdapi.AuthInfo{Token: tok}
	out.Contexts[c.contextName] = &clientcmdapi.Context{Cluster: c.clusterName, AuthInfo: userName}
	out.CurrentContext = c.contextName
	return out, nil
}

// trust says how the written kubeconfig checks the API server's
// certificate.
func trust(c *clientcmdapi.Cluster) string {
	switch {
	case len(c.CertificateAuthorityData) > 0:
		return "the cluster's CA inline"
	case c.InsecureSkipTLSVerify:
		return "no check of the server's certificate (insecure-skip-tls-verify, as the caller's kubeconfig)"
	}
	return "the system's CAs (the caller's kubeconfig names none)"
}

// writeFile writes data to path, mode perm, through a file of its own
// renamed over it, so that no reader sees half of it; it returns created,
// unchanged (the same bytes and mode) or updated.
func writeFile(path string, data []byte, perm fs.FileMode) (string, error) {
	outcome := created
	if old, err := os.ReadFile(path); err == nil {
		st, err := os.Stat(path)
		if err == nil && bytes.Equal(old, data) && st.Mode().Perm() == perm {
			return unchanged, nil
		}
		outcome = updated
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name()) // after the rename, nothing
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		return "", err
	}
	return outcome, nil
}

// checkWritable fails, in one line that says what to do, when path's
// directory cannot take a new file: before cluster add changes anything in
// the cluster.
func checkWritable(path, flag string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot write %s: %w (run as root, or choose another file with %s)", path, unwrapPath(err), flag)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w (run as root, or choose another file with %s)", path, unwrapPath(err), flag)
	}
	f.Close()
	return os.Remove(f.Name())
}

// unwrapPath is err without the path a PathError repeats.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// sameFile reports whether a and b name one existing file.
func sameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}
