package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubegcd/kubegcd/internal/auditpeers"
	kubehttp "github.com/kubegcd/kubegcd/internal/http"
)

// auditPeersConfig is what the audit sharing flags set.
type auditPeersConfig struct {
	advertiseURL    string
	static          []string
	tokenFile       string
	caFile          string
	certFile        string
	keyFile         string
	interval        time.Duration
	handoverTimeout time.Duration
}

func (f *runFlags) addAuditPeerFlags(fs *pflag.FlagSet) {
	c := &f.cfg.auditPeers
	fs.StringVar(&c.advertiseURL, "advertise-url", "",
		"this instance's API URL as its peers reach it, advertised on its LeaseCandidate "+
			"(--leader-elect-coordinated) or its peer Lease beside the election Lease "+
			"(default: from --listen, with the host name for 0.0.0.0; none when --listen is loopback)")
	fs.StringSliceVar(&c.static, "audit-peers", nil,
		"API URLs of peers to read audit rows from, besides those the cluster advertises (comma-separated)")
	fs.StringVar(&c.tokenFile, "audit-peer-token-file", "",
		"file whose first line is the bearer token sent to peers: a token of their --auth-token-file")
	fs.StringVar(&c.caFile, "audit-peer-ca-file", "",
		"PEM CA bundle that verifies the peers' serving certificates (default: the system's)")
	fs.StringVar(&c.certFile, "audit-peer-cert-file", "",
		"PEM client certificate presented to peers that verify them with --client-ca-file")
	fs.StringVar(&c.keyFile, "audit-peer-key-file", "", "the PEM private key of --audit-peer-cert-file")
	fs.DurationVar(&c.interval, "audit-peer-interval", time.Second, "time between two reads of a peer's audit rows")
	fs.DurationVar(&c.handoverTimeout, "audit-handover-timeout", 5*time.Second,
		"how long a new leader waits for the old leader's audit rows before its first write; "+
			"past it, /audit shows a gap in the old leader's history until its rows arrive")
}

// validateAuditPeers checks the audit sharing flags.
func (c *runConfig) validateAuditPeers() []error {
	var e checks
	a := &c.auditPeers
	badURL := func(flag, u string) {
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			e = append(e, fmt.Errorf("invalid --%s %q: want an http(s)://HOST:PORT URL", flag, u))
		}
	}
	if a.advertiseURL != "" {
		badURL("advertise-url", a.advertiseURL)
	}
	for _, u := range a.static {
		badURL("audit-peers", u)
	}
	if (a.certFile == "") != (a.keyFile == "") {
		e = append(e, errors.New("invalid --audit-peer-cert-file/--audit-peer-key-file: give both or neither"))
	}
	e.bad(a.interval < 100*time.Millisecond, "audit-peer-interval", a.interval, "must be at least 100ms")
	e.bad(a.handoverTimeout <= 0, "audit-handover-timeout", a.handoverTimeout, "must be positive")
	return e
}

