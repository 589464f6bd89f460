package http

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

// recordedLog is a slog.Handler that keeps every message, for a test to
// wait for one.
type recordedLog struct {
	mu      sync.Mutex
	msgs    []string
	changed chan struct{} // closed, and replaced, at each record
}

func newRecordedLog() *recordedLog { return &recordedLog{changed: make(chan struct{})} }

func (l *recordedLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *recordedLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *recordedLog) WithGroup(string) slog.Handler            { return l }

func (l *recordedLog) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	close(l.changed)
	l.changed = make(chan struct{})
	return nil
}

// waitFor waits until n messages contain sub, failing the test after
// timeout.
func (l *recordedLog) waitFor(t *testing.T, sub string, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		got, changed := 0, l.changed
		for _, m := range l.msgs {
			if strings.Contains(m, sub) {
				got++
			}
		}
		l.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("%d log messages with %q within %s, want %d", got, sub, timeout, n)
		}
	}
}

// stallFixture serves, as the daemon does, a database opened for the API
// (read-only, four connections, mapped) that holds owners ConfigMaps and
// dependents ConfigMaps naming every owner: about 140 bytes of JSON an
// edge. The server's send buffers are small, as its slow clients' receive
// buffers are: a graph of a megabyte then fills them, where the kernel
// would take megabytes (test/e2e streams such a graph).
func stallFixture(t *testing.T, stall time.Duration, owners, dependents int) (*httptest.Server, *recordedLog) {
	t.Helper()
	return stallFixtureWith(t, stallOptions{stall: stall, owners: owners, dependents: dependents, inflight: 16})
}

// stallOptions shape a stallFixture.
type stallOptions struct {
	stall              time.Duration
	owners, dependents int
	inflight           int
	// ownersMissing leaves the owners out of the mirror: every reference
	// dangles, a lint finding each.
	ownersMissing bool
}

