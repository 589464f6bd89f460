package http

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

// AuditReplicas is what the server reads to serve its audit rows to peers
// and to show the gaps in its history; db.Decisions is one.
type AuditReplicas interface {
	AuditStore(ctx context.Context) (string, error)
	AuditWriters(ctx context.Context) ([]string, error)
	ReplicaPage(ctx context.Context, after int64, limit int) ([]db.ReplicaRow, db.AuditHead, error)
	AuditGaps(ctx context.Context) ([]db.AuditGap, error)
}

// AuditPeers is what /status shows of audit sharing.
type AuditPeers interface {
	AdvertiseURL() string
	Peers() []api.AuditPeerStatus
}

// auditReplicate serves GET /audit/replicate: the rows after a cursor, for
// a peer. Authentication is the API's: a peer without its credentials
// gets a 401 and no row.
func (s *server) auditReplicate(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r)
	var after int64
	if v := q.str("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || n > int64(q.param("after").Max) {
			q.fail("invalid after %q: want a row id from 0 to %d", v, q.param("after").Max)
		}
		after = n
	}
	limit := q.limit()
	if q.err != nil {
		writeError(w, r, http.StatusBadRequest, q.err.Error())
		return
	}
	if s.AuditReplicas == nil {
		writeError(w, r, http.StatusServiceUnavailable, "this instance shares no audit rows")
		return
	}
	ctx := r.Context()
	var out api.AuditReplicaPage
	err := func() error {
		rows, head, err := s.AuditReplicas.ReplicaPage(ctx, after, limit)
		if err != nil {
			return err
		}
		if out.Store, err = s.AuditReplicas.AuditStore(ctx); err != nil {
			return err
		}
		if out.Writers, err = s.AuditReplicas.AuditWriters(ctx); err != nil {
			return err
		}
		out.Items = make([]api.AuditReplicaEntry, len(rows))
		for i := range rows {
			out.Items[i] = api.AuditReplicaEntry{AuditEntry: rows[i].AuditEntry.API(),
				OriginID: rows[i].OriginID}
		}
		out.Head = head.ID
		if head.ID > 0 {
			t := head.Time.UTC()
			out.HeadTime = &t
		}
		return nil
	}()
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	if out.Writers == nil {
		out.Writers = []string{}
	}
	if s.Leader != nil {
		out.Instance = s.Leader.Status(ctx).Identity
	}
	writeJSON(w, r, http.StatusOK, out)
}

// auditGaps returns the gaps in the history, as the API shows them; nil
// when there are none or the server shares no audit rows.
func (s *server) auditGaps(ctx context.Context) ([]api.AuditGap, error) {
	if s.AuditReplicas == nil {
		return nil, nil
	}
	gaps, err := s.AuditReplicas.AuditGaps(ctx)
	if err != nil || len(gaps) == 0 {
		return nil, err
	}
	out := make([]api.AuditGap, len(gaps))
	for i, g := range gaps {
		out[i] = AuditGapOf(g)
	}
	return out, nil
}

// AuditGapOf maps a gap to the API, with its sentence.
func AuditGapOf(g db.AuditGap) api.AuditGap {
	before := g.Before.UTC()
	msg := fmt.Sprintf("history before %s from instance %s may be incomplete", before.Format(time.RFC3339),
		g.Instance)
	var since *time.Time
	if g.Since != nil {
		t := g.Since.UTC()
		since = &t
		msg = fmt.Sprintf("rows of instance %s between %s and %s may be missing", g.Instance,
			t.Format(time.RFC3339), before.Format(time.RFC3339))
	}
	return api.AuditGap{Instance: g.Instance, Since: since, Before: before, RecordedBy: g.RecordedBy, Message: msg}
}

// auditPeersStatus is /status's auditPeers: nil when this instance shares
// no audit rows.
func (s *server) auditPeersStatus(ctx context.Context) (*api.AuditPeersStatus, error) {
	if s.AuditPeers == nil {
		return nil, nil
	}
	st := &api.AuditPeersStatus{AdvertiseURL: s.AuditPeers.AdvertiseURL(), Peers: s.AuditPeers.Peers()}
	if st.Peers == nil {
		st.Peers = []api.AuditPeerStatus{}
	}
	var err error
	st.Gaps, err = s.auditGaps(ctx)
	return st, err
}
