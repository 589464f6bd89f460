package clusteradd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/user"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubegcd/kubegcd/internal/cmdline"
)

const clusterHelp = `Gives kubegcd an identity of its own in a cluster, bound by the rights it
needs and no more, and writes its kubeconfig (add); or takes it away
(remove). Each uses the caller's own kubeconfig, once.`

const addHelp = `Uses the caller's kubeconfig (--kubeconfig, else $KUBECONFIG, else
~/.kube/config; --context, else its current context) once, to apply the
ServiceAccount kube-system/kubegcd and the rights of deploy/clusterrole.yaml,
bound to it: the ClusterRole kubegcd, the Role kubegcd-leader-election in
kube-system and their bindings. Each object is created, updated, or left
unchanged: a second run changes nothing and says so.

The token is a Secret's (kube-system/kubegcd-token, of type
kubernetes.io/service-account-token, which kube-controller-manager fills and
which does not expire), or with --token-duration a TokenRequest's, which
expires (at least 10m; the API server may cap it).

It writes a kubeconfig (mode 0600) with the token and the cluster as the
caller reaches it, its CA inline: --out, else /etc/kubegcd/kubeconfig, which
kubegcd.service loads. With --name NAME it writes NAME.kubeconfig and
NAME.conf (the shipped config file, with the instance's database and a free
listen port) in --config-dir, for the template unit kubegcd@NAME.service; an
existing NAME.conf is kept.

The shipped role reads every resource, Secrets included: RBAC cannot grant
metadata alone. --no-secrets applies instead a role that grants the same
verbs on each resource discovery lists now, but Secrets: kubegcd then neither
mirrors nor collects Secrets, and a group served later (a new CRD) needs
cluster add --no-secrets again.

--dry-run prints the manifests (YAML, as kubectl apply -f reads it) and
changes nothing.`

const removeHelp = `Uses the caller's kubeconfig, as add does, to delete what add applied: the
token Secret, the bindings, the roles and the ServiceAccount, whose tokens
then no longer authenticate. Then it deletes the kubeconfig add wrote (--out,
or as add chooses it from --name and --config-dir) and, with --name, the
instance's config file. The instance's database stays: it holds the audit
history.`

// options are cluster add's and remove's flags.
type options struct {
	kubeconfig, context string
	out, name           string
	configDir           string
	tokenDuration       time.Duration
	dryRun, noSecrets   bool
}

// env is what the commands run with; tests set their own.
type env struct {
	stdout, stderr io.Writer
	now            func() time.Time
	// tokenWait bounds the wait for the token controller.
	tokenWait, tokenPoll time.Duration
	portFree             func(port int) bool
	// newClient makes the client of the caller's config.
	newClient func(*rest.Config) (kubernetes.Interface, error)
	// authenticates checks the written kubeconfig's token with the API
	// server; nil skips the check.
	authenticates func(ctx context.Context, cfg *rest.Config) (string, error)
}

// Command is kubegcd cluster, with add and remove.
func Command(stdout, stderr io.Writer) *cobra.Command {
	e := &env{stdout: stdout, stderr: stderr, now: time.Now, tokenWait: time.Minute, tokenPoll: 500 * time.Millisecond,
		portFree: loopbackFree, authenticates: whoAmI,
		newClient: func(c *rest.Config) (kubernetes.Interface, error) { return kubernetes.NewForConfig(c) }}
	return e.command()
}

