package http

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

// indentStream writes src to a jsonIndenter in pieces of the given sizes,
// one after the other, as an answer's encoding comes.
func indentStream(src []byte, sizes func() int) []byte {
	var out bytes.Buffer
	bw := bufio.NewWriterSize(&out, 16)
	d := &jsonIndenter{w: bw}
	for len(src) > 0 {
		n := min(max(1, sizes()), len(src))
		_, _ = d.Write(src[:n])
		src = src[n:]
	}
	_ = bw.Flush()
	return out.Bytes()
}

// TestJSONIndenterIsIndent: compact JSON written to a jsonIndenter, in
// pieces of any size, comes out as json.Indent makes it, whatever the
// strings hold (braces, commas, colons, quotes and backslashes in them).
func TestJSONIndenterIsIndent(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	str := randomJSONStrings(r)
	tricky := []string{"{", "}", "[", "]", ",", ":", `\"`, `\\`, `"`, " ", "\\u00e9"}
	var values []any
	for name, v := range goldenAnswers() {
		values = append(values, name, v)
	}
	for range 300 {
		g := &db.Graph{Nodes: []db.GraphNode{}, Edges: []db.GraphEdge{}, Truncated: r.IntN(2) == 0}
		for range r.IntN(4) {
			g.Nodes = append(g.Nodes, db.GraphNode{UID: str() + tricky[r.IntN(len(tricky))], Name: tricky[r.IntN(len(tricky))] + str()})
		}
		values = append(values, apiGraph(g), map[string]any{"a": []any{}, "b": map[string]any{}, "c": []any{[]any{}, 1.5, nil, true}})
	}
	for _, v := range values {
		compact, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := json.Indent(&want, compact, "", "  "); err != nil {
			t.Fatal(err)
		}
		for _, sizes := range []func() int{func() int { return 1 << 30 }, func() int { return 1 }, func() int { return r.IntN(7) }} {
			if got := indentStream(compact, sizes); !bytes.Equal(got, want.Bytes()) {
				t.Fatalf("indented:\n got %s\nwant %s", got, want.Bytes())
			}
		}
	}
}

// TestStreamedListsAreGoldens: the answers written one item at a time
// (/lint, /audit, /pending) are, compact and indented, the golden answers
// writeJSON writes whole.
func TestStreamedListsAreGoldens(t *testing.T) {
	s := &server{answers: newAnswerBounds(t.TempDir())}
	stream := func(name, ua string) []byte {
		answers := goldenAnswers() // streaming clears the items it wrote
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("User-Agent", ua)
		w := httptest.NewRecorder()
		a := s.streamAnswer(w, r, "application/json", "answer")
		switch v := answers[name].(type) {
		case api.LintReport:
			rest := v
			rest.Items = v.Items[:0:0]
			streamJSONList(a, rest, "items", v.Items, func(f *api.LintFinding) any { return f })
		case api.AuditList:
			rest := v
			rest.Items = v.Items[:0:0]
			streamJSONList(a, rest, "items", v.Items, func(e *api.AuditEntry) any { return e })
		case api.PendingList:
			rest := v
			rest.Items = v.Items[:0:0]
			streamJSONList(a, rest, "items", v.Items, func(p *api.Pending) any { return p })
		default:
			t.Fatalf("%s: %T is not a list this test streams", name, v)
		}
		if w.Header().Get("Content-Type") != "application/json" || w.Code != 200 {
			t.Errorf("%s: %d %q", name, w.Code, w.Header().Get("Content-Type"))
		}
		return w.Body.Bytes()
	}
	for _, name := range []string{"lint", "lint-empty", "audit", "audit-empty", "audit-null", "pending", "pending-empty"} {
		t.Run(name, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("testdata", "api", name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			got := append(stream(name, "Go-http-client/1.1"), stream(name, "curl/8.5.0")...)
			if !bytes.Equal(got, want) {
				t.Errorf("streamed:\n got %s\nwant %s", got, want)
			}
		})
	}
}