// advertiseURL is --advertise-url, or the URL --listen gives: its port
// with the host name for a wildcard address, and none for loopback, which
// no peer on another machine reaches.
func (c *runConfig) advertiseURL() string {
	if c.auditPeers.advertiseURL != "" {
		return strings.TrimSuffix(c.auditPeers.advertiseURL, "/")
	}
	host, port, err := net.SplitHostPort(c.listen)
	if err != nil || isLoopback(host) {
		return ""
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		if host, err = os.Hostname(); err != nil || host == "" {
			return ""
		}
	}
	scheme := "http"
	if c.tlsCertFile != "" {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// auditSharing is the audit sharing of one run: nil sharer when this
// instance reads no peer (no election and no --audit-peers).
type auditSharing struct {
	identity   string
	sharer     *auditpeers.Sharer
	advertiser *auditpeers.Advertiser
}

// newAuditSharing makes the sharer, and the advertiser under leader
// election. It reads nothing from the database: runAuditSharing records
// this instance as a writer, and starts the sharer, once the database
// answers.
func (d *daemonRun) newAuditSharing(identity string) (auditSharing, error) {
	s := auditSharing{identity: identity}
	cfg := d.cfg
	if !d.lead.Enabled() && len(cfg.auditPeers.static) == 0 {
		return s, nil
	}
	client, err := peerClient(&cfg.auditPeers)
	if err != nil {
		return s, err
	}
	logger := d.log.With("component", "audit-peers")
	sc := auditpeers.Config{Identity: identity, AdvertiseURL: cfg.advertiseURL(), Static: cfg.auditPeers.static,
		Client: client, TokenFile: cfg.auditPeers.tokenFile, Interval: cfg.auditPeers.interval,
		HandoverTimeout: cfg.auditPeers.handoverTimeout, Logger: logger, Registerer: d.reg}
	if d.lead.Enabled() {
		kube, err := kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(d.restCfg), "kubegcd-audit-peers"))
		if err != nil {
			return s, err
		}
		ns, lease := d.lead.Lease()
		s.advertiser = &auditpeers.Advertiser{Client: kube, Namespace: ns, Lease: lease, Identity: identity,
			URL: sc.AdvertiseURL, Coordinated: d.lead.Coordinated(), Logger: logger}
		sc.Discover = s.advertiser.Discover
	}
	s.sharer = auditpeers.New(sc, d.store.AuditPeers())
	return s, nil
}

// peerClient is the HTTP client that reads the peers: their CA, this
// instance's client certificate, and bounded connections.
func peerClient(c *auditPeersConfig) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = 10 * time.Second
	tr.MaxResponseHeaderBytes = 64 << 10
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.caFile != "" {
		pem, err := os.ReadFile(c.caFile)
		if err != nil {
			return nil, fmt.Errorf("--audit-peer-ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--audit-peer-ca-file %s: no PEM certificate", c.caFile)
		}
		tlsCfg.RootCAs = pool
	}
	if c.certFile != "" {
		cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
		if err != nil {
			return nil, fmt.Errorf("--audit-peer-cert-file: %w", err)
		}
		tlsCfg.Certificates = []tls.Certificate{cert}
	}
	tr.TLSClientConfig = tlsCfg
	return &http.Client{Transport: tr,
		// A peer's redirect is not followed: the token goes to the peer only.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, nil
}

// runAuditSharing adds the sharer's and the advertiser's parts. Every
// instance records itself as a writer of its database, so that a later
// run that shares knows whose rows are its own. A database that does not
// answer yet is tried again: it ends the run through the parts that need
// it, not through this one.
func (d *daemonRun) runAuditSharing(work context.Context, p parts) {
	p.add("audit peers", func() error {
		until := func(what string, fn func(context.Context) error) bool {
			for wait := time.Second; ; wait = min(2*wait, 30*time.Second) {
				err := fn(work)
				if err == nil {
					return true
				}
				d.log.Warn("audit peers: "+what+"; trying again", "err", err, "in", wait)
				select {
				case <-work.Done():
					return false
				case <-time.After(wait):
				}
			}
		}
		store := d.store.AuditPeers()
		if !until("cannot record this instance as a writer of its database", func(ctx context.Context) error {
			return store.RecordWriter(ctx, d.audit.identity)
		}) || d.audit.sharer == nil || !until("cannot start", d.audit.sharer.Start) {
			return nil
		}
		return d.audit.sharer.Run(work)
	})
	if d.audit.advertiser != nil {
		p.add("audit advertisement", func() error { return d.audit.advertiser.Run(work) })
	}
}

// leaderWork is the work of a new leader: the old leader's audit rows
// first, within --audit-handover-timeout, then the controllers.
func (d *daemonRun) leaderWork(ctx context.Context) error {
	if d.audit.sharer != nil {
		d.audit.sharer.Handover(ctx, d.lead.PreviousHolder())
	}
	return d.ctrls.run(ctx)
}

// auditPeersView is what /status shows of s: nil when there is none.
func auditPeersView(s *auditpeers.Sharer) kubehttp.AuditPeers {
	if s == nil {
		return nil
	}
	return s
}