func (e *env) command() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster add|remove [flags]",
		Short: "give kubegcd its own least-privilege identity in a cluster, or take it away",
		Long:  clusterHelp,
		Args:  cmdline.RejectCommand,
		RunE: func(*cobra.Command, []string) error {
			return cmdline.Usagef("cluster needs a command: add or remove")
		},
	}
	var o options
	add := &cobra.Command{
		Use:   "add [flags]",
		Short: "apply kubegcd's ServiceAccount and rights, and write its kubeconfig",
		Long:  addHelp,
		Args:  noArguments,
		RunE:  func(c *cobra.Command, _ []string) error { return e.add(c.Context(), o) },
	}
	remove := &cobra.Command{
		Use:   "remove [flags]",
		Short: "delete what cluster add applied and wrote",
		Long:  removeHelp,
		Args:  noArguments,
		RunE:  func(c *cobra.Command, _ []string) error { return e.remove(c.Context(), o) },
	}
	for _, c := range []*cobra.Command{add, remove} {
		f := c.Flags()
		f.StringVar(&o.kubeconfig, "kubeconfig", "", "the caller's kubeconfig, with rights to create roles (default $KUBECONFIG, else ~/.kube/config)")
		f.StringVar(&o.context, "context", "", "the context of the cluster (default the kubeconfig's current context)")
		f.StringVar(&o.name, "name", "", "the instance of kubegcd@.service: write NAME.kubeconfig and NAME.conf in --config-dir")
		f.StringVar(&o.configDir, "config-dir", DefaultConfigDir, "where the units read their config files and kubeconfigs")
		_ = c.MarkFlagFilename("kubeconfig")
		_ = c.MarkFlagDirname("config-dir")
		_ = c.RegisterFlagCompletionFunc("context", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return kubeContexts(o.kubeconfig), cobra.ShellCompDirectiveNoFileComp
		})
	}
	add.Flags().StringVar(&o.out, "out", "", "the kubeconfig to write (default kubeconfig, or NAME.kubeconfig, in --config-dir)")
	remove.Flags().StringVar(&o.out, "out", "", "the kubeconfig add wrote, to delete (default kubeconfig, or NAME.kubeconfig, in --config-dir)")
	add.Flags().DurationVar(&o.tokenDuration, "token-duration", 0, "a TokenRequest token valid this long, at least 10m (default: a Secret's token, which does not expire)")
	add.Flags().BoolVar(&o.noSecrets, "no-secrets", false, "grant the verbs of the shipped role on every resource discovered now but Secrets")
	add.Flags().BoolVar(&o.dryRun, "dry-run", false, "print the manifests, change nothing")
	for _, c := range []*cobra.Command{add, remove} {
		_ = c.MarkFlagFilename("out")
	}
	cmd.AddCommand(add, remove)
	return cmd
}

func noArguments(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return cmdline.Usagef("unexpected argument %q", args[0])
	}
	return nil
}

// kubeContexts are the contexts of the kubeconfig, for --context's
// completion.
func kubeContexts(kubeconfig string) []cobra.Completion {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	config, err := rules.Load()
	if err != nil {
		return nil
	}
	return slices.Sorted(maps.Keys(config.Contexts))
}

func (o options) check() error {
	if err := checkName(o.name); err != nil {
		return err
	}
	if o.configDir == "" {
		return cmdline.Usagef("--config-dir: want a directory")
	}
	if o.tokenDuration != 0 && o.tokenDuration < minTokenDuration {
		return cmdline.Usagef("--token-duration %v: want at least %v, the shortest token the API server issues", o.tokenDuration, minTokenDuration)
	}
	return nil
}

// clients are the caller's clients of the cluster.
func (e *env) clients(o options) (*caller, kubernetes.Interface, error) {
	c, err := loadCaller(o.kubeconfig, o.context)
	if err != nil {
		return nil, nil, err
	}
	cfg := rest.CopyConfig(c.config)
	cfg.Timeout = 30 * time.Second
	cs, err := e.newClient(cfg)
	if err != nil {
		return nil, nil, err
	}
	return c, cs, nil
}

