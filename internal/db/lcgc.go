package db

import (
	"context"
	"time"
)

// ExpiredLeaseCandidates returns the LeaseCandidates of the mirror not
// being deleted whose renewTime is unset or before renewedBefore, by
// namespace and name. The two terms each search the renew_time index; the
// join reads the objects by primary key.
func (d LCGC) ExpiredLeaseCandidates(ctx context.Context, renewedBefore time.Time) ([]LeaseCandidateRow, error) {
	return d.leaseCandidates(ctx, expiredCandidates, formatTime(&renewedBefore))
}

// expiredCandidates selects, over c (lease_candidates) and o (objects),
// the candidates ExpiredLeaseCandidates returns, in its order.
const expiredCandidates = `(c.renew_time IS NULL OR c.renew_time < ?) AND o.deletion_timestamp IS NULL
	ORDER BY o.namespace, o.name`
