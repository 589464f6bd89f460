package db

import (
	"context"
	"fmt"

	"github.com/kubegcd/kubegcd/internal/api"
)

// identityLease matches, for a server id in column col, the kube-apiserver
// identity Lease of that name in kube-system.
const identityLease = `SELECT 1 FROM objects lo JOIN leases l ON l.uid = lo.uid
	WHERE lo.kind = 'Lease' AND lo.namespace = 'kube-system' AND lo.name = %s
		AND l.identity_label = 'kube-apiserver'`

// entryLease matches the identity Lease of e.api_server_id.
var entryLease = fmt.Sprintf(identityLease, "e.api_server_id")

// ServersWithoutLease returns the API server ids that StorageVersion entries
// name and that have no identity Lease in the mirror.
func (d SVGC) ServersWithoutLease(ctx context.Context) ([]string, error) {
	return d.strings(ctx, "servers without a lease", `SELECT DISTINCT e.api_server_id FROM storage_version_entries e
		WHERE NOT EXISTS (`+entryLease+`) ORDER BY 1`)
}

// StorageVersionsOf returns the names of the StorageVersions with an entry
// of server id.
func (d SVGC) StorageVersionsOf(ctx context.Context, serverID string) ([]string, error) {
	return d.strings(ctx, "storage versions of "+serverID, `SELECT o.name
		FROM storage_version_entries e JOIN objects o ON o.uid = e.uid
		WHERE e.api_server_id = ? ORDER BY o.name`, serverID)
}

// StorageVersionsWithoutLease returns the StorageVersions with an entry of
// a server that has no identity Lease in the mirror, by name.
func (d SVGC) StorageVersionsWithoutLease(ctx context.Context) ([]api.Target, error) {
	rows, err := d.query(ctx, `SELECT o.uid, o.api_version, o.kind, o.name FROM objects o
		WHERE o.uid IN (SELECT e.uid FROM storage_version_entries e WHERE NOT EXISTS (`+entryLease+`))
		ORDER BY o.name`)
	if err != nil {
		return nil, fmt.Errorf("storage versions with entries of servers without a lease: %w", err)
	}
	defer rows.Close()
	var out []api.Target
	for rows.Next() {
		var t api.Target
		if err := rows.Scan(&t.UID, &t.APIVersion, &t.Kind, &t.Name); err != nil {
			return nil, fmt.Errorf("storage versions with entries of servers without a lease: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}