func (e *env) add(ctx context.Context, o options) error {
	if err := o.check(); err != nil {
		return err
	}
	m, err := shippedManifests(o.tokenDuration == 0)
	if err != nil {
		return err
	}
	p := pathsFor(o.configDir, o.name, o.out)
	var c *caller
	var cs kubernetes.Interface
	// Without --no-secrets, a dry run needs no cluster.
	if !o.dryRun || o.noSecrets {
		if c, cs, err = e.clients(o); err != nil {
			return err
		}
		for _, f := range c.files {
			if sameFile(f, p.kubeconfig) {
				return cmdline.Usagef("%s is the kubeconfig cluster add reads: choose another file with --out", p.kubeconfig)
			}
		}
	}
	if o.noSecrets {
		if m.ClusterRole, err = e.discoveredRole(cs, m.ClusterRole); err != nil {
			return err
		}
	}
	if o.dryRun {
		data, err := m.YAML()
		if err != nil {
			return err
		}
		_, err = e.stdout.Write(data)
		return err
	}
	if err := p.checkWritable(); err != nil {
		return err
	}

	say := func(obj runtime.Object, outcome string) { fmt.Fprintf(e.stdout, "%s: %s\n", describe(obj), outcome) }
	changed, err := applyAll(ctx, steps(cs, m), say)
	if err != nil {
		return err
	}
	var tok token
	if m.Secret != nil {
		tok, err = secretToken(ctx, cs, m.Secret, e.tokenPoll, e.tokenWait)
	} else {
		tok, err = requestToken(ctx, cs, m.ServiceAccount, o.tokenDuration)
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, describeToken(tok, o.tokenDuration, e.now()))

	kcOutcome, err := e.writeKubeconfig(ctx, c, m, tok, p.kubeconfig)
	if err != nil {
		return err
	}
	changed = changed || kcOutcome != unchanged

	if p.conf != "" {
		outcome, err := e.writeConf(o, p.conf)
		if err != nil {
			return err
		}
		changed = changed || outcome != unchanged
	}
	if !changed {
		fmt.Fprintln(e.stdout, "nothing changed")
	}
	fmt.Fprintln(e.stdout, howToStart(o, p, kcOutcome))
	return nil
}

// checkWritable checks, before anything is applied, that add can write the
// kubeconfig and the instance's config file.
func (p paths) checkWritable() error {
	for _, f := range []string{p.kubeconfig, p.conf} {
		if f == "" {
			continue
		}
		flag := "--out"
		if f == p.conf {
			flag = "--config-dir"
		}
		if err := checkWritable(f, flag); err != nil {
			return err
		}
	}
	return nil
}

// writeKubeconfig writes the kubeconfig of tok to path, once it has
// checked, where it can, that the token authenticates as kubegcd's
// ServiceAccount. It says what it wrote.
func (e *env) writeKubeconfig(ctx context.Context, c *caller, m manifests, tok token, path string) (string, error) {
	kc, err := kubeconfigFor(c, tok.value)
	if err != nil {
		return "", err
	}
	if e.authenticates != nil {
		cfg, err := clientcmd.NewDefaultClientConfig(*kc, nil).ClientConfig()
		if err != nil {
			return "", err
		}
		who, err := e.authenticates(ctx, cfg)
		if err != nil {
			return "", fmt.Errorf("the new kubeconfig does not reach the API server: %w", err)
		}
		if want := "system:serviceaccount:" + m.ServiceAccount.Namespace + ":" + m.ServiceAccount.Name; who != want {
			return "", fmt.Errorf("the new token authenticates as %s, want %s", who, want)
		}
	}
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return "", err
	}
	outcome, err := writeFile(path, data, 0o600)
	if err != nil {
		return "", fmt.Errorf("writing %s: %w", path, unwrapPath(err))
	}
	fmt.Fprintf(e.stdout, "%s: %s (mode 0600; context %s, server %s, %s)\n", path, outcome, c.contextName,
		c.cluster.Server, trust(kc.Clusters[c.clusterName]))
	return outcome, nil
}

// howToStart is the line that says how to run kubegcd with what add wrote:
// the unit that reads the files, or the command line that names them.
func howToStart(o options, p paths, kubeconfig string) string {
	if o.out != "" || o.configDir != DefaultConfigDir {
		if p.conf != "" {
			return fmt.Sprintf("run it: kubegcd run --config %s --kubeconfig %s", p.conf, p.kubeconfig)
		}
		return "run it: kubegcd run --kubeconfig " + p.kubeconfig
	}
	unit := "kubegcd"
	if o.name != "" {
		unit += "@" + o.name
	}
	s := "start it: systemctl enable --now " + unit
	if kubeconfig == updated {
		// systemd hands the unit a copy of the credential at start.
		s += "; if it runs, systemctl restart " + unit + " loads the new kubeconfig"
	}
	return s
}

