package auditpeers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

// Bounds of what a peer may answer. A page of 1,000 rows of ordinary size
// is well under a megabyte; a peer that sends more is cut off.
const (
	// DefaultMaxBody bounds a page's body, in bytes.
	DefaultMaxBody = 8 << 20
	// maxField bounds a row's short fields (instance, controller, rule,
	// action, outcome, kind, apiVersion, namespace, name, uid), in bytes.
	maxField = 512
	// maxText bounds a row's reason and error, in bytes.
	maxText = 16 << 10
	// maxFacts bounds a row's facts, in bytes.
	maxFacts = 256 << 10
)

// storePattern is a database id as migration 0025 makes it.
var storePattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// page is one page a peer answered, checked.
type page struct {
	api.AuditReplicaPage
	rows []db.ReplicaRow
}

// fetch reads the page after cursor from the peer at base. It refuses an
// answer that is not a 200, is longer than maxBody, is not the JSON of an
// AuditReplicaPage, or breaks one of its promises (see check). The request
// ends with ctx.
func (s *Sharer) fetch(ctx context.Context, base string, after int64) (*page, error) {
	u, err := url.Parse(strings.TrimSuffix(base, "/") + "/audit/replicate")
	if err != nil {
		return nil, fmt.Errorf("peer URL: %w", err)
	}
	q := u.Query()
	q.Set("after", strconv.FormatInt(after, 10))
	q.Set("limit", strconv.Itoa(s.cfg.PageSize))
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if tok, err := s.token(); err != nil {
		return nil, err
	} else if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	s.metrics.requests.Inc()
	body, err := io.ReadAll(io.LimitReader(resp.Body, s.cfg.MaxBody+1))
	s.metrics.bytes.Add(float64(len(body)))
	if err != nil {
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	if int64(len(body)) > s.cfg.MaxBody {
		return nil, fmt.Errorf("answer larger than %d bytes: cut off", s.cfg.MaxBody)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		msg := ""
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			msg = ": " + truncate(e.Error, 200)
		}
		return nil, fmt.Errorf("answered %s%s", resp.Status, msg)
	}
	var p page
	if err := json.Unmarshal(body, &p.AuditReplicaPage); err != nil {
		return nil, fmt.Errorf("answer is not an audit replica page: %w", err)
	}
	if err := p.check(after, s.cfg.PageSize); err != nil {
		return nil, fmt.Errorf("answer refused: %w", err)
	}
	return &p, nil
}

// check validates a page read after cursor after, and keeps its rows: a
// store id, rows in increasing local id order after the cursor and at
// most the head, at most limit of them, each with an identity, an origin,
// a time and fields within bounds. One bad row refuses the page, so that
// nothing of a garbled answer is written.
func (p *page) check(after int64, limit int) error {
	if !storePattern.MatchString(p.Store) {
		return fmt.Errorf("store %q is not a database id", truncate(p.Store, 40))
	}
	if len(p.Items) > limit {
		return fmt.Errorf("%d rows, more than the %d asked for", len(p.Items), limit)
	}
	if p.Head < 0 {
		return fmt.Errorf("head %d is negative", p.Head)
	}
	for _, w := range p.Writers {
		if err := checkField("writer", w, maxField, true); err != nil {
			return err
		}
	}
	p.rows = make([]db.ReplicaRow, 0, len(p.Items))
	last := after
	for i := range p.Items {
		it := &p.Items[i]
		if it.ID <= last {
			return fmt.Errorf("items[%d].id %d: not after %d", i, it.ID, last)
		}
		if it.ID > p.Head {
			return fmt.Errorf("items[%d].id %d: after the head %d", i, it.ID, p.Head)
		}
		last = it.ID
		if err := checkEntry(it); err != nil {
			return fmt.Errorf("items[%d]: %w", i, err)
		}
		p.rows = append(p.rows, db.ReplicaRow{OriginID: it.OriginID, AuditEntry: db.AuditEntry{
			ID: it.ID, Time: it.Time, Instance: it.Instance, Controller: it.Controller, Rule: it.Rule,
			Action: it.Action, Target: it.Target, Facts: it.Facts, Reason: it.Reason, DryRun: it.DryRun,
			Outcome: it.Outcome, Error: it.Error}})
	}
	return nil
}

// last is the local id of the page's last row, or after when it has none.
func (p *page) last(after int64) int64 {
	if n := len(p.Items); n > 0 {
		return p.Items[n-1].ID
	}
	return after
}

// checkEntry validates one row.
func checkEntry(it *api.AuditReplicaEntry) error {
	if it.OriginID < 1 {
		return fmt.Errorf("originId %d: want 1 or more", it.OriginID)
	}
	if it.Time.IsZero() {
		return errors.New("time: missing")
	}
	for _, f := range []struct {
		name, v  string
		required bool
	}{
		{"instance", it.Instance, true}, {"controller", string(it.Controller), true},
		{"action", string(it.Action), true}, {"outcome", string(it.Outcome), true},
		{"rule", it.Rule, false}, {"target.apiVersion", it.Target.APIVersion, false},
		{"target.kind", it.Target.Kind, false}, {"target.namespace", it.Target.Namespace, false},
		{"target.name", it.Target.Name, false}, {"target.uid", it.Target.UID, false},
	} {
		if err := checkField(f.name, f.v, maxField, f.required); err != nil {
			return err
		}
	}
	if err := checkField("reason", it.Reason, maxText, false); err != nil {
		return err
	}
	if err := checkField("error", it.Error, maxText, false); err != nil {
		return err
	}
	if len(it.Facts) > maxFacts {
		return fmt.Errorf("facts: %d bytes, more than %d", len(it.Facts), maxFacts)
	}
	switch facts := strings.TrimSpace(string(it.Facts)); {
	case facts == "" || facts == "null":
		it.Facts = nil
	case facts[0] != '{' && facts[0] != '[':
		return errors.New("facts: not a JSON object or array")
	}
	return nil
}

// checkField refuses a value that is missing when required, longer than
// max, not UTF-8 or holds a control character.
func checkField(name, v string, max int, required bool) error {
	switch {
	case required && v == "":
		return fmt.Errorf("%s: missing", name)
	case len(v) > max:
		return fmt.Errorf("%s: %d bytes, more than %d", name, len(v), max)
	case !utf8.ValidString(v):
		return fmt.Errorf("%s: not UTF-8", name)
	}
	if max == maxField && strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fmt.Errorf("%s: holds a control character", name)
	}
	return nil
}

// truncate cuts s to n bytes, for a message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// backoff is the wait before the next read of a peer that failed n times
// in a row: from base, doubling, at most maxBackoff.
func backoff(base time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

// maxBackoff is the longest wait between two reads of a failing peer.
const maxBackoff = 30 * time.Second
