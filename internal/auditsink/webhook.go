package auditsink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// WebhookConfig is the webhook backend's configuration, named as
// kube-apiserver's --audit-webhook-* flags.
type WebhookConfig struct {
	// ConfigFile is a kubeconfig: its current context's cluster names the
	// receiver's URL and CA, its user the client certificate or token.
	ConfigFile string
	// BufferSize is the most rows held in memory, read and not yet
	// accepted.
	BufferSize int
	// BatchMaxSize is the most rows one request carries.
	BatchMaxSize int
	// BatchMaxWait is how long a row waits for a full batch before a
	// smaller one is sent.
	BatchMaxWait time.Duration
	// InitialBackoff is the wait after the first failed request; it
	// doubles with each failure, up to 30 s (or InitialBackoff when that
	// is longer).
	InitialBackoff time.Duration
	// Timeout bounds one request (30 s when 0).
	Timeout time.Duration
}

// Defaults of the webhook's flags: kube-apiserver's.
const (
	DefaultWebhookBufferSize     = 10000
	DefaultWebhookBatchMaxSize   = 400
	DefaultWebhookBatchMaxWait   = 30 * time.Second
	DefaultWebhookInitialBackoff = 10 * time.Second
	defaultWebhookTimeout        = 30 * time.Second
)

// LoadWebhookConfig reads a kubeconfig for the webhook: the URL to post
// to and the client that carries its CA and credentials. Its errors say in
// a line what is wrong.
func LoadWebhookConfig(path string) (*url.URL, *http.Client, error) {
	kc, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*kc, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, nil, err
	}
	u, err := url.Parse(cfg.Host)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, nil, fmt.Errorf("the cluster's server %q is not an http or https URL", cfg.Host)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, nil, err
	}
	return u, client, nil
}

// Webhook posts every audit row this database holds to a receiver, in
// batches (api.AuditBatch), as kube-apiserver's audit webhook does.
//
// It holds at most BufferSize rows. While the receiver accepts them, it
// reads no further than the buffer holds, and the database keeps the
// rest. While the receiver fails, it goes on reading the rows written
// since: when the buffer is full, the oldest rows make room and are
// counted as dropped. The cursor moves past the rows dropped. They stay
// in the database and GET /audit.
type Webhook struct {
	o      Options
	cfg    WebhookConfig
	url    string
	client *http.Client
}

// NewWebhook makes the webhook backend, which posts to u with client.
func NewWebhook(cfg WebhookConfig, u *url.URL, client *http.Client, o Options) *Webhook {
	o.setDefaults()
	o.Metrics.init(BackendWebhook)
	if cfg.BufferSize <= 0 {
		cfg.BufferSize = DefaultWebhookBufferSize
	}
	if cfg.BatchMaxSize <= 0 {
		cfg.BatchMaxSize = DefaultWebhookBatchMaxSize
	}
	cfg.BatchMaxSize = min(cfg.BatchMaxSize, cfg.BufferSize)
	if cfg.Timeout <= 0 {
		cfg.Timeout = defaultWebhookTimeout
	}
	c := *client
	c.Timeout = cfg.Timeout
	return &Webhook{o: o, cfg: cfg, url: u.String(), client: &c}
}

// buffered is a row read and not yet accepted: its id, its JSON, and when
// it was read.
type buffered struct {
	id   int64
	json []byte
	read time.Time
}

// webhookRun is one run's state.
type webhookRun struct {
	*Webhook
	c   *cursor
	buf []buffered
	// readTo is the id of the last row read (into buf, or dropped).
	readTo int64
	// failing: the last request failed, and is retried at retryAt.
	failing bool
	retryAt time.Time
	// The rows dropped since the last warning.
	droppedFrom, droppedTo int64
	dropped                int
}

// Run ships rows until ctx ends; it returns nil then.
func (w *Webhook) Run(ctx context.Context) error {
	r := &webhookRun{Webhook: w, c: &cursor{o: &w.o, sink: BackendWebhook}}
	if err := r.c.load(ctx); err != nil {
		return nil
	}
	r.readTo = r.c.last
	defer r.c.save(ctx)
	backoff := newBackoff(w.cfg.InitialBackoff)
	gauge := w.o.Metrics.buffered.WithLabelValues(BackendWebhook)
	for ctx.Err() == nil {
		more, err := r.fill(ctx)
		if err != nil {
			w.o.Logger.Warn("audit webhook: cannot read the audit history; trying again", "err", err)
		}
		r.warnDropped()
		gauge.Set(float64(len(r.buf)))
		now := w.o.Clock.Now()
		if r.due(now) {
			switch err := r.send(ctx); {
			case err == nil:
				r.failing = false
				backoff = newBackoff(w.cfg.InitialBackoff)
			case errors.Is(err, errRejected):
				w.o.Logger.Error("audit webhook: the receiver refused a batch for good; "+
					"its rows stay in the database only", "url", w.url, "err", err)
			case ctx.Err() != nil:
				// Stopping: the batch is shipped again after the restart.
			default:
				w.o.Metrics.retried.WithLabelValues(BackendWebhook).Inc()
				d := backoff.Step()
				r.failing, r.retryAt = true, w.o.Clock.Now().Add(d)
				w.o.Logger.Warn("audit webhook: cannot post a batch; trying again", "url", w.url, "err", err,
					"rows", min(len(r.buf), w.cfg.BatchMaxSize), "retry_in", d.Round(time.Millisecond))
			}
			r.moveCursor()
			r.c.save(ctx)
			gauge.Set(float64(len(r.buf)))
			continue
		}
		r.moveCursor()
		r.c.save(ctx)
		if more && !r.failing && len(r.buf) < w.cfg.BufferSize {
			continue
		}
		sleep(ctx, w.o.Clock, r.nextWake(now))
	}
	return nil
}

