package app

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/kubegcd/kubegcd/internal/auditsink"
)

// auditSinkConfig is where the audit history leaves kubegcd: the flags of
// kube-apiserver's log and webhook backends.
type auditSinkConfig struct {
	log     auditsink.LogConfig
	webhook auditsink.WebhookConfig
	// What --audit-webhook-config-file names, read by complete.
	webhookURL    *url.URL
	webhookClient *http.Client
}

func (f *runFlags) addAuditSinkFlags(fs *pflag.FlagSet) {
	l, w := &f.cfg.auditSinks.log, &f.cfg.auditSinks.webhook
	fs.StringVar(&l.Path, "audit-log-path", "",
		"write every audit row this instance records to this file, one JSON line each "+
			"(the AuditEntry of GET /audit), as kube-apiserver's log backend; '-' writes to standard output "+
			"(default: no file)")
	fs.IntVar(&l.MaxAge, "audit-log-maxage", 0,
		"days a rotated audit log file is kept (0: no limit)")
	fs.IntVar(&l.MaxBackups, "audit-log-maxbackup", 0,
		"rotated audit log files kept (0: no limit)")
	fs.IntVar(&l.MaxSizeMB, "audit-log-maxsize", 100,
		"size in megabytes at which the audit log file is rotated")
	fs.BoolVar(&l.Compress, "audit-log-compress", false, "gzip the rotated audit log files")
	fs.StringVar(&w.ConfigFile, "audit-webhook-config-file", "",
		"post every audit row this instance records, in batches, to the server a kubeconfig file names "+
			"(its current context's cluster: URL and CA; its user: client certificate or token), "+
			"as kube-apiserver's webhook backend (default: no webhook)")
	fs.IntVar(&w.BufferSize, "audit-webhook-batch-buffer-size", auditsink.DefaultWebhookBufferSize,
		"audit rows the webhook holds in memory; while its receiver fails and the buffer is full, "+
			"the oldest are dropped and counted (the database keeps them)")
	fs.IntVar(&w.BatchMaxSize, "audit-webhook-batch-max-size", auditsink.DefaultWebhookBatchMaxSize,
		"audit rows one webhook request carries at most")
	fs.DurationVar(&w.BatchMaxWait, "audit-webhook-batch-max-wait", auditsink.DefaultWebhookBatchMaxWait,
		"how long an audit row waits for a full batch before a smaller one is posted")
	fs.DurationVar(&w.InitialBackoff, "audit-webhook-initial-backoff", auditsink.DefaultWebhookInitialBackoff,
		"wait after a failed webhook request; it doubles with each failure, up to 30s or this, whichever is longer")
}

// validateAuditSinks checks the sinks' flags, and reads the webhook's
// kubeconfig: a path whose directory is missing or a kubeconfig that does
// not parse stops kubegcd at start, in a line.
func (c *runConfig) validateAuditSinks() []error {
	var e checks
	l, w := &c.auditSinks.log, &c.auditSinks.webhook
	if l.Path != "" {
		if err := auditsink.CheckPath(l.Path); err != nil {
			e = append(e, fmt.Errorf("invalid --audit-log-path %s: %w", l.Path, err))
		}
	}
	e.bad(l.MaxAge < 0, "audit-log-maxage", l.MaxAge, "must be 0 (no limit) or more")
	e.bad(l.MaxBackups < 0, "audit-log-maxbackup", l.MaxBackups, "must be 0 (no limit) or more")
	e.bad(l.MaxSizeMB < 1, "audit-log-maxsize", l.MaxSizeMB, "must be at least 1")
	e.bad(w.BufferSize < 1, "audit-webhook-batch-buffer-size", w.BufferSize, "must be at least 1")
	e.bad(w.BatchMaxSize < 1 || w.BatchMaxSize > w.BufferSize, "audit-webhook-batch-max-size", w.BatchMaxSize,
		"must be at least 1 and at most --audit-webhook-batch-buffer-size")
	e.bad(w.BatchMaxWait <= 0, "audit-webhook-batch-max-wait", w.BatchMaxWait, "must be positive")
	e.bad(w.InitialBackoff < 10*time.Millisecond, "audit-webhook-initial-backoff", w.InitialBackoff,
		"must be at least 10ms")
	if w.ConfigFile != "" {
		const want = "want a kubeconfig that names the receiver"
		if _, err := os.Stat(w.ConfigFile); err != nil {
			e = append(e, fmt.Errorf("invalid --audit-webhook-config-file %s: %s: %w", w.ConfigFile, want, err))
		} else if u, client, err := auditsink.LoadWebhookConfig(w.ConfigFile); err != nil {
			e = append(e, fmt.Errorf("invalid --audit-webhook-config-file %s: %s: %w", w.ConfigFile, want, err))
		} else {
			c.auditSinks.webhookURL, c.auditSinks.webhookClient = u, client
		}
	}
	return e
}

// addAuditSinks adds a part for each sink configured. A sink never ends
// the run: it retries what fails, and returns when the work ends.
func (d *daemonRun) addAuditSinks(work context.Context, p parts) {
	o := auditsink.Options{Source: d.store.Decisions(), Metrics: d.auditMetrics,
		Logger: d.log.With("component", "audit-sink")}
	s := &d.cfg.auditSinks
	if s.log.Path != "" {
		l := auditsink.NewLog(s.log, os.Stdout, o)
		p.add("audit log", func() error { return l.Run(work) })
	}
	if s.webhookURL != nil {
		w := auditsink.NewWebhook(s.webhook, s.webhookURL, s.webhookClient, o)
		p.add("audit webhook", func() error { return w.Run(work) })
	}
}
