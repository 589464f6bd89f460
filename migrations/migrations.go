// Package migrations holds the SQLite schema migrations, embedded so the
// binary carries its own schema.
package migrations

import "embed"

// FS holds NNNN_name.up.sql / NNNN_name.down.sql in golang-migrate's layout.
//
//go:embed *.sql
var FS embed.FS
