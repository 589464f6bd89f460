// Package auditpeers shares the audit history among the instances of one
// Lease. Each instance reads its peers' rows over their HTTP API, by
// cursor, and merges them into its own database by (instance, origin id),
// so that every instance holds every instance's rows. A new leader reads
// the old leader's rows before its first write, or records a gap.
package auditpeers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

// Store is what sharing reads and writes of the database; db.AuditPeers
// is one.
type Store interface {
	StoreID(ctx context.Context) (string, error)
	Writers(ctx context.Context) ([]string, error)
	RecordWriter(ctx context.Context, instance string) error
	Cursor(ctx context.Context, store string) (int64, error)
	Merge(ctx context.Context, c db.PeerCursor, rows []db.ReplicaRow, refuse func(string) bool) (int, error)
	ResetCursor(ctx context.Context, store string) error
	NewestOf(ctx context.Context, instance string) (*time.Time, error)
	RecordGap(ctx context.Context, g db.AuditGap) error
	ClearGaps(ctx context.Context, instances []string) ([]string, error)
}

// Advert is an instance's advertisement: its identity and its API URL.
type Advert struct {
	Identity string
	URL      string
}

// Config is how an instance shares its audit rows.
type Config struct {
	// Identity is this instance's, as its audit rows carry it.
	Identity string
	// AdvertiseURL is this instance's API URL, as its peers reach it; ""
	// when it advertises none.
	AdvertiseURL string
	// Static are the peers' URLs of --audit-peers.
	Static []string
	// Discover lists the instances' advertisements; nil when none are
	// read from the cluster.
	Discover func(ctx context.Context) ([]Advert, error)
	// DiscoverEvery is the time between two lists (0: 10 s).
	DiscoverEvery time.Duration
	// Client reads the peers: its TLS configuration holds the CA and the
	// client certificate, if any.
	Client *http.Client
	// TokenFile holds the bearer token sent to the peers; "" sends none.
	// It is read at each request, so it rotates without a restart.
	TokenFile string
	// Interval is the time between two reads of a peer (0: 1 s).
	Interval time.Duration
	// RequestTimeout bounds one read of a peer (0: 10 s).
	RequestTimeout time.Duration
	// HandoverTimeout bounds a new leader's read of the old leader's rows
	// (0: 5 s).
	HandoverTimeout time.Duration
	// PageSize is the rows asked for per read (0: 500).
	PageSize int
	// MaxBody bounds a read's body (0: DefaultMaxBody).
	MaxBody int64
	Logger  *slog.Logger
	// Registerer takes the metrics; nil registers none.
	Registerer prometheus.Registerer
	Now        func() time.Time
}

// Sharer reads the peers' audit rows into this instance's database.
type Sharer struct {
	cfg     Config
	store   Store
	metrics metrics

	mu sync.Mutex
	// peers are the peers read, by URL.
	peers map[string]*peer
	// adverts are the advertisements last read, by identity: a dead
	// instance's stays, so a new leader finds the old leader's URL.
	adverts map[string]string
	// own are this database's store id and the identities that wrote
	// into it, set by Start.
	ownStore string
	own      map[string]bool
	// pulling serializes the reads of one peer between Run and Handover.
	pulling sync.Mutex
}

// peer is one peer's state.
type peer struct {
	url, source string
	instance    string
	store       string
	lastPull    time.Time
	behindRows  int64
	behindSecs  float64
	lastErr     string
	failSince   time.Time
	failures    int
	nextTry     time.Time
	self        bool // the URL answers with this database: skipped
	seen        bool // still listed by the flag or the cluster
}

type metrics struct {
	requests, bytes, rows, failures prometheus.Counter
}

