package db

import (
	"context"
	"fmt"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
)

// DeletionMinute counts the deletions the controllers recorded in one
// minute: sent to the cluster (Applied) or, in dry-run, decided (DryRun).
type DeletionMinute struct {
	Minute  time.Time
	Applied int
	DryRun  int
}

// DeletionsPerMinute returns the deletions recorded since since, per minute
// that has any, oldest first. It groups in SQL over the audit_by_time index,
// so that a day of deletions is one row per minute, not per deletion.
func (d Decisions) DeletionsPerMinute(ctx context.Context, since time.Time) ([]DeletionMinute, error) {
	// time is "2006-01-02T15:04:05.000000Z": its first 16 bytes name the minute.
	rows, err := d.query(ctx, `SELECT substr(time, 1, 16), sum(dry_run = 0), sum(dry_run <> 0) FROM audit
		WHERE time >= ? AND action = 'delete' AND outcome IN (?, ?) AND controller NOT IN (?, ?)
		GROUP BY 1 ORDER BY 1`, formatTime(&since), api.OutcomeApplied, api.OutcomeDryRun, api.ControllerKubegcd, api.ControllerOperator)
	if err != nil {
		return nil, fmt.Errorf("deletions per minute: %w", err)
	}
	defer rows.Close()
	var out []DeletionMinute
	for rows.Next() {
		var m DeletionMinute
		var minute string
		if err := rows.Scan(&minute, &m.Applied, &m.DryRun); err != nil {
			return nil, fmt.Errorf("deletions per minute: %w", err)
		}
		if m.Minute, err = time.Parse("2006-01-02T15:04", minute); err != nil {
			return nil, fmt.Errorf("deletions per minute: %w", err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("deletions per minute: %w", err)
	}
	return out, nil
}

// PendingByController counts the pending decisions of each controller that
// has any, from the pending table's primary key.
func (d Decisions) PendingByController(ctx context.Context) (map[string]int, error) {
	rows, err := d.query(ctx, `SELECT controller, count(*) FROM pending GROUP BY controller`)
	if err != nil {
		return nil, fmt.Errorf("pending by controller: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var c string
		var n int
		if err := rows.Scan(&c, &n); err != nil {
			return nil, fmt.Errorf("pending by controller: %w", err)
		}
		out[c] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pending by controller: %w", err)
	}
	return out, nil
}