func stallFixtureWith(t *testing.T, o stallOptions) (*httptest.Server, *recordedLog) {
	t.Helper()
	owners, dependents := o.owners, o.dependents
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "kubegcd.db")
	store, err := db.Open(ctx, path, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	rid, err := store.Mirror().EnsureResource(ctx, db.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	// Owners sort first by UID, so that ?limit= keeps them and a share of
	// the dependents.
	uid := func(kind, i int) string { return fmt.Sprintf("%08d-0000-4000-8000-%012d", kind, i) }
	var refs []api.OwnerRef
	var batch []db.Event
	flush := func() {
		if _, err := store.Mirror().ApplyEvents(ctx, batch); err != nil {
			t.Fatal(err)
		}
		batch = batch[:0]
	}
	add := func(o *db.Object) {
		if batch = append(batch, db.Event{ResourceID: rid, Object: o}); len(batch) == 500 {
			flush()
		}
	}
	for i := range owners {
		name := fmt.Sprintf("owner-%d", i)
		if !o.ownersMissing {
			add(&db.Object{UID: uid(0, i), APIVersion: "v1", Kind: "ConfigMap", Namespace: "stall", Name: name, ResourceVersion: "1"})
		}
		refs = append(refs, api.OwnerRef{APIVersion: "v1", Kind: "ConfigMap", Name: name, UID: uid(0, i)})
	}
	for i := range dependents {
		add(&db.Object{UID: uid(1, i), APIVersion: "v1", Kind: "ConfigMap", Namespace: "stall", Name: fmt.Sprintf("dependent-%d", i),
			ResourceVersion: "1", OwnerReferences: refs})
	}
	flush()

	api, err := db.Open(ctx, path, db.Options{ReadOnly: true, ReadConns: 4, MapReads: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	log := newRecordedLog()
	h, err := NewHandler(Options{DB: api.Reads(), Ingest: fakeIngest{}, Registry: prometheus.NewRegistry(), MaxInflight: o.inflight,
		GraphStreamStall: o.stall, Logger: slog.New(log)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	lc := net.ListenConfig{Control: smallBuffer(syscall.SO_SNDBUF)}
	if srv.Listener, err = lc.Listen(ctx, "tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, log
}

// smallBuffer sets a socket's buffer opt (SO_SNDBUF, SO_RCVBUF) to 4 KB; a
// listener's accepted sockets inherit it.
func smallBuffer(opt int) func(_, _ string, c syscall.RawConn) error {
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, opt, 4096) }); err != nil {
			return err
		}
		return serr
	}
}

// stalledStream is a client that asked for an answer and reads nothing
// past the headers.
type stalledStream struct {
	conn net.Conn
	br   *bufio.Reader
	resp *http.Response
}

func startStalledStream(t *testing.T, addr, path string) *stalledStream {
	t.Helper()
	s, err := openStalledStream(addr, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.conn.Close() })
	return s
}

// openStalledStream asks for path on a connection with a 4 KB receive
// buffer, so that a client that reads nothing stops the server's writes
// soon, and reads the answer's head. The caller closes the connection.
func openStalledStream(addr, path string) (*stalledStream, error) {
	d := net.Dialer{Timeout: 5 * time.Second, Control: smallBuffer(syscall.SO_RCVBUF)}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	if err == nil {
		err = req.Write(conn)
	}
	br := bufio.NewReaderSize(conn, 512)
	var resp *http.Response
	if err == nil {
		_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err = http.ReadResponse(br, req)
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	return &stalledStream{conn: conn, br: br, resp: resp}, nil
}

// TestGraphStreamStalledClients: four clients that ask for a graph larger
// than the sockets' buffers and read nothing neither hold the connections
// the short endpoints read with (/status and /pending answer at once) nor
// their stream for longer than the stall bound: the server cuts them, and
// a new stream is served after.
func TestGraphStreamStalledClients(t *testing.T) {
	const stall = 2 * time.Second
	srv, log := stallFixture(t, stall, 20, 150) // 3,000 edges, about 420 KB
	addr := srv.Listener.Addr().String()

	var streams []*stalledStream
	refused := 0
	for range 4 {
		s := startStalledStream(t, addr, "/graph?limit=100000000")
		switch s.resp.StatusCode {
		case http.StatusOK:
			streams = append(streams, s)
		case http.StatusTooManyRequests:
			// More streams than the server serves at once: refused at
			// once, with a time to come back.
			refused++
			if s.resp.Header.Get("Retry-After") == "" {
				t.Errorf("stream refused with %s and no Retry-After", s.resp.Status)
			}
			s.conn.Close()
		default:
			t.Fatalf("GET /graph: %s", s.resp.Status)
		}
	}
	if len(streams) != DefaultMaxGraphStreams || refused != 4-DefaultMaxGraphStreams {
		t.Fatalf("%d streams served, %d refused; want %d and %d", len(streams), refused, DefaultMaxGraphStreams, 4-DefaultMaxGraphStreams)
	}

	client := &http.Client{Timeout: 10 * time.Second}
	for round := range 3 {
		for _, path := range []string{"/status", "/pending", "/objects/00000001-0000-4000-8000-000000000007"} {
			start := time.Now()
			resp, err := client.Get(srv.URL + path)
			took := time.Since(start)
			if err != nil {
				t.Fatalf("round %d: GET %s while %d streams stall: %v after %s", round, path, len(streams), err, took.Round(time.Millisecond))
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || took > time.Second {
				t.Fatalf("round %d: GET %s while %d streams stall: %s after %s, want 200 within 1s", round, path, len(streams),
					resp.Status, took.Round(time.Millisecond))
			}
		}
	}

	// Every stalled stream is cut within the bound (with room for a loaded
	// machine), and its connection closed: what was sent before comes,
	// then the end, never the whole graph.
	log.waitFor(t, "graph stream cut", len(streams), stall+5*time.Second)
	for i, s := range streams {
		_ = s.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		body, err := io.ReadAll(s.resp.Body)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("stream %d: still open %s after it was cut (%d bytes read)", i, 5*time.Second, len(body))
		}
		if err == nil && strings.HasSuffix(string(body), "]}\n") {
			t.Errorf("stream %d: the whole graph came (%d bytes) to a client that read nothing", i, len(body))
		}
	}

	// The slots and connections are free again: a client that reads gets
	// the whole graph.
	resp, err := client.Get(srv.URL + "/graph?limit=100000000")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var g db.Graph
	if err := json.NewDecoder(resp.Body).Decode(&g); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /graph after the cuts: %s, %v", resp.Status, err)
	}
	if len(g.Nodes) != 170 || len(g.Edges) != 3000 || g.Truncated {
		t.Errorf("GET /graph after the cuts: %d nodes, %d edges, truncated %v; want 170, 3000, false", len(g.Nodes), len(g.Edges), g.Truncated)
	}
}

// TestGraphStreamSlowReader: a client that reads slowly but steadily gets
// the whole graph, however much longer than the stall bound the stream
// lasts: the bound is on a stall, not on the stream.
func TestGraphStreamSlowReader(t *testing.T) {
	const stall = time.Second
	srv, log := stallFixture(t, stall, 20, 150)
	addr := srv.Listener.Addr().String()
	s := startStalledStream(t, addr, "/graph?limit=100000000")
	if s.resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /graph: %s", s.resp.Status)
	}
	start := time.Now()
	_ = s.conn.SetReadDeadline(time.Now().Add(time.Minute))
	// 8 KB every 50 ms: 160 KB/s, each of the server's 64 KB writes taken
	// in under half the bound, the whole stream in more than twice it.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var body strings.Builder
	buf := make([]byte, 8<<10)
	for {
		n, err := io.ReadFull(s.resp.Body, buf)
		body.Write(buf[:n])
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			t.Fatalf("after %d bytes: %v", body.Len(), err)
		}
		<-tick.C
	}
	took := time.Since(start)
	var g db.Graph
	if err := json.Unmarshal([]byte(body.String()), &g); err != nil {
		t.Fatalf("the stream, %d bytes in %s, is not whole: %v", body.Len(), took, err)
	}
	if len(g.Nodes) != 170 || len(g.Edges) != 3000 {
		t.Errorf("%d nodes, %d edges; want 170, 3000", len(g.Nodes), len(g.Edges))
	}
	if took < 2*stall {
		t.Errorf("the stream took %s, want more than twice the stall bound %s for the test to mean anything", took, stall)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	for _, m := range log.msgs {
		if strings.Contains(m, "graph stream cut") {
			t.Errorf("logged %q for a client that read", m)
		}
	}
}

func TestGraphStreamSlots(t *testing.T) {
	tests := []struct {
		name                    string
		maxStreams, maxInflight int
		want                    int
	}{
		{name: "defaults", maxInflight: 16, want: DefaultMaxGraphStreams},
		{name: "no in-flight bound", want: DefaultMaxGraphStreams},
		{name: "more streams asked", maxStreams: 5, maxInflight: 16, want: 5},
		{name: "half the in-flight slots at most", maxStreams: 5, maxInflight: 6, want: 3},
		{name: "one in-flight slot", maxInflight: 1, want: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := graphStreamSlots(tc.maxStreams, tc.maxInflight); got != tc.want {
				t.Errorf("graphStreamSlots(%d, %d) = %d, want %d", tc.maxStreams, tc.maxInflight, got, tc.want)
			}
		})
	}
}