// New makes a sharer over store.
func New(cfg Config, store Store) *Sharer {
	cfg.DiscoverEvery = cmp.Or(cfg.DiscoverEvery, 10*time.Second)
	cfg.Interval = cmp.Or(cfg.Interval, time.Second)
	cfg.RequestTimeout = cmp.Or(cfg.RequestTimeout, 10*time.Second)
	cfg.HandoverTimeout = cmp.Or(cfg.HandoverTimeout, 5*time.Second)
	cfg.PageSize = cmp.Or(cfg.PageSize, 500)
	cfg.MaxBody = cmp.Or(cfg.MaxBody, DefaultMaxBody)
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Sharer{cfg: cfg, store: store, peers: map[string]*peer{}, adverts: map[string]string{},
		own: map[string]bool{cfg.Identity: true},
		metrics: metrics{
			requests: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "kubegcd", Subsystem: "audit_peers",
				Name: "requests_total", Help: "Reads of the peers' audit rows, answered or not."}),
			bytes: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "kubegcd", Subsystem: "audit_peers",
				Name: "received_bytes_total", Help: "Bytes of the peers' answers read."}),
			rows: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "kubegcd", Subsystem: "audit_peers",
				Name: "merged_rows_total", Help: "Audit rows merged from peers that were new here."}),
			failures: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "kubegcd", Subsystem: "audit_peers",
				Name: "failures_total", Help: "Reads of a peer that failed or were refused."}),
		}}
	if cfg.Registerer != nil {
		for _, c := range []prometheus.Collector{s.metrics.requests, s.metrics.bytes, s.metrics.rows,
			s.metrics.failures} {
			cfg.Registerer.MustRegister(c)
		}
	}
	for _, u := range cfg.Static {
		s.peers[u] = &peer{url: u, source: "flag", seen: true}
	}
	return s
}