// writeConf writes the instance's config file unless it exists: the
// operator may have changed it, and it holds no credential.
func (e *env) writeConf(o options, path string) (string, error) {
	if _, err := os.Stat(path); err == nil {
		fmt.Fprintf(e.stdout, "%s: %s (an existing config file is kept)\n", path, unchanged)
		return unchanged, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	port, err := freePort(o.configDir, e.portFree)
	if err != nil {
		return "", err
	}
	data, err := instanceConf(o.name, port)
	if err != nil {
		return "", err
	}
	mode := confMode()
	outcome, err := writeFile(path, data, mode)
	if err != nil {
		return "", fmt.Errorf("writing %s: %w", path, unwrapPath(err))
	}
	if mode == confGroupMode {
		if err := chgrpKubegcd(path); err != nil {
			return "", err
		}
	}
	fmt.Fprintf(e.stdout, "%s: %s (listen 127.0.0.1:%d, db %s/%s/kubegcd.db)\n", path, outcome, port, stateDir, o.name)
	return outcome, nil
}

// A config file is the package's kubegcd.conf's mode: readable by the
// group kubegcd (the unit's user), not by every local user. Without that
// group, or the right to give it the file, it is readable by all: it holds
// no credential.
const (
	confGroupMode fs.FileMode = 0o640
	confMode644   fs.FileMode = 0o644
)

func confMode() fs.FileMode {
	if _, err := user.LookupGroup("kubegcd"); err == nil && os.Geteuid() == 0 {
		return confGroupMode
	}
	return confMode644
}

func chgrpKubegcd(path string) error {
	g, err := user.LookupGroup("kubegcd")
	if err != nil {
		return err
	}
	gid, err := strconv.Atoi(g.Gid)
	if err != nil {
		return err
	}
	return os.Chown(path, -1, gid)
}

// discoveredRole narrows role to the resources discovery lists now, but
// Secrets. Groups whose discovery fails (an aggregated API down) are left
// out, with a warning.
func (e *env) discoveredRole(cs kubernetes.Interface, role *rbacv1.ClusterRole) (*rbacv1.ClusterRole, error) {
	_, lists, err := cs.Discovery().ServerGroupsAndResources()
	var failed *discovery.ErrGroupDiscoveryFailed
	if errors.As(err, &failed) {
		for gv, gerr := range failed.Groups {
			fmt.Fprintf(e.stderr, "warning: %s not discovered, so not granted (%v): run cluster add --no-secrets again once it serves\n", gv, gerr)
		}
	} else if err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	return withoutSecrets(role, lists)
}

func (e *env) remove(ctx context.Context, o options) error {
	if err := o.check(); err != nil {
		return err
	}
	m, err := shippedManifests(true)
	if err != nil {
		return err
	}
	_, cs, err := e.clients(o)
	if err != nil {
		return err
	}
	say := func(obj runtime.Object, outcome string) { fmt.Fprintf(e.stdout, "%s: %s\n", describe(obj), outcome) }
	removed, err := deleteAll(ctx, steps(cs, m), say)
	if err != nil {
		return err
	}
	p := pathsFor(o.configDir, o.name, o.out)
	for _, f := range []string{p.kubeconfig, p.conf} {
		if f == "" {
			continue
		}
		switch err := os.Remove(f); {
		case errors.Is(err, fs.ErrNotExist):
			fmt.Fprintf(e.stdout, "%s: %s\n", f, notFound)
		case err != nil:
			return fmt.Errorf("deleting %s: %w", f, unwrapPath(err))
		default:
			fmt.Fprintf(e.stdout, "%s: %s\n", f, deleted)
			removed = true
		}
	}
	if !removed {
		fmt.Fprintln(e.stdout, "nothing to remove")
	}
	if o.name != "" {
		fmt.Fprintf(e.stdout, "stop the instance if it runs: systemctl disable --now kubegcd@%s\n", o.name)
	}
	return nil
}

// whoAmI is the user the API server knows cfg's credentials as
// (SelfSubjectReview, which every authenticated user may ask). A token
// Secret's token may take a moment to be known: 401s are retried for a few
// seconds.
func whoAmI(ctx context.Context, cfg *rest.Config) (string, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 30 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	var who string
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if apierrors.IsUnauthorized(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		who = r.Status.UserInfo.Username
		return true, nil
	})
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return "", errors.New("the API server refuses the token (401)")
	}
	return who, err
}
