package auditpeers

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/db/dbtest"
	kubehttp "github.com/kubegcd/kubegcd/internal/http"
)

// leaderOf names the serving instance in /audit/replicate's answers.
type leaderOf string

func (l leaderOf) Status(context.Context) api.LeaderStatus {
	return api.LeaderStatus{Identity: string(l)}
}

// peerServer serves d's API as an instance named identity does, with
// tokens when set.
func peerServer(t testing.TB, d *db.DB, identity string, tokens *kubehttp.Tokens) *httptest.Server {
	t.Helper()
	h, err := kubehttp.NewHandler(kubehttp.Options{DB: d.Reads(), AuditReplicas: d.Decisions(),
		Leader: leaderOf(identity), Tokens: tokens})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// write appends n rows of instance to d.
func write(t testing.TB, d *db.DB, instance string, n int) {
	t.Helper()
	ctx := context.Background()
	if err := d.AuditPeers().RecordWriter(ctx, instance); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		e := &db.AuditEntry{Instance: instance, Controller: "ownergc", Rule: "BR-21-01", Action: "delete",
			Outcome: api.OutcomeApplied, Reason: "owner gone", Facts: []byte(`{"refs":[]}`),
			Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: fmt.Sprint("cm-", i),
				UID: fmt.Sprintf("%s-%d", instance, i)}}
		if err := d.Ledger().InsertAudit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
}