// TestLargeAnswersStalledClients: clients that ask for large answers read
// whole from the database (a namespace's graph, lint findings) and read
// nothing hold one in-flight slot each, the server's slots being shared:
// twice as many as the slots get a 429 beyond them, health checks pass,
// and each held answer is cut after the stall bound, its slot then free.
func TestLargeAnswersStalledClients(t *testing.T) {
	const stall, slots = 3 * time.Second, 2
	// 3,000 dangling references: a graph of about 420 KB, lint findings
	// of about 1.5 MB.
	srv, log := stallFixtureWith(t, stallOptions{stall: stall, owners: 20, dependents: 150, inflight: slots, ownersMissing: true})
	addr := srv.Listener.Addr().String()
	paths := []string{"/graph?namespace=stall&limit=100000", "/lint?namespace=stall&limit=100000"}

	// All at once: the first two take the slots, before either answer is
	// read, let alone cut.
	type opened struct {
		s   *stalledStream
		err error
	}
	streams := make(chan opened, 2*slots)
	for i := range 2 * slots {
		go func() {
			s, err := openStalledStream(addr, paths[i%2])
			streams <- opened{s, err}
		}()
	}
	var held []*stalledStream
	refused := 0
	for range 2 * slots {
		o := <-streams
		if o.err != nil {
			t.Fatal(o.err)
		}
		s := o.s
		t.Cleanup(func() { s.conn.Close() })
		switch s.resp.StatusCode {
		case http.StatusOK:
			held = append(held, s)
		case http.StatusTooManyRequests:
			refused++
			s.conn.Close()
		default:
			t.Fatalf("%s", s.resp.Status)
		}
	}
	if len(held) != slots || refused != slots {
		t.Fatalf("%d answers held, %d refused; want %d and %d", len(held), refused, slots, slots)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	if resp, err := client.Get(srv.URL + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("GET /healthz beside the held answers: %v, %v", resp, err)
	} else {
		resp.Body.Close()
	}

	log.waitFor(t, "answer cut: the client took no data", len(held), stall+5*time.Second)
	for i, s := range held {
		_ = s.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		body, err := io.ReadAll(s.resp.Body)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("answer %d: still open 5s after it was cut (%d bytes read)", i, len(body))
		}
		if err == nil && json.Valid(body) {
			t.Errorf("answer %d: the whole answer (%d bytes) came to a client that read nothing", i, len(body))
		}
	}

	// The slots are free again, and a client that reads gets it all.
	for _, path := range paths {
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Items []json.RawMessage `json:"items"`
			Edges []json.RawMessage `json:"edges"`
		}
		err = json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || len(v.Items)+len(v.Edges) != 3000 {
			t.Errorf("GET %s after the cuts: %s, %v, %d items and %d edges; want 3000 of one", path, resp.Status, err,
				len(v.Items), len(v.Edges))
		}
	}
}

// TestSpool: an answer of up to answerChunk bytes stays in memory; a
// larger one goes to a file of the spool's directory that no name holds,
// whose bytes count against spoolBudget until the answer is sent.
func TestSpool(t *testing.T) {
	dir := t.TempDir()
	b := newAnswerBounds(dir)
	small := b.spool()
	if _, err := small.Write(bytes.Repeat([]byte("s"), answerChunk)); err != nil {
		t.Fatal(err)
	}
	if small.f != nil {
		t.Errorf("an answer of %d bytes went to a file", answerChunk)
	}
	large := b.spool()
	want := bytes.Repeat([]byte("0123456789"), 3*answerChunk/10)
	for chunk := range slices.Chunk(want, 1000) {
		if _, err := large.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if large.f == nil || b.spooled.Load() != int64(len(want)) {
		t.Errorf("an answer of %d bytes: file %v, %d bytes counted", len(want), large.f != nil, b.spooled.Load())
	}
	if names, err := os.ReadDir(dir); err != nil || len(names) != 0 {
		t.Errorf("the spool's directory holds %v, %v; want no name", names, err)
	}
	got, err := io.ReadAll(large.reader())
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("read back %d bytes, %v; want the %d written", len(got), err, len(want))
	}
	large.close()
	small.close()
	if n := b.spooled.Load(); n != 0 {
		t.Errorf("%d bytes counted once every spool is closed", n)
	}
}

// TestSpoolBudget: a large answer that would take the spool past its
// budget is refused with a 429 and Retry-After, before a byte of it is
// sent; a small one is served.
func TestSpoolBudget(t *testing.T) {
	s := &server{Options: Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
		answers: newAnswerBounds(t.TempDir())}
	s.answers.spooled.Store(spoolBudget - answerChunk)
	serve := func(items []string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		a := s.streamAnswer(w, httptest.NewRequest("GET", "/", nil), "application/json", "answer")
		streamJSONList(a, api.AuditList{Items: []api.AuditEntry{}}, "items", items, func(s *string) any { return s })
		return w
	}
	w := serve(slices.Repeat([]string{strings.Repeat("x", 1000)}, 3*answerChunk/1000))
	var e errorJSON
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" ||
		json.Unmarshal(w.Body.Bytes(), &e) != nil || !strings.Contains(e.Error, "retry") {
		t.Errorf("past the budget: %d, Retry-After %q, %s; want a 429 JSON error with Retry-After",
			w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	if n := s.answers.spooled.Load(); n != spoolBudget-answerChunk {
		t.Errorf("%d bytes counted after the refusal, want the %d of before", n, spoolBudget-answerChunk)
	}
	if w := serve([]string{"a", "b"}); w.Code != http.StatusOK || w.Body.String() != `{"items":["a","b"]}`+"\n" {
		t.Errorf("a small answer beside the full budget: %d %s", w.Code, w.Body)
	}
}