// Start records this instance as a writer of its database and learns
// which identities wrote into it before: their rows come from here,
// never from a peer.
func (s *Sharer) Start(ctx context.Context) error {
	if err := s.store.RecordWriter(ctx, s.cfg.Identity); err != nil {
		return fmt.Errorf("audit peers: %w", err)
	}
	id, err := s.store.StoreID(ctx)
	if err != nil {
		return fmt.Errorf("audit peers: %w", err)
	}
	writers, err := s.store.Writers(ctx)
	if err != nil {
		return fmt.Errorf("audit peers: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ownStore = id
	for _, w := range writers {
		s.own[w] = true
	}
	return nil
}

// refuse says whether a row of instance must not come from a peer: this
// database wrote it.
func (s *Sharer) refuse(instance string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.own[instance]
}

// AdvertiseURL is the URL this instance advertises; "" when none.
func (s *Sharer) AdvertiseURL() string { return s.cfg.AdvertiseURL }

// Run reads the peers until ctx ends: each every Interval, a failing one
// after its back-off.
func (s *Sharer) Run(ctx context.Context) error {
	tick := time.NewTicker(s.cfg.Interval)
	defer tick.Stop()
	var discovered time.Time
	for {
		if s.cfg.Discover != nil && s.cfg.Now().Sub(discovered) >= s.cfg.DiscoverEvery {
			discovered = s.cfg.Now()
			s.discover(ctx)
		}
		for _, p := range s.due() {
			s.pullPeer(ctx, p, s.cfg.RequestTimeout)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// discover reads the advertisements and makes the peers they name.
func (s *Sharer) discover(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	ads, err := s.cfg.Discover(ctx)
	if err != nil {
		s.cfg.Logger.Warn("audit peers: cannot read the instances' advertisements", "err", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	listed := map[string]bool{}
	for _, a := range ads {
		if a.URL == "" {
			continue
		}
		s.adverts[a.Identity] = a.URL
		if a.Identity == s.cfg.Identity || a.URL == s.cfg.AdvertiseURL {
			continue
		}
		listed[a.URL] = true
		p := s.peers[a.URL]
		if p == nil {
			p = &peer{url: a.URL, source: "cluster"}
			s.peers[a.URL] = p
			s.cfg.Logger.Info("audit peers: reading a peer's audit rows", "url", a.URL, "peer", a.Identity)
		}
		p.seen = true
		if p.instance == "" {
			p.instance = a.Identity
		}
	}
	// A peer no longer advertised (its instance stopped) is no longer
	// read; its rows come across from its database's next run.
	for u, p := range s.peers {
		if p.source == "cluster" && !listed[u] {
			delete(s.peers, u)
		}
	}
}

// due returns the URLs of the peers to read now.
func (s *Sharer) due() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Now()
	var out []string
	for u, p := range s.peers {
		if !p.self && !now.Before(p.nextTry) {
			out = append(out, u)
		}
	}
	slices.Sort(out)
	return out
}

// errSelf: the URL answers with this instance's own database.
var errSelf = errors.New("the URL answers with this instance's own database")

// maxPagesPerPass bounds the pages read of one peer in one pass, so that
// a peer with a long history does not hold the others back.
const maxPagesPerPass = 20

// pullPeer reads the peer at u until it is caught up (or maxPagesPerPass),
// each request within timeout, and notes the outcome.
func (s *Sharer) pullPeer(ctx context.Context, u string, timeout time.Duration) (caughtUp bool, err error) {
	s.pulling.Lock()
	defer s.pulling.Unlock()
	for range maxPagesPerPass {
		var p *page
		p, caughtUp, err = s.pullOnce(ctx, u, timeout)
		s.note(u, p, err)
		if err != nil || caughtUp {
			return caughtUp, err
		}
	}
	return false, nil
}

// pullOnce reads one page of the peer at u and merges it. caughtUp says
// that the page reached the peer's newest row.
func (s *Sharer) pullOnce(ctx context.Context, u string, timeout time.Duration) (*page, bool, error) {
	s.mu.Lock()
	known := ""
	if p := s.peers[u]; p != nil {
		known = p.store
	}
	ownStore := s.ownStore
	s.mu.Unlock()
	after := int64(0)
	if known != "" {
		var err error
		if after, err = s.store.Cursor(ctx, known); err != nil {
			return nil, false, err
		}
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	p, err := s.fetch(rctx, u, after)
	cancel()
	if err != nil {
		return nil, false, err
	}
	if p.Store == ownStore {
		return p, false, errSelf
	}
	if p.Store != known {
		// The URL serves another database than last time (or the first
		// time): its cursor is that database's.
		s.setStore(u, p.Store)
		after2, err := s.store.Cursor(ctx, p.Store)
		if err != nil {
			return nil, false, err
		}
		if after2 != after {
			// Read again from that database's cursor, at the next page.
			return nil, false, nil
		}
	}
	if p.Head < after {
		// The peer's history is shorter than what was read of it: its
		// file was replaced by an older copy. Read it again from the
		// start; rows held stay as they are.
		s.cfg.Logger.Warn("audit peers: a peer's history went back; reading it again from its start",
			"url", u, "store", p.Store, "cursor", after, "head", p.Head)
		if err := s.store.ResetCursor(ctx, p.Store); err != nil {
			return nil, false, err
		}
		return p, false, nil
	}
	added, err := s.store.Merge(ctx, db.PeerCursor{Store: p.Store, After: p.last(after), URL: u, Instance: p.Instance},
		p.rows, s.refuse)
	if err != nil {
		return nil, false, err
	}
	s.metrics.rows.Add(float64(added))
	caughtUp := p.last(after) >= p.Head
	if caughtUp && len(p.Writers) > 0 {
		// Every row of the instances that wrote into the peer's database
		// is here now: their gaps are closed.
		cleared, err := s.store.ClearGaps(ctx, p.Writers)
		if err != nil {
			return nil, false, err
		}
		for _, in := range cleared {
			s.cfg.Logger.Info("audit peers: the gap in an instance's history is closed", "instance", in,
				"url", u)
		}
	}
	return p, caughtUp, nil
}

// setStore notes the database the peer at u answers with.
func (s *Sharer) setStore(u, store string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.peers[u]; p != nil {
		p.store = store
	} else {
		// A handover's read of a URL that is no peer (yet).
		s.peers[u] = &peer{url: u, source: "cluster", store: store}
	}
}

// note records the outcome of a read for /status.
func (s *Sharer) note(u string, p *page, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.peers[u]
	if st == nil {
		return
	}
	now := s.cfg.Now()
	if errors.Is(err, errSelf) {
		st.self = true
		st.lastErr = errSelf.Error()
		return
	}
	if err != nil {
		s.metrics.failures.Inc()
		if st.failures == 0 {
			st.failSince = now
			s.cfg.Logger.Warn("audit peers: cannot read a peer's audit rows", "url", u, "err", err)
		}
		st.failures++
		st.lastErr = truncate(err.Error(), 500)
		st.nextTry = now.Add(backoff(s.cfg.Interval, st.failures))
		return
	}
	if st.failures > 0 {
		s.cfg.Logger.Info("audit peers: reading a peer again", "url", u)
	}
	st.failures, st.lastErr, st.failSince, st.nextTry = 0, "", time.Time{}, time.Time{}
	st.lastPull = now
	if p == nil {
		return
	}
	if p.Instance != "" {
		st.instance = p.Instance
	}
	last := p.last(0)
	st.behindRows, st.behindSecs = 0, 0
	if len(p.Items) > 0 && p.Head > last {
		st.behindRows = p.Head - last
		if p.HeadTime != nil {
			st.behindSecs = max(0, p.HeadTime.Sub(p.Items[len(p.Items)-1].Time).Seconds())
		}
	}
}

// Peers is each peer as /status shows it, by URL.
func (s *Sharer) Peers() []api.AuditPeerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]api.AuditPeerStatus, 0, len(s.peers))
	for _, p := range s.peers {
		st := api.AuditPeerStatus{URL: p.url, Source: p.source, Instance: p.instance, Store: p.store,
			BehindRows: p.behindRows, BehindSeconds: p.behindSecs, LastError: p.lastErr}
		for _, t := range []struct {
			v   time.Time
			out **time.Time
		}{{p.lastPull, &st.LastPull}, {p.failSince, &st.FailingSince}, {p.nextTry, &st.NextTry}} {
			if !t.v.IsZero() {
				v := t.v.UTC()
				*t.out = &v
			}
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b api.AuditPeerStatus) int { return strings.Compare(a.URL, b.URL) })
	return out
}

// token reads the bearer token to send; "" when none.
func (s *Sharer) token() (string, error) {
	if s.cfg.TokenFile == "" {
		return "", nil
	}
	b, err := os.ReadFile(s.cfg.TokenFile)
	if err != nil {
		return "", fmt.Errorf("--audit-peer-token-file: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	tok, _, _ := strings.Cut(strings.TrimSpace(line), ",")
	return strings.TrimSpace(tok), nil
}

// Handover reads the rows of old, the Lease's previous holder, before this
// instance's first write as leader, within HandoverTimeout. When old does
// not answer in time, or advertises no URL, it records that old's rows
// before now may be missing. It returns nil either way: a leader must not
// be kept from its work by a dead predecessor.
func (s *Sharer) Handover(ctx context.Context, old string) {
	if old == "" || s.refuse(old) {
		return
	}
	start := s.cfg.Now()
	hctx, cancel := context.WithTimeout(ctx, s.cfg.HandoverTimeout)
	defer cancel()
	if s.cfg.Discover != nil {
		s.discover(hctx)
	}
	s.mu.Lock()
	u := s.adverts[old]
	if u == "" {
		for _, p := range s.peers {
			if p.instance == old {
				u = p.url
			}
		}
	}
	s.mu.Unlock()
	why := "it advertises no URL"
	if u != "" {
		caughtUp, err := s.pullUntilCaughtUp(hctx, u)
		if caughtUp {
			s.cfg.Logger.Info("audit peers: read the previous leader's rows before the first write",
				"previous", old, "url", u, "took", s.cfg.Now().Sub(start).Round(time.Millisecond))
			return
		}
		why = "it did not answer within --audit-handover-timeout"
		if err != nil {
			why += ": " + err.Error()
		}
	}
	since, err := s.store.NewestOf(ctx, old)
	if err != nil {
		s.cfg.Logger.Warn("audit peers: cannot read the previous leader's newest row", "err", err)
	}
	g := db.AuditGap{Instance: old, Since: since, Before: start, RecordedBy: s.cfg.Identity}
	if err := s.store.RecordGap(ctx, g); err != nil {
		s.cfg.Logger.Error("audit peers: cannot record the gap in the previous leader's history",
			"previous", old, "err", err)
		return
	}
	s.cfg.Logger.Warn("audit peers: the previous leader's history may be incomplete until its rows arrive",
		"previous", old, "url", u, "reason", why)
}

// pullUntilCaughtUp reads the peer at u until it is caught up or ctx ends.
func (s *Sharer) pullUntilCaughtUp(ctx context.Context, u string) (bool, error) {
	for {
		caughtUp, err := s.pullPeer(ctx, u, s.cfg.RequestTimeout)
		if caughtUp || err != nil || ctx.Err() != nil {
			return caughtUp, cmp.Or(err, ctx.Err())
		}
	}
}