// fill reads the rows written since. While the receiver accepts, it reads
// no more than the buffer has room for; while it fails, it reads on, and
// the oldest rows make room. more says that rows may be waiting still.
func (r *webhookRun) fill(ctx context.Context) (more bool, err error) {
	limit := r.o.PageSize
	if !r.failing {
		limit = min(limit, r.cfg.BufferSize-len(r.buf))
	}
	if limit <= 0 {
		return true, nil
	}
	rows, err := r.o.Source.AuditAfter(ctx, r.readTo, limit)
	if err != nil {
		return false, err
	}
	now := r.o.Clock.Now()
	for i := range rows {
		b, err := encode(&rows[i])
		if err != nil {
			return false, err
		}
		r.buf = append(r.buf, buffered{id: rows[i].ID, json: b, read: now})
		r.readTo = rows[i].ID
	}
	if over := len(r.buf) - r.cfg.BufferSize; over > 0 {
		r.drop(over, reasonBufferFull)
	}
	return len(rows) == limit, nil
}

// drop gives up on the n oldest rows of the buffer.
func (r *webhookRun) drop(n int, reason string) {
	if r.dropped == 0 {
		r.droppedFrom = r.buf[0].id
	}
	r.droppedTo = r.buf[n-1].id
	r.dropped += n
	r.o.Metrics.dropped.WithLabelValues(BackendWebhook, reason).Add(float64(n))
	// Copied down, so that the array does not keep growing at its end.
	r.buf = append(r.buf[:0], r.buf[n:]...)
}

// warnDropped logs the rows dropped for a full buffer since the last
// warning, once a pass.
func (r *webhookRun) warnDropped() {
	if r.dropped == 0 {
		return
	}
	r.o.Logger.Warn("audit webhook: its receiver fails and its buffer is full: dropped the oldest rows; "+
		"the database and GET /audit keep them", "rows", r.dropped, "from_id", r.droppedFrom, "to_id", r.droppedTo)
	r.dropped = 0
}

// due says whether a batch should be posted now: a full one, one whose
// oldest row waited BatchMaxWait, and none before a retry's time.
func (r *webhookRun) due(now time.Time) bool {
	switch {
	case len(r.buf) == 0:
		return false
	case r.failing:
		return !now.Before(r.retryAt)
	case len(r.buf) >= r.cfg.BatchMaxSize:
		return true
	}
	return now.Sub(r.buf[0].read) >= r.cfg.BatchMaxWait
}

// nextWake is how long to wait before the next pass: the next poll, or
// sooner when a batch or a retry falls due.
func (r *webhookRun) nextWake(now time.Time) time.Duration {
	d := r.o.PollPeriod
	switch {
	case len(r.buf) == 0:
	case r.failing:
		d = min(d, r.retryAt.Sub(now))
	default:
		d = min(d, r.buf[0].read.Add(r.cfg.BatchMaxWait).Sub(now))
	}
	return max(d, 0)
}

// moveCursor: every row before the oldest held is shipped or dropped.
func (r *webhookRun) moveCursor() {
	if len(r.buf) > 0 {
		r.c.last = r.buf[0].id - 1
	} else {
		r.c.last = r.readTo
	}
}

// errRejected is a refusal that a retry would meet again.
var errRejected = errors.New("rejected")

// send posts the oldest rows, a batch of at most BatchMaxSize. Accepted or
// rejected, they leave the buffer; otherwise they stay for the retry.
func (r *webhookRun) send(ctx context.Context) error {
	n := min(len(r.buf), r.cfg.BatchMaxSize)
	var body bytes.Buffer
	body.WriteString(`{"items":[`)
	for i, b := range r.buf[:n] {
		if i > 0 {
			body.WriteByte(',')
		}
		body.Write(b.json)
	}
	body.WriteString("]}")
	err := r.post(ctx, &body)
	switch {
	case err == nil:
		r.o.Metrics.sent.WithLabelValues(BackendWebhook).Add(float64(n))
		r.buf = append(r.buf[:0], r.buf[n:]...)
	case errors.Is(err, errRejected):
		r.o.Metrics.dropped.WithLabelValues(BackendWebhook, reasonRejected).Add(float64(n))
		r.buf = append(r.buf[:0], r.buf[n:]...)
	}
	return err
}

// post sends one batch; a 2xx is success.
func (r *webhookRun) post(ctx context.Context, body io.Reader) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	err = fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(msg))
	if permanent(resp.StatusCode) {
		return fmt.Errorf("%w: %w", errRejected, err)
	}
	return err
}

// permanent says a status refuses the batch for good: a 4xx but those a
// receiver gives while it cannot take the batch yet (401 and 403 while
// credentials are being set up, 408, 429).
func permanent(code int) bool {
	switch code {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusRequestTimeout, http.StatusTooManyRequests:
		return false
	}
	return code >= 400 && code < 500
}