// rowsOf counts d's rows, by instance.
func rowsOf(t *testing.T, d *db.DB) map[string]int {
	t.Helper()
	rows, _, err := d.Decisions().ReplicaPage(context.Background(), 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, r := range rows {
		out[r.Instance]++
	}
	return out
}

func newSharer(t *testing.T, d *db.DB, identity string, cfg Config) *Sharer {
	t.Helper()
	cfg.Identity = identity
	s := New(cfg, d.AuditPeers())
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// A peer's rows come across in pages, once however often they are read,
// with the peer's status caught up.
func TestPullMergesOnce(t *testing.T) {
	ctx := context.Background()
	peerDB, here := dbtest.Open(t), dbtest.Open(t)
	write(t, peerDB, "peer_1", 1200)
	write(t, here, "self_1", 2)
	srv := peerServer(t, peerDB, "peer_1", nil)
	s := newSharer(t, here, "self_1", Config{Static: []string{srv.URL}, PageSize: 500})
	for range 2 {
		if caughtUp, err := s.pullPeer(ctx, srv.URL, time.Second); err != nil || !caughtUp {
			t.Fatalf("pull: caught up %v, %v", caughtUp, err)
		}
	}
	if got := rowsOf(t, here); got["peer_1"] != 1200 || got["self_1"] != 2 {
		t.Errorf("rows by instance: %v, want peer_1 1200 and self_1 2", got)
	}
	st := s.Peers()
	if len(st) != 1 || st[0].LastPull == nil || st[0].BehindRows != 0 || st[0].LastError != "" ||
		st[0].Instance != "peer_1" {
		t.Errorf("peer status: %+v", st)
	}
	// The copy serves the merged rows too, so a third instance gets them
	// from it; and the peer gets none of its own back.
	third := dbtest.Open(t)
	hereSrv := peerServer(t, here, "self_1", nil)
	s3 := newSharer(t, third, "third_1", Config{Static: []string{hereSrv.URL}})
	if _, err := s3.pullPeer(ctx, hereSrv.URL, time.Second); err != nil {
		t.Fatal(err)
	}
	if got := rowsOf(t, third); got["peer_1"] != 1200 || got["self_1"] != 2 {
		t.Errorf("third copy's rows: %v", got)
	}
	back := newSharer(t, peerDB, "peer_1", Config{Static: []string{hereSrv.URL}})
	if _, err := back.pullPeer(ctx, hereSrv.URL, time.Second); err != nil {
		t.Fatal(err)
	}
	if got := rowsOf(t, peerDB); got["peer_1"] != 1200 || got["self_1"] != 2 {
		t.Errorf("the peer's rows after reading its copy back: %v", got)
	}
}

// A peer that serves rows under this instance's own identity, or under an
// identity that wrote into this database before, has them refused: this
// instance's rows come from here, and are never replaced.
func TestOwnRowsNeverFromPeer(t *testing.T) {
	ctx := context.Background()
	liar, here := dbtest.Open(t), dbtest.Open(t)
	write(t, here, "self_0", 1) // an earlier run on this file
	write(t, here, "self_1", 1)
	write(t, liar, "self_1", 5)
	write(t, liar, "self_0", 5)
	write(t, liar, "liar_1", 1)
	srv := peerServer(t, liar, "liar_1", nil)
	s := newSharer(t, here, "self_1", Config{Static: []string{srv.URL}})
	if _, err := s.pullPeer(ctx, srv.URL, time.Second); err != nil {
		t.Fatal(err)
	}
	got := rowsOf(t, here)
	if got["self_1"] != 1 || got["self_0"] != 1 || got["liar_1"] != 1 {
		t.Errorf("rows by instance: %v, want self_0 1, self_1 1 (its own), liar_1 1", got)
	}
	rows, _, _ := here.Decisions().ReplicaPage(ctx, 0, 10)
	if rows[1].Instance != "self_1" || rows[1].Target.UID != "self_1-0" || rows[1].OriginID != rows[1].ID {
		t.Errorf("own row changed: %+v", rows[1])
	}
}

// A peer that answers garbage, too much, an invalid row, or nothing in
// time is cut off: the read fails with an error /status shows, the next
// read waits for a back-off, and nothing is written.
func TestBadPeerIsCutOff(t *testing.T) {
	valid := `{"store":"0123456789abcdef0123456789abcdef","instance":"bad_1","writers":[],"head":2,"items":[` +
		`{"id":1,"originId":1,"time":"2026-01-01T00:00:00Z","instance":"bad_1","controller":"ownergc","rule":"r",` +
		`"action":"delete","target":{"apiVersion":"v1","kind":"ConfigMap","namespace":"","name":"a","uid":"u"},` +
		`"reason":"","dryRun":false,"outcome":"applied","error":""}`
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	for _, tc := range []struct {
		name, want string
		serve      func(w http.ResponseWriter, r *http.Request)
	}{
		{"garbage", "not an audit replica page", func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, `{"items": [1, 2`)
		}},
		{"not JSON", "not an audit replica page", func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, "<html>hello</html>")
		}},
		{"oversized", "larger than 4096 bytes", func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, `{"items":[],"store":"`+strings.Repeat("a", 10000)+`"}`)
		}},
		{"hangs", "context deadline exceeded", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-hang:
			case <-r.Context().Done():
			}
		}},
		{"stalls mid-body", "context deadline exceeded", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, valid)
			w.(http.Flusher).Flush()
			select {
			case <-hang:
			case <-r.Context().Done():
			}
		}},
		{"a bad row after a good one", "items[1]: originId 0", func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, valid+`,{"id":2,"originId":0,"time":"2026-01-01T00:00:00Z","instance":"bad_1",`+
				`"controller":"ownergc","action":"delete","outcome":"applied"}]}`)
		}},
		{"rows out of order", "not after 1", func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, strings.Replace(valid, `"head":2`, `"head":3`, 1)+`,`+
				strings.SplitN(valid, `"items":[`, 2)[1]+`]}`)
		}},
		{"facts not an object", "facts: not a JSON object", func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, strings.Replace(valid, `"reason":""`, `"facts":"x","reason":""`, 1)+`]}`)
		}},
		{"a server error", "answered 500", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, `{"error":"boom"}`, http.StatusInternalServerError)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			here := dbtest.Open(t)
			srv := httptest.NewServer(http.HandlerFunc(tc.serve))
			t.Cleanup(srv.Close)
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			s := newSharer(t, here, "self_1", Config{Static: []string{srv.URL}, MaxBody: 4096,
				Now: func() time.Time { return now }})
			_, err := s.pullPeer(ctx, srv.URL, 200*time.Millisecond)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("pull: %v, want an error with %q", err, tc.want)
			}
			st := s.Peers()[0]
			if !strings.Contains(st.LastError, tc.want) || st.FailingSince == nil || st.NextTry == nil ||
				!st.NextTry.After(now) {
				t.Errorf("status: %+v, want the error and a back-off", st)
			}
			if len(s.due()) != 0 {
				t.Errorf("the peer is read again before its back-off")
			}
			if got := rowsOf(t, here); len(got) != 0 {
				t.Errorf("rows written: %v", got)
			}
			if cs, err := here.AuditPeers().Cursors(ctx); err != nil || len(cs) != 0 {
				t.Errorf("cursors: %v, %v; want none", cs, err)
			}
		})
	}
}

