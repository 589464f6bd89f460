package db

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// Queries of the lease inventory.

// LeaseRow is one Lease of the mirror, as the cluster holds it. The
// diagnosis tells its role and expiry (diagnose.ClassifyLeases).
type LeaseRow struct {
	Namespace            string
	Name                 string
	UID                  string
	HolderIdentity       *string
	LeaseDurationSeconds *int32
	AcquireTime          *time.Time
	RenewTime            *time.Time
	LeaseTransitions     *int32
	// IdentityLabel is the value of its apiserver.kubernetes.io/identity
	// label, "" when none.
	IdentityLabel string
	// Strategy and PreferredHolder are set under coordinated leader
	// election.
	Strategy        *string
	PreferredHolder *string
}

// LeaseFilter selects Leases. Zero fields match everything.
type LeaseFilter struct {
	Namespace string
	Name      string
}

// Leases returns the Leases of the mirror, by namespace and name.
func (d Objects) Leases(ctx context.Context, f LeaseFilter) ([]LeaseRow, error) {
	where := []string{`o.kind = 'Lease' AND o.api_version = 'coordination.k8s.io/v1'`}
	var args []any
	for _, c := range []struct{ col, v string }{{"o.namespace", f.Namespace}, {"o.name", f.Name}} {
		if c.v != "" {
			where = append(where, c.col+" = ?")
			args = append(args, c.v)
		}
	}
	rows, err := d.query(ctx, `SELECT o.namespace, o.name, o.uid, l.holder_identity, l.lease_duration_seconds,
			l.acquire_time, l.renew_time, l.lease_transitions, coalesce(l.identity_label, ''), l.strategy,
			l.preferred_holder
		FROM leases l JOIN objects o ON o.uid = l.uid WHERE `+strings.Join(where, " AND ")+`
		ORDER BY o.namespace, o.name`, args...)
	if err != nil {
		return nil, fmt.Errorf("leases: %w", err)
	}
	defer rows.Close()
	out := []LeaseRow{}
	for rows.Next() {
		var l LeaseRow
		var holder, acquire, renew, strategy, preferred sql.NullString
		var duration, transitions sql.NullInt64
		if err := rows.Scan(&l.Namespace, &l.Name, &l.UID, &holder, &duration, &acquire, &renew, &transitions,
			&l.IdentityLabel, &strategy, &preferred); err != nil {
			return nil, fmt.Errorf("leases: %w", err)
		}
		if holder.Valid {
			l.HolderIdentity = &holder.String
		}
		if duration.Valid {
			v := int32(duration.Int64)
			l.LeaseDurationSeconds = &v
		}
		if transitions.Valid {
			v := int32(transitions.Int64)
			l.LeaseTransitions = &v
		}
		l.AcquireTime, l.RenewTime = parseTime(acquire), parseTime(renew)
		l.Strategy, l.PreferredHolder = nullString(strategy), nullString(preferred)
		out = append(out, l)
	}
	return out, rows.Err()
}

// LeaseCandidateRow is one LeaseCandidate of the mirror, as the cluster
// holds it.
type LeaseCandidateRow struct {
	Namespace       string
	Name            string
	UID             string
	ResourceVersion string
	Created         *time.Time
	// Deleting: a deletion of the candidate was requested.
	Deleting bool
	LeaseCandidate
}

// LeaseCandidateFilter selects LeaseCandidates. Zero fields match
// everything.
type LeaseCandidateFilter struct {
	Namespace string
	// LeaseName: only the candidates for this Lease.
	LeaseName string
}

// LeaseCandidates returns the LeaseCandidates of the mirror, by
// namespace, Lease and name.
func (d Objects) LeaseCandidates(ctx context.Context, f LeaseCandidateFilter) ([]LeaseCandidateRow, error) {
	where := []string{"1 = 1"}
	var args []any
	for _, c := range []struct{ col, v string }{{"o.namespace", f.Namespace}, {"c.lease_name", f.LeaseName}} {
		if c.v != "" {
			where = append(where, c.col+" = ?")
			args = append(args, c.v)
		}
	}
	order := " ORDER BY o.namespace, c.lease_name, o.name"
	return d.leaseCandidates(ctx, strings.Join(where, " AND ")+order, args...)
}

// leaseCandidates reads the candidates that where selects, in its order.
// where is SQL over o, the objects row, and c, the lease_candidates row.
func (d *core) leaseCandidates(ctx context.Context, where string, args ...any) ([]LeaseCandidateRow, error) {
	rows, err := d.query(ctx, `SELECT o.namespace, o.name, o.uid, o.resource_version, o.creation_timestamp,
			o.deletion_timestamp IS NOT NULL, c.lease_name, c.binary_version, c.emulation_version,
			c.strategy, c.ping_time, c.renew_time
		FROM lease_candidates c JOIN objects o ON o.uid = c.uid WHERE `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("lease candidates: %w", err)
	}
	defer rows.Close()
	out := []LeaseCandidateRow{}
	for rows.Next() {
		var r LeaseCandidateRow
		var created, ping, renew sql.NullString
		if err := rows.Scan(&r.Namespace, &r.Name, &r.UID, &r.ResourceVersion, &created, &r.Deleting,
			&r.LeaseName, &r.BinaryVersion, &r.EmulationVersion, &r.Strategy, &ping, &renew); err != nil {
			return nil, fmt.Errorf("lease candidates: %w", err)
		}
		r.Created, r.PingTime, r.RenewTime = parseTime(created), parseTime(ping), parseTime(renew)
		out = append(out, r)
	}
	return out, rows.Err()
}