// A peer without the API's credentials gets a 401 and no row; with the
// token of --auth-token-file it reads them.
func TestPeerWithoutCredentials(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tokensPath, tokenPath := filepath.Join(dir, "tokens"), filepath.Join(dir, "token")
	if err := os.WriteFile(tokensPath, []byte("s3cret,peers\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens, err := kubehttp.LoadTokens(tokensPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	peerDB := dbtest.Open(t)
	write(t, peerDB, "peer_1", 3)
	srv := peerServer(t, peerDB, "peer_1", tokens)
	for _, tc := range []struct {
		name, token string
		want        int
	}{{"no token", "", 0}, {"a wrong token", "guess", 0}, {"the token", "s3cret", 3}} {
		t.Run(tc.name, func(t *testing.T) {
			here := dbtest.Open(t)
			cfg := Config{Static: []string{srv.URL}}
			if tc.token != "" {
				cfg.TokenFile = tokenPath
				if err := os.WriteFile(tokenPath, []byte(tc.token+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			s := newSharer(t, here, "self_1", cfg)
			_, err := s.pullPeer(ctx, srv.URL, time.Second)
			if got := rowsOf(t, here)["peer_1"]; got != tc.want {
				t.Errorf("rows merged: %d, want %d (err %v)", got, tc.want, err)
			}
			if tc.want == 0 && (err == nil || !strings.Contains(err.Error(), "401")) {
				t.Errorf("pull: %v, want a 401", err)
			}
		})
	}
}

// A new leader whose predecessor does not answer records a gap naming it;
// the gap closes once the predecessor's database, served by its next run
// under a new identity, has been read to its end. A predecessor that
// answers leaves no gap.
func TestHandoverGap(t *testing.T) {
	ctx := context.Background()
	oldDB, here := dbtest.Open(t), dbtest.Open(t)
	write(t, oldDB, "old_1", 10)
	srv := peerServer(t, oldDB, "old_1", nil)
	s := newSharer(t, here, "new_1", Config{HandoverTimeout: time.Second})
	// Read part of the old leader's rows while it lived.
	s.cfg.PageSize = 4
	s.mu.Lock()
	s.peers[srv.URL] = &peer{url: srv.URL, source: "cluster", instance: "old_1"}
	s.adverts["old_1"] = srv.URL
	s.mu.Unlock()
	if _, _, err := s.pullOnce(ctx, srv.URL, time.Second); err != nil {
		t.Fatal(err)
	}
	write(t, oldDB, "old_1", 5)
	srv.Close() // SIGKILL

	s.Handover(ctx, "old_1")
	gaps, err := here.Decisions().AuditGaps(ctx)
	if err != nil || len(gaps) != 1 || gaps[0].Instance != "old_1" || gaps[0].RecordedBy != "new_1" ||
		gaps[0].Since == nil {
		t.Fatalf("gaps: %+v, %v; want one naming old_1 since its newest row held", gaps, err)
	}
	if msg := kubehttp.AuditGapOf(gaps[0]).Message; !strings.Contains(msg, "old_1") {
		t.Errorf("gap message %q names no instance", msg)
	}

	// The old instance's next run: the same database, a new identity, a new URL.
	restarted := peerServer(t, oldDB, "old_2", nil)
	write(t, oldDB, "old_2", 1)
	s.mu.Lock()
	s.peers[restarted.URL] = &peer{url: restarted.URL, source: "cluster"}
	s.mu.Unlock()
	if _, err := s.pullUntilCaughtUp(ctx, restarted.URL); err != nil {
		t.Fatal(err)
	}
	if got := rowsOf(t, here); got["old_1"] != 15 || got["old_2"] != 1 {
		t.Errorf("rows: %v, want old_1 15 and old_2 1", got)
	}
	if gaps, _ := here.Decisions().AuditGaps(ctx); len(gaps) != 0 {
		t.Errorf("gaps once the old database was read to its end: %+v", gaps)
	}

	// A predecessor that answers: its rows, and no gap.
	s.Handover(ctx, "old_2")
	if gaps, _ := here.Decisions().AuditGaps(ctx); len(gaps) != 0 {
		t.Errorf("gaps after a handover that read the rows: %+v", gaps)
	}
}

func writeB(b *testing.B, d *db.DB, n int)                { write(b, d, "peer_1", n) }
func peerServerB(b *testing.B, d *db.DB) *httptest.Server { return peerServer(b, d, "peer_1", nil) }

// counterValue reads a counter.
func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	_ = c.Write(&m)
	return m.GetCounter().GetValue()
}
